"""The explorer projected as a teacher would (issue 33), in headless Chromium driven by Playwright:
the jump box gives the keys back and prefers an exact role, attention weights a room can read,
inputs named apart (wte/wpe, skip/branch) with the broadcast sum explained, statistics of the
head shown marked ≈, a saved frame's whole caption above the graph, lecture mode at 1366 × 768,
backward steps opening on the gradient, titles clear of edges, lit edges apart from the gradient
scale, and the docs' recipe that rebuilds a page's step in Python.
"""
import colorsys
import re
from pathlib import Path

import numpy as np
import pytest
from mt_testing import needs_dot

import microtensor as mt
import viz
from viz.compact import decode
from viz.style import _RAMP, fmt_number

sync_api = pytest.importorskip("playwright.sync_api")
pytestmark = needs_dot
DATA = "JSON.parse(document.getElementById('mt-data').textContent)"
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def pages(tmp_path_factory):
    """{name: path}: a 2-block GPT's step (batch 2 × 8) at every op, at depth 1, and its first
    attention layer alone."""
    from models import GPT, GPTConfig

    mt.manual_seed(0)
    folder = tmp_path_factory.mktemp("projected")
    model = GPT(GPTConfig(vocab_size=11, block_size=8, n_layer=2, n_head=2, n_embd=8))
    ids = np.random.default_rng(0).integers(0, 11, (2, 8))
    with viz.record_steps():
        _, loss = model(ids, ids)
        loss.backward()
    out = {}
    for name, options in (("every", {}), ("depth1", {"depth": 1}),
                          ("attn", {"focus": "blocks.0.attn"})):
        out[name] = folder / f"{name}.html"
        viz.explore(loss, out[name], **options)
    return out


@pytest.fixture
def open_page(browser, pages):
    """open_page(name or path, width=1920, height=1080) -> a Playwright page; a console error
    fails the test."""
    opened = []

    def opener(name, width=1920, height=1080, accept_downloads=False):
        context = browser.new_context(viewport={"width": width, "height": height},
                                      accept_downloads=accept_downloads)
        page = context.new_page()
        page.errors = []
        page.on("console", lambda m: page.errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: page.errors.append(str(e)))
        page.goto((pages[name] if name in pages else Path(name)).as_uri())
        page.wait_for_selector("body[data-ready='1']", timeout=10_000)
        opened.append((context, page))
        return page

    yield opener
    for context, page in opened:
        assert page.errors == [], f"console errors: {page.errors}"
        context.close()


def go_to(page, pick, backward=False):
    """Put the stepper (through the address) at the first forward (or backward) step whose node
    `pick` (a JS predicate's source) chooses; returns the node's index."""
    k = page.evaluate(f"""() => {{ const d = {DATA}, f = {pick};
        const order = d.forward.concat(d.backward);
        for (let k = {'d.forward.length' if backward else 0}; k < order.length; k++)
            if (f(d.nodes[order[k]])) return k; }}""")
    name = page.evaluate(f"(k) => k < {DATA}.forward.length ? 'f' + (k + 1) : "
                         f"'b' + (k - {DATA}.forward.length + 1)", k)
    page.evaluate(f"location.hash = '#step={name}'")
    page.wait_for_function("(n) => location.hash === '#step=' + n", arg=name)
    page.wait_for_timeout(50)
    return int(page.evaluate("document.body.dataset.stepNode"))


def step_text(page):
    return page.inner_text("#step-text")


# ---- 1, 2, 11. the jump box ------------------------------------------------------------------

def test_after_a_jump_the_arrow_keys_step_at_once(open_page):
    page = open_page("every")
    page.keyboard.press("/")
    page.keyboard.type("softmax")
    page.keyboard.press("Enter")
    at = step_text(page).split(" /")[0]
    assert at.startswith("forward "), at
    page.keyboard.press("ArrowRight")
    after = step_text(page).split(" /")[0]
    assert after == f"forward {int(at.split()[1]) + 1}", (
        f"→ after the jump should step from {at!r}; the page is at {after!r}")
    page.keyboard.press("ArrowLeft")
    assert step_text(page).split(" /")[0] == at, "← steps back"


