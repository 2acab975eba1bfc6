"""The course site in a real browser, offline (issue 34; CONTRACT.md, `microtensor course`): the
README's example through `microtensorRun`, every section's cell, a graph drawn as SVG by
viz.js, the tiny GPT trained in a worker with CPython's losses, an exercise's checks. One page
serves them all (tests/course_site/conftest.py); no request may leave 127.0.0.1.
"""
import numpy as np
import pytest

from models.course.cells import SECTIONS
from models.course.runtime import train_tiny_gpt

README_EXAMPLE = """\
from microtensor import Tensor
x = Tensor([[1., 2., 3.], [4., 5., 6.]], requires_grad=True)
w = Tensor([1., 1., 2.], requires_grad=True)
(x * w).sum().backward()
print(w.grad)
"""

SOFTMAX_BACKWARD = """
import numpy as np
def softmax_backward(a, da, axis=-1):
    return a * (da - (a * da).sum(axis=axis, keepdims=True))
"""


def test_microtensor_run_prints_the_readme_gradient_5_7_9(course):
    text = course.page.evaluate("code => window.microtensorRun(code)", README_EXAMPLE)
    assert text == "[5. 7. 9.]\n", f"expected w.grad printed as [5. 7. 9.]; got {text!r}"
    assert course.outside == [], f"requests left 127.0.0.1: {course.outside}"


def test_microtensor_run_returns_a_traceback_on_stderr_after_stdout(course):
    text = course.page.evaluate("code => window.microtensorRun(code)", "print('before')\n1/0")
    assert text.startswith("before\nTraceback") and "ZeroDivisionError" in text, \
        f"expected stdout then the traceback; got {text!r}"


@pytest.mark.parametrize("section", SECTIONS, ids=[s["id"] for s in SECTIONS])
def test_each_section_cell_runs_in_the_tab_and_prints_its_checks(course, section):
    page, card = course.page, f"[data-section='{section['id']}']"
    page.click(f"{card} button:text('Run')")
    page.wait_for_selector(f"{card}[data-done]")
    text = page.text_content(f"{card} pre.output")
    assert page.get_attribute(card, "data-done") == "ok", f"{section['id']} failed:\n{text}"
    missing = [e for e in section["expect"] if e not in text]
    assert not missing, f"{section['id']}: expected {missing} in the output; got:\n{text}"
    assert course.outside == [], f"requests left 127.0.0.1: {course.outside}"


def test_the_readme_cell_draws_its_graph_as_svg_with_viz_js(course):
    page = course.page
    page.click("[data-section='readme'] button:text('Run')")
    page.wait_for_selector("[data-section='readme'][data-done] svg.graph")
    labels = page.locator("[data-section='readme'] svg.graph text").all_text_contents()
    assert any("sum" in t for t in labels) and any("mul" in t for t in labels), \
        f"expected the graph's mul and sum nodes as SVG text; got {labels}"


def test_attention_heatmap_of_3_3_greys_exactly_the_blocked_keys(course):
    page = course.page
    page.click("[data-section='3.3'] button:text('Run')")
    page.wait_for_selector("[data-section='3.3'][data-done] svg.heatmap")
    fills = page.locator("[data-section='3.3'] svg.heatmap rect").evaluate_all(
        "rs => rs.map(r => r.getAttribute('fill'))")
    grey = np.array([f == "rgb(217,217,217)" for f in fills]).reshape(5, 5)
    assert (grey == np.triu(np.ones((5, 5), bool), 1)).all(), \
        f"expected grey cells above the diagonal (the causal mask); got\n{grey.astype(int)}"


def test_tiny_gpt_trained_in_a_worker_has_cpythons_losses_and_sample(course):
    steps = 4
    tab = course.page.evaluate("n => window.microtensorTrainTinyGPT(n, 0)", steps)
    _, _, here = train_tiny_gpt(steps, seed=0)
    np.testing.assert_allclose(tab["losses"], here, rtol=0, atol=1e-6,
                               err_msg="the tab's losses differ from CPython's (same seed)")
    assert here[-1] < here[0], f"expected the loss to fall over {steps} steps; got {here}"
    assert len(tab["sample"]) > len("The "), f"expected sampled text; got {tab['sample']!r}"
    assert course.outside == [], f"requests left 127.0.0.1: {course.outside}"


def test_explorer_opens_on_the_model_trained_in_the_tab_laid_out_by_viz_js(course):
    page = course.page
    page.evaluate("() => window.microtensorTrainTinyGPT(2, 0)")
    result = page.evaluate("() => window.microtensorExploreTinyGPT()")
    html = result["html"]
    assert "Written by microtensor's viz.explore" in html and "<svg" in html, \
        f"expected viz.explore's page with SVG pictures; got {html[:200]!r}"
    address = page.get_attribute("#gpt-explorer-link", "href")
    explorer = page.context.new_page()
    errors = []
    explorer.on("pageerror", lambda error: errors.append(error))
    explorer.goto(address)
    explorer.wait_for_selector("svg")
    boxes = explorer.locator("svg g.node").count()
    explorer.close()
    assert boxes > 5 and not errors, f"expected the step's graph drawn; {boxes} boxes, {errors}"
    assert course.outside == [], f"requests left 127.0.0.1: {course.outside}"


