"""The explorer page in a real browser: headless Chromium (Debian's `chromium`) driven by Playwright
opens it without a console error, steps in the engine's order with backward()'s gradient
norms, shows a clicked node's shape, opens a folded block and toggles lecture mode.

CI installs Playwright (the `browser` extra) and chromium; tests/conftest.py fails a CI run
that skips these for want of either.
"""

import numpy as np
import pytest
from mt_testing import needs_dot

import viz
from viz.style import fmt_number

sync_api = pytest.importorskip("playwright.sync_api")
pytestmark = needs_dot


@pytest.fixture(scope="module")
def explored(tmp_path_factory):
    """(path, loss's trace keys, the model, the engine's forward and backward order): a 2-block
    GPT's step written at depth 1."""
    from microtensor import hooks, manual_seed
    from models import GPT, GPTConfig

    manual_seed(0)
    model = GPT(GPTConfig(vocab_size=11, block_size=8, n_layer=2, n_head=2, n_embd=8))
    x = np.random.default_rng(0).integers(0, 11, (2, 8))
    forward, backward = [], []

    def on_forward(fn, inputs, output):
        if output.grad_fn is fn:
            forward.append(id(fn))

    with viz.record_steps(), hooks.register_forward_hook(on_forward), \
            hooks.register_backward_hook(lambda fn, *_: backward.append(id(fn))):
        _, loss = model(x, x)
        loss.backward()
    path = tmp_path_factory.mktemp("explorer") / "gpt.html"
    viz.explore(loss, path, depth=1)
    keys = list(viz.trace(loss)[0])
    return path, keys, model, forward, backward


@pytest.fixture
def page(browser, explored):
    """The page opened at 1920 x 1080; `page.errors` collects console errors."""
    page = browser.new_page(viewport={"width": 1920, "height": 1080})
    page.errors = []
    page.on("console", lambda m: page.errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: page.errors.append(str(e)))
    page.goto(explored[0].as_uri())
    page.wait_for_selector("body[data-ready='1']", timeout=10_000)
    yield page
    page.close()


def lit_node(page):
    """(the node index the page says it is at, the nodes its lit box stands for)."""
    node = page.evaluate("document.body.dataset.stepNode")
    box = page.locator("g.node.mt-current title").text_content().strip()
    view = page.evaluate("""(box) => {
        const data = JSON.parse(document.getElementById('mt-data').textContent);
        return data.views[0].boxes[box]; }""", box)
    return int(node), view


def test_the_page_opens_without_a_console_error(page):
    assert page.locator("#graph svg g.node").count() > 3
    assert page.errors == [], f"console errors: {page.errors}"


@pytest.mark.parametrize("n", [1, 9, "first backward", "last"])
def test_stepping_n_times_lights_the_engines_nth_node(page, explored, n):
    _, keys, _, forward, backward = explored
    order = forward + backward
    n = {"first backward": len(forward) + 1, "last": len(order)}.get(n, n)
    for _ in range(n):
        page.keyboard.press("ArrowRight")
    node, members = lit_node(page)
    assert keys[node] == order[n - 1], f"step {n} lit node {node}, the engine's was another"
    assert node in members, f"the lit box stands for {members}, not for node {node}"
    assert page.errors == []


def test_a_backward_step_shows_backwards_gradient_norm(page, explored):
    _, keys, model, forward, backward = explored
    params = dict(model.named_parameters())
    # the step at which backward() reached the final LayerNorm's weight: its .grad is complete
    (step,) = [k for k, key in enumerate(backward) if page.evaluate(
        f"JSON.parse(document.getElementById('mt-data').textContent).nodes[{keys.index(key)}]"
        ".name") == "ln_f.weight"]
    page.keyboard.press("End")
    for _ in range(len(backward) - 1 - step):
        page.keyboard.press("ArrowLeft")
    text = page.inner_text("#step-text")
    expected = fmt_number(float(np.linalg.norm(params["ln_f.weight"].grad)))
    assert "ln_f.weight" in text and f"‖g‖ = {expected}" in text, (text, expected)
    assert f"norm {expected}" in page.inner_text("#panel")


def test_clicking_a_node_shows_its_shape(page):
    page.locator("#graph g.node", has_text="ln_f").first.click()  # a module box: opens it
    page.locator("#graph g.node", has_text="layer_norm").first.click()
    panel = page.inner_text("#panel")
    assert "layer_norm" in panel and "[2, 8, 8]" in panel, panel
    assert "∂L/∂x = r · (ĝ − mean(ĝ)" in panel, "the backward formula from LayerNorm's docstring"


def test_a_folded_block_opens_on_a_click(page):
    before = page.locator("#graph g.node").count()
    page.locator("#graph g.node", has_text="TransformerBlock ×2").click()
    assert "unfolded" in page.inner_text("#crumbs")
    assert page.locator("#graph g.node", has_text="blocks.1").count() == 1
    page.locator("#graph g.node", has_text="blocks.1").click()
    assert "blocks.1 · every op" in page.inner_text("#crumbs")
    assert page.locator("#graph g.node").count() > before
    page.keyboard.press("u")  # back out, by keyboard
    assert "unfolded" in page.inner_text("#crumbs").split("▸")[-1]
    assert page.errors == []