@pytest.mark.parametrize("role", ["A", "S"])
def test_jumping_to_a_role_lands_on_the_node_of_that_role(open_page, role):
    page = open_page("every")
    page.keyboard.press("/")
    page.keyboard.type(role)
    page.keyboard.press("Enter")
    node = page.evaluate(f"{DATA}.nodes[+document.body.dataset.stepNode]")
    assert node["role"] == role, (
        f"jump {role!r}: expected the node whose role is {role}, got {node['op']} ({node['role']})")
    assert "1 of 2 exact" in page.inner_text("#jump-info"), page.inner_text("#jump-info")
    page.keyboard.press("Enter")  # Enter again (the box gave the keys back): the next block's
    second = page.evaluate(f"{DATA}.nodes[+document.body.dataset.stepNode]")
    assert second["role"] == role and second["module"] != node["module"], second


def test_the_jump_box_names_the_valid_steps_for_one_the_page_lacks(open_page):
    page = open_page("every")
    n_fwd, n_bwd = page.evaluate(f"[{DATA}.forward.length, {DATA}.backward.length]")
    page.locator("#jump").fill("f99")
    page.locator("#jump").press("Enter")
    info = page.inner_text("#jump-info")
    assert f"this page has f1–f{n_fwd} and b1–b{n_bwd}" in info and "f99" in info, info


# ---- 3. attention weights a room can read ----------------------------------------------------

def test_attention_weights_are_coloured_per_row_so_each_rows_largest_is_dark(open_page):
    page = open_page("attn")
    i = go_to(page, "(n) => n.role === 'A'")
    heat = page.evaluate(f"{DATA}.nodes[{i}].value.heat")
    a = decode(heat)[0]  # head 0, batch row 0: [T, T]
    T = a.shape[0]
    dark = page.evaluate("""(T) => {
        const c = document.querySelector('#panel canvas.heat'), ctx = c.getContext('2d');
        const kx = c.width / T, ky = c.height / T, out = [];
        for (let r = 0; r < T; r++) { const row = [];
            for (let q = 0; q < T; q++) {
                const x = Math.floor(q * kx + kx / 2) + 1, y = Math.floor(r * ky + ky / 2);
                const d = ctx.getImageData(x, y, 1, 1).data;
                row.push(d[0] + d[1] + d[2]); }
            out.push(row); }
        return out; }""", T)
    for r in range(T):
        q = int(np.argmax(a[r, :r + 1]))
        assert dark[r][q] < 300, (
            f"row {r}: its largest weight {a[r, q]:.3f} should be drawn dark (per-row scale); "
            f"its pixel sums to {dark[r][q]} of 765")
    legend = page.locator("#panel .hint", has_text="per row").first.inner_text()
    assert "its own largest weight" in legend, legend
    assert "the row's largest" in page.locator("#panel .colour-key").first.inner_text()


# ---- 4, 10. inputs named apart, the broadcast sum, skip and branch -----------------------------

def test_the_embedding_adds_backward_names_wte_and_wpe_and_the_batch_sum(open_page):
    page = open_page("every")
    i = go_to(page, "(n) => n.op === 'add' && n.module === '' && n.inputs.length === 2",
              backward=True)
    sent = page.evaluate(f"{DATA}.nodes[{i}].sent")
    text = step_text(page)
    assert (f"‖g‖ {fmt_number(sent[0])} to embedding in wte, ‖g‖ {fmt_number(sent[1])} to "
            "embedding in wpe") in text, text
    assert "copied for each of the batch's 2 rows" in text and "summed over the batch" in text, text
    assert "summed over the batch" in page.inner_text("#panel")
    go_to(page, "(n) => n.op === 'add' && n.module.endsWith('q_proj')", backward=True)  # + bias
    text = step_text(page)
    assert "copied for each of the batch's 2 × 8 positions: its gradient is g summed" in text, text
    go_to(page, "(n) => n.op === 'matmul' && n.module.endsWith('q_proj')", backward=True)
    assert "broadcast" not in step_text(page), "a matmul's weight is not broadcast"