def _check(page, number, source):
    page.select_option("#ex-pick", str(number))
    page.evaluate("src => { document.getElementById('ex-code').value = src; "
                  "delete document.getElementById('exercises').dataset.checked; }", source)
    page.click("#ex-check")
    page.wait_for_function("document.getElementById('exercises').dataset.checked !== undefined")
    return page.text_content("#ex-output")


def test_exercise_3_checks_report_not_started_wrong_and_right_answers(course):
    page = course.page
    stub = _check(page, 3, page.evaluate(
        "document.getElementById('ex-pick').value = '3'; "
        "document.getElementById('ex-pick').dispatchEvent(new Event('change')); "
        "document.getElementById('ex-code').value"))
    assert "not started" in stub and "0/4 checks passed" in stub, stub
    assert "replace the line `raise NotImplementedError(...)` in softmax_backward" in stub, stub
    wrong = _check(page, 3, SOFTMAX_BACKWARD.replace(
        "a * (da - (a * da).sum(axis=axis, keepdims=True))", "a * da"))
    hints = page.evaluate("() => [document.getElementById('ex-hint').open, "
                          "document.querySelector('#ex-hint pre').textContent, "
                          "document.getElementById('ex-code').value]")
    assert "✗" in wrong and "Hint" not in wrong and "hint:" not in wrong, \
        f"expected failed checks, their hint in the Hint box only; got:\n{wrong}"
    assert hints[0] and "subtract the row's" in hints[1], f"expected the Hint box open: {hints[:2]}"
    right = _check(page, 3, SOFTMAX_BACKWARD)
    assert "4/4 checks passed" in right, f"expected all 4 checks to pass; got:\n{right}"


def test_changing_3_3s_size_relabels_its_heatmap_and_graphs_fit_the_page(course):
    page, card = course.page, "[data-section='3.3']"
    page.fill(f"{card} textarea", next(s["code"] for s in SECTIONS if s["id"] == "3.3")
              .replace("T, d = 5,", "T, d = 7,"))
    page.click(f"{card} button:text('Run')")
    page.wait_for_selector(f"{card}[data-done] svg.heatmap")
    labels = page.locator(f"{card} svg.heatmap text").all_text_contents()
    assert labels == [f"t{i}" for i in range(7)] * 2, f"expected t0..t6 on both axes; {labels}"
    page.click("[data-section='3.5'] button:text('Run')")
    page.wait_for_selector("[data-section='3.5'][data-done] svg.graph")
    cut = page.locator("[data-section='3.5'] .graph-box").evaluate(
        "b => [b.scrollWidth - b.clientWidth, b.scrollHeight - b.clientHeight]")
    assert cut == [0, 0], f"expected 3.5's graph whole in its box at 1366×768; cut by {cut} px"


def test_the_load_names_its_steps_and_the_exercise_editor_opens_numbered_on_the_function(course):
    page = course.page
    steps = [s["step"].split()[0] for s in page.evaluate("window.microtensorLoadLog")]
    assert steps == ["Pyodide", "numpy", "microtensor"], f"expected the 3 load steps; {steps}"
    page.select_option("#ex-pick", "1")
    page.select_option("#ex-pick", "3")
    top, caret = page.evaluate("() => { const e = document.getElementById('ex-code'); "
                               "return [e.scrollTop, e.value.slice(e.selectionStart, "
                               "e.selectionStart + 25)]; }")
    assert top > 0 and caret == "raise NotImplementedError", \
        f"expected the editor scrolled to softmax_backward's body; scrollTop {top}, {caret!r}"
    lines, numbers = page.evaluate("() => [document.getElementById('ex-code').value.split('\\n')"
                                   ".length, document.querySelector('#exercises pre.gutter')"
                                   ".textContent.split('\\n')]")
    assert numbers == [str(i) for i in range(1, lines + 1)], \
        f"expected a gutter numbering the editor's {lines} lines; got {numbers[-3:]}"


def test_a_cell_shows_running_and_yields_a_frame_before_python_holds_the_thread(course):
    seen = course.page.evaluate("""() => new Promise((resolve) => {
      const card = document.querySelector("[data-section='3.2']"), seen = [];
      const watch = new MutationObserver(() => {
        seen.push(card.classList.contains("running") ? "running" : "idle");
        if (card.dataset.done) { watch.disconnect(); resolve(seen.slice()); }
      });
      watch.observe(card, { attributes: true, subtree: true, childList: true });
      requestAnimationFrame(() => seen.push("frame"));
      card.querySelector("button").click();
    })""")
    first_run = seen.index("running")
    assert "frame" in seen[first_run:] and seen[-1] == "idle", \
        f"expected the running state, a painted frame, then idle; got {seen}"