def test_lecture_mode_toggles_with_large_text(page):
    size = "parseFloat(getComputedStyle(document.getElementById('step-text')).fontSize)"
    assert page.evaluate(size) < 18
    page.keyboard.press("l")
    assert page.evaluate("document.body.classList.contains('lecture')")
    assert page.evaluate(size) >= 18, "lecture text must read from the back of a room"
    page.keyboard.press("ArrowRight")
    assert page.evaluate("document.body.dataset.stepNode") != "", "keys still step in lecture mode"
    page.keyboard.press("Escape")
    assert not page.evaluate("document.body.classList.contains('lecture')")
    assert page.errors == []


def test_a_step_outside_the_opened_module_follows_into_the_picture_that_draws_it(page, explored):
    _, keys, _, forward, _ = explored
    page.locator("#graph g.node", has_text="TransformerBlock ×2").click()
    page.locator("#graph g.node", has_text="blocks.1").click()  # open blocks.1 ...
    first_in_block0 = next(k for k, key in enumerate(forward) if page.evaluate(
        "i => JSON.parse(document.getElementById('mt-data').textContent).nodes[i].module",
        keys.index(key)).startswith("blocks.0"))
    for _ in range(first_in_block0 + 1):  # ... and step to the first op of blocks.0
        page.keyboard.press("ArrowRight")
    assert page.inner_text("#crumbs").split("▸")[-1].strip() == "blocks.0 · every op"
    assert page.locator("g.node.mt-current").count() == 1
    # the panel's step link jumps the stepper to that node's backward step
    page.locator("#panel a[data-step]", has_text="backward").click()
    assert "backward" in page.inner_text("#step-text")
    assert page.errors == []


def test_a_backward_step_writes_the_gradient_it_sends_on_the_lit_edge(page, explored):
    _, _, _, forward, _ = explored
    for _ in range(len(forward) + 1):  # the first backward step: the loss's own op
        page.keyboard.press("ArrowRight")
    sent = page.evaluate("""() => {
        const d = JSON.parse(document.getElementById('mt-data').textContent);
        return d.nodes[+document.body.dataset.stepNode].sent; }""")
    assert page.locator("g.edge.mt-on.back").count() >= 1
    assert page.locator("text.mt-label").all_text_contents() == [f"‖g‖ {fmt_number(sent[0])}"]


def step_to(page, explored, pick):
    """Press → until the step is at the first node (in the engine's order) that `pick(node)`
    chooses from the page's node table; returns that node's index."""
    _, keys, _, forward, backward = explored
    nodes = page.evaluate("JSON.parse(document.getElementById('mt-data').textContent).nodes")
    order = [keys.index(k) for k in forward + backward]
    n = next(k for k, i in enumerate(order) if pick(nodes[i]))
    for _ in range(n + 1):
        page.keyboard.press("ArrowRight")
    return order[n]


def test_heatmaps_name_their_axes_and_the_loss_is_a_number(page, explored):
    model = explored[2]
    x = np.random.default_rng(0).integers(0, 11, (2, 8))
    _, loss = model(x, x)  # the same weights and batch as the page's step
    step_to(page, explored, lambda n: n["role"] == "A")
    value = page.inner_text("#panel").split("\nvalue\n")[1]
    assert "rows: query position t (0–7) · columns: key position s (0–7)" in value, value
    page.keyboard.press("Home")
    step_to(page, explored, lambda n: n["op"] == "cross_entropy")
    panel = page.inner_text("#panel")
    assert f"value\n= {fmt_number(float(loss.item()))}" in panel, panel
    assert page.locator("#panel canvas.heat").count() == 0, "a scalar gets no 1 × 1 heatmap"
    page.keyboard.press("Home")
    step_to(page, explored, lambda n: n["name"] == "blocks.0.mlp.fc.weight"
            and n["grad"] is not None)
    grad = page.inner_text("#panel").split("\ngradient\n")[1]
    assert "8 rows × 32 columns" in grad, (
        "fc.weight [8, 32]: its gradient's heatmap keeps every row", grad)
    assert "rows: input feature (0–7) · columns: output feature (0–31)" in grad, grad
    assert page.errors == []


def test_clicking_a_box_too_small_to_read_zooms_to_it(page):
    scale = "document.querySelector('#graph svg').getScreenCTM().a"
    while page.evaluate(scale) >= 0.6:
        page.keyboard.press("-")
    box = page.locator("#graph g.node", has_text="cross_entropy")  # an op, not a module box
    box.click()
    assert page.evaluate(scale) == pytest.approx(1.2, rel=1e-3), "zoomed to 1.2 px per point"
    r, g = box.bounding_box(), page.locator("#graph").bounding_box()
    assert abs(r["x"] + r["width"] / 2 - (g["x"] + g["width"] / 2)) < 2, (r, g)
    assert abs(r["y"] + r["height"] / 2 - (g["y"] + g["height"] / 2)) < 2, (r, g)
    assert page.errors == []