def test_the_residual_step_says_which_input_is_the_skip_and_which_the_branch(open_page):
    page = open_page("every")
    go_to(page, "(n) => n.role === 'residual'")
    text = step_text(page)
    assert re.search(r"from the skip x \(.*\) \[2, 8, 8\] \+ the branch F\(x\) \((add|matmul) in "
                     r"blocks\.\d\.attn\.out_proj\)", text), text
    go_to(page, "(n) => n.role === 'residual'", backward=True)
    text = step_text(page)
    assert "to the skip x (" in text and "to the branch F(x) (" in text, text


# ---- 5. statistics of what is shown -------------------------------------------------------------

def test_visible_statistics_and_the_caption_are_of_the_head_shown_and_marked_approximate(
        open_page):
    page = open_page("attn")
    i = go_to(page, "(n) => n.role === 'A'", backward=True)
    values = decode(page.evaluate(f"{DATA}.nodes[{i}].grad.heat"))  # [heads, T, T], as coded
    blocked = np.triu(np.ones(values.shape[1:], bool), k=1)
    for head in (0, 1):
        if head:
            page.keyboard.press("h")
        grad = page.inner_text("#panel .grad-section")
        seen, masked = values[head][~blocked], values[head][blocked]
        assert (f"visible cells of head {head} (the heatmap): min ≈ {fmt_number(seen.min())} · "
                f"max ≈ {fmt_number(seen.max())}") in grad, grad
        assert f"masked: ≈ {fmt_number(masked.min())} … {fmt_number(masked.max())}" in grad, grad
        top = fmt_number(np.abs(masked).max())
        assert f"(head {head}: up to ≈ {top})" in grad, (
            f"head {head}: the caption's max {top}\n{grad}")


# ---- 6. the saved frame ----------------------------------------------------------------------

def test_a_saved_frame_keeps_its_whole_caption_above_the_graph(open_page, tmp_path):
    page = open_page("every", 1366, 768, accept_downloads=True)
    go_to(page, "(n) => n.op === 'add' && n.module === '' && n.inputs.length === 2", backward=True)
    with page.expect_download() as got:
        page.keyboard.press("s")
    path = tmp_path / "frame.svg"
    got.value.save_as(path)
    words = page.evaluate(f"{DATA}.title") + " · " + page.evaluate(
        "document.getElementById('step-text').textContent")
    frame = page.context.new_page()
    frame.set_content(f"<body style='margin:0'>{path.read_text(encoding='utf-8')}</body>")
    got = frame.evaluate("""() => {
        const svg = document.querySelector('svg'), s = svg.getBoundingClientRect();
        const cap = svg.querySelector('text.mt-caption'), c = cap.getBoundingClientRect();
        const graph = svg.querySelector('g.graph').getBoundingClientRect();
        const lines = Array.from(cap.querySelectorAll('tspan'), (t) => t.textContent);
        return { text: lines.length ? lines.join(' ') : cap.textContent,
                 right: c.right, width: s.right, bottom: c.bottom, graphTop: graph.top }; }""")
    assert got["text"].split() == words.split(), (words, got["text"])
    assert got["right"] <= got["width"] + 0.5, f"the caption runs past the frame: {got}"
    assert got["bottom"] <= got["graphTop"] + 0.5, f"the caption covers the graph's top: {got}"


# ---- 7, 8. lecture mode at 1366 × 768 ----------------------------------------------------------

def lecture(page):
    page.keyboard.press("l")
    page.wait_for_timeout(300)


def test_lecture_mode_hover_readout_stays_on_screen_at_the_heatmaps_top_row(open_page):
    page = open_page("attn", 1366, 768)
    lecture(page)
    go_to(page, "(n) => n.role === 'A'")
    canvas = page.locator("#panel canvas.heat").first
    canvas.scroll_into_view_if_needed()
    canvas.hover(position={"x": 3, "y": 3})
    tip = page.locator("#tip")
    assert tip.is_visible() and "query position t 0, key position s 0" in tip.inner_text()
    box = tip.bounding_box()
    assert 0 <= box["x"] and box["x"] + box["width"] <= 1366 and 0 <= box["y"] and (
        box["y"] + box["height"] <= 768), f"the readout is off screen: {box}"


def test_lecture_mode_help_list_shows_every_mouse_row_at_1366x768(open_page):
    page = open_page("every", 1366, 768)
    lecture(page)
    page.keyboard.press("?")
    rows = page.evaluate("""() => {
        const k = document.getElementById('keys').getBoundingClientRect();
        return Array.from(document.querySelectorAll('#keys tr'), (tr) => {
            const r = tr.getBoundingClientRect();
            return [tr.textContent.slice(0, 20),
                    r.bottom <= Math.min(k.bottom, innerHeight) + 0.5]; }); }""")
    cut = [name for name, shown in rows if not shown]
    more = page.locator("#keys-more").is_visible()
    assert not cut or more, f"rows cut with no sign that the list scrolls: {cut}"
    assert not cut, f"the whole list fits 1366 × 768 in lecture mode; cut: {cut}"


def test_lecture_mode_shows_softmaxs_masked_fill_input_whole(open_page):
    page = open_page("attn", 1366, 768)
    lecture(page)
    presses = page.evaluate(f"(() => {{ const d = {DATA}; "
                            "return d.forward.findIndex((i) => d.nodes[i].role === 'A') + 1; })()")
    for _ in range(presses):  # stepping, as in a lecture
        page.keyboard.press("ArrowRight")
    assert "softmax (A)" in step_text(page)
    boxes = page.evaluate("""() => {
        const g = document.getElementById('graph').getBoundingClientRect();
        const lit = document.querySelectorAll('#graph g.node.mt-input, #graph g.node.mt-current');
        return Array.from(lit, (b) => {
            const r = b.getBoundingClientRect();
            return [b.textContent.trim().split('\\n').pop(),
                    r.left >= g.left - 0.5 && r.right <= g.right + 0.5]; }); }""")
    assert len(boxes) == 2 and all(inside for _, inside in boxes), boxes


def test_a_backward_step_opens_its_panel_on_the_gradient(open_page):
    page = open_page("attn", 1366, 768)
    lecture(page)
    go_to(page, "(n) => n.role === 'A'", backward=True)
    got = page.evaluate("""() => {
        const p = document.getElementById('panel').getBoundingClientRect();
        const h = Array.from(document.querySelectorAll('#panel h3'))
            .find((e) => e.textContent === 'gradient').getBoundingClientRect();
        const c = document.querySelectorAll('#panel canvas.heat')[1].getBoundingClientRect();
        return [h.top - p.top, c.top < p.bottom && c.top + c.height / 2 < p.bottom]; }""")
    assert abs(got[0]) < 4 and got[1], (
        f"∂L/∂A's heading should open at the panel's top ({got[0]:.0f} px), "
        "its heatmap in view")


# ---- 9. titles clear of edges, room in 3-D boxes ----------------------------------------------

def test_no_edge_runs_through_a_module_title(open_page):
    page = open_page("every")
    crossed = page.evaluate("""() => { const out = [];
        const paths = Array.from(document.querySelectorAll('#graph g.edge path'));
        document.querySelectorAll('#graph g.cluster text').forEach((t) => { const r = t.getBBox();
            paths.forEach((p) => { const n = p.getTotalLength();
                for (let d = 0; d <= n; d += 2) { const q = p.getPointAtLength(d);
                    if (q.x > r.x && q.x < r.x + r.width && q.y > r.y && q.y < r.y + r.height) {
                        out.push(t.textContent); break; } } }); });
        return out; }""")
    assert crossed == [], f"edges through the titles of {crossed}"


def test_module_boxes_at_depth_1_keep_room_above_their_names(open_page):
    page = open_page("depth1")
    # a 3-D box: its back outline (polygon) and the front face's top edge (the first polyline)
    gaps = page.evaluate("""() => Array.from(document.querySelectorAll('#graph g.node'))
        .filter((g) => g.querySelector('polyline')).map((g) => {
            const top = g.querySelector('polyline').getBoundingClientRect().top;
            const text = g.querySelector('text').getBoundingClientRect().top;
            return [g.querySelector('text').textContent, text - top]; })""")
    assert len(gaps) >= 3 and all(gap >= 2 for _, gap in gaps), (
        f"from the front face's top edge down to the box's name, px: {gaps}")


# ---- 12. lit edges apart from the gradient scale -----------------------------------------------

def hue(rgb):
    return 360 * colorsys.rgb_to_hsv(*rgb)[0]


def test_lit_data_edges_are_far_in_hue_from_every_gradient_edge_colour(open_page):
    page = open_page("every")
    page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowRight")
    stroke = page.evaluate("getComputedStyle(document.querySelector('#graph g.edge.mt-on path'))"
                           ".stroke")
    lit = hue([int(v) / 255 for v in re.findall(r"\d+", stroke)[:3]])
    ramp = [hue(c) for c in _RAMP]
    gaps = [min(abs(lit - h), 360 - abs(lit - h)) for h in ramp]
    assert min(gaps) >= 60, (f"lit edge {stroke} (hue {lit:.0f}°) against the gradient scale's "
                             f"hues {[round(h) for h in ramp]}: {gaps}")


# ---- the docs' recipe --------------------------------------------------------------------------

def recipe():
    """The Python block of docs/explorer.md's "Checking a number from Python"."""
    text = (ROOT / "docs" / "explorer.md").read_text(encoding="utf-8")
    section = text.split("## Checking a number from Python", 1)[1].split("\n## ", 1)[0]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


def test_the_docs_recipe_rebuilds_the_pages_step_and_matches_its_numbers(open_page, tmp_path,
                                                                         capsys):
    from models.cli.main import main

    code = recipe()
    flags = re.search(r"`microtensor explore (--focus [^`]*)`", (ROOT / "docs" / "explorer.md")
                      .read_text(encoding="utf-8")).group(1).split()
    page_path = tmp_path / "attention.html"
    assert main(["explore", *flags, "--output", str(page_path)]) == 0
    capsys.readouterr()
    scope = {}
    exec(compile(code, "docs/explorer.md", "exec"), scope)  # noqa: S102 - the docs' own recipe
    printed = capsys.readouterr().out
    s_line = re.search(r"S: min (\S+) · max (\S+)", printed)
    page = open_page(str(page_path))
    assert f"loss {scope['loss'].item():.3f}" in page.inner_text("#title")
    go_to(page, "(n) => n.role === 'S' && n.module === 'blocks.0.attn'")
    value = page.inner_text("#panel").split("\nvalue\n")[1]
    assert f"min {s_line.group(1)} · max {s_line.group(2)}" in value, (printed, value)
    weight = page.evaluate(f"""() => {DATA}.nodes
        .find((n) => n.name === 'blocks.0.attn.q_proj.weight')
        .grad.stats.norm""")
    mine = np.linalg.norm(scope["attn"].q_proj.weight.grad)
    assert fmt_number(weight) == fmt_number(mine), (weight, mine)
    assert f"‖∂L/∂W_Q‖ {fmt_number(mine)}" in printed, printed
    # the recipe's comments quote the page's numbers: they must be today's
    for quoted in (f"loss {scope['loss'].item():.3f}", f"box: {fmt_number(mine)}",
                   f"min {s_line.group(1)} · max {s_line.group(2)}"):
        assert quoted in code, f"docs/explorer.md's recipe should quote {quoted!r}"
    # A, head 0, batch row 0 as the recipe computes it, against the heatmap's cells (one byte)
    heat = page.evaluate(f"{DATA}.nodes.find((n) => n.role === 'A' "
                         "&& n.module === 'blocks.0.attn').value.heat")
    half = (heat["hi"] - heat["lo"]) / 500 + 1e-7
    assert np.allclose(decode(heat)[0], scope["a"][0, 0], atol=half)


# ---- review 2: lecture zoom across opened modules ----------------------------------------------

GRAPH_TEXT = """() => { // the smallest graph text on screen, in px (font size times the zoom)
  const g = document.getElementById('graph').getBoundingClientRect();
  let least = Infinity;
  document.querySelectorAll('#graph svg text').forEach((t) => {
    const r = t.getBoundingClientRect();
    if (!(r.width > 0 && r.bottom > g.top && r.top < g.bottom && r.right > g.left
          && r.left < g.right)) return;
    least = Math.min(least, parseFloat(getComputedStyle(t).fontSize) * t.getScreenCTM().a); });
  return least; }"""


def test_lecture_mode_keeps_its_large_graph_text_after_opening_a_module(open_page):
    page = open_page("depth1", 1366, 768)
    go_to(page, "(n) => n.role === 'A'")
    page.keyboard.press("Home")
    lecture(page)
    before = page.evaluate(GRAPH_TEXT)
    assert before >= 18, f"lecture mode on the depth-1 picture: graph text {before:.1f} px"
    go_to(page, "(n) => n.role === 'A'")  # inside a folded block: the page follows it in
    page.keyboard.press("u")
    page.keyboard.press("o")  # open the block again, by the key
    for moment in ("O", "→", "End"):
        least = page.evaluate(GRAPH_TEXT)
        assert least >= 18, (
            f"after {moment} in lecture mode: graph text {least:.1f} px, expected >= 18")
        page.keyboard.press("ArrowRight" if moment == "O" else "End")


NEAREST_EDGE = """() => { // for each ‖g‖ label: [its edge, the lit edge nearest its middle]
  const sample = (path) => { const n = path.getTotalLength(), out = [];
    for (let d = 0; d <= n; d += 2) out.push(path.getPointAtLength(d)); return out; };
  const lit = Array.from(document.querySelectorAll('#graph g.edge.mt-on'), (g) => [
    g.querySelector('title').textContent.trim(), sample(g.querySelector('path'))]);
  return Array.from(document.querySelectorAll('#graph g.mt-labels > g[data-edge]'), (g) => {
    const r = g.querySelector('text').getBBox();
    const c = { x: r.x + r.width / 2, y: r.y + r.height / 2 };
    const far = (pts) => Math.min(...pts.map((p) => Math.hypot(p.x - c.x, p.y - c.y)));
    lit.sort((a, b) => far(a[1]) - far(b[1]));
    return [g.dataset.edge, lit[0][0]]; }); }"""


@pytest.mark.parametrize("size", [(1366, 768), (1920, 1080)])
def test_qk_backward_names_q_and_k_transposed_and_labels_each_edge_apart(open_page, size):
    page = open_page("attn", *size)
    go_to(page, "(n) => n.role === 'QKᵀ'", backward=True)
    text = step_text(page)
    assert re.search(r"‖g‖ \S+ to transpose \(Q\), ‖g‖ \S+ to transpose \(Kᵀ\)", text), (
        f"QKᵀ's backward step should name its inputs Q and Kᵀ; it reads {text!r}")
    labels = page.evaluate(NEAREST_EDGE)
    assert len(labels) == 2, labels
    assert all(own == nearest for own, nearest in labels), (
        f"each ‖g‖ label should sit nearest its own edge: [edge, nearest edge] {labels}")


@pytest.mark.parametrize("role", ["Q", "K", "V"])
def test_jumping_to_q_k_or_v_lands_on_the_split_heads_of_that_role(open_page, role):
    page = open_page("every")
    page.keyboard.press("/")
    page.keyboard.type(role)
    page.keyboard.press("Enter")
    node = page.evaluate(f"{DATA}.nodes[+document.body.dataset.stepNode]")
    assert (node["role"], node["op"]) == (role, "transpose"), (
        f"jump {role!r}: expected the split-heads transpose of role {role}, got {node['op']} "
        f"({node['role']})")


# ---- review 2, small: one "point at a cell", numbers whole, the loss as the title, ∂L/∂S hatched

def test_attention_weights_say_point_at_a_cell_once_and_keep_numbers_unbroken(open_page):
    page = open_page("attn", 1920, 1080)
    lecture(page)
    go_to(page, "(n) => n.role === 'A'")
    value = page.locator("#panel .value-section, #panel div:has(> canvas.heat)").first.inner_text()
    assert value.count("point at a cell") == 1, f"one 'point at a cell' under A: {value!r}"
    broken = page.evaluate("""() => Array.from(document.querySelectorAll('#panel .num'))
        .filter((e) => e.getClientRects().length > 1).map((e) => e.textContent)""")
    assert broken == [], f"numbers broken across lines: {broken}"
    assert page.locator("#panel .num", has_text="±").count() >= 1


def test_the_loss_panel_writes_the_loss_as_the_title_does(open_page):
    page = open_page("every")
    loss = page.evaluate(f"(() => {{ const d = {DATA}; "
                         "return d.nodes[d.forward[d.forward.length - 1]].value.stats.min; })()")
    page.evaluate(f"location.hash = '#step=f' + {DATA}.forward.length")
    page.wait_for_timeout(50)
    panel = page.inner_text("#panel")
    assert f"= {loss:.3f}" in panel, (
        f"expected '= {loss:.3f}' (3 decimals, as the title): {panel[:200]!r}")


def test_the_gradient_of_s_hatches_the_masked_cells_as_that_of_a_does(open_page):
    page = open_page("attn")
    for role in ("A", "S"):
        go_to(page, f"(n) => n.role === '{role}'", backward=True)
        note = page.locator("#panel .mask-note").last
        assert note.count() and "hatched" in note.inner_text(), (
            f"∂L/∂{role}'s heatmap should hatch the masked cells; the panel reads "
            f"{page.inner_text('#panel')[-300:]!r}")


# ---- review 2: the opening view cuts no box at the graph's top -------------------------------

@pytest.mark.parametrize("lectured", [False, True])
def test_the_graph_opens_at_its_top_with_no_box_cut_there_at_1366(open_page, lectured):
    page = open_page("attn", 1366, 768)
    if lectured:
        lecture(page)
    cut = page.evaluate("""() => {
        const g = document.getElementById('graph').getBoundingClientRect();
        return Array.from(document.querySelectorAll('#graph g.node'), (b) => [
            b.textContent.trim().split('\\n')[0], b.getBoundingClientRect()])
          .filter(([, r]) => r.top < g.top - 0.5 && r.bottom > g.top).map(([t]) => t); }""")
    assert cut == [], f"boxes cut at the graph's top when the page opens: {cut}"


def test_per_row_attention_colours_say_they_are_quantized_and_quote_the_step(open_page):
    page = open_page("attn")
    i = go_to(page, "(n) => n.role === 'A'")
    heat = page.evaluate(f"{DATA}.nodes[{i}].value.heat")
    step = fmt_number((heat["hi"] - heat["lo"]) / 250)
    panel = page.inner_text("#panel")
    assert f"colours quantized: one-byte codes in steps of {step}" in panel, (
        f"A's per-row legend should quote the code step {step}: {panel[-600:]!r}")
