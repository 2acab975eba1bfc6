"""The explorer as a teacher projects it (issue 26), in headless Chromium driven by Playwright:
the masked cells of ∂L/∂A in their true colour, keys that stay with the stepper, one outline for
the current step, folded runs that show which block runs, a colour key that stays, the model's
inputs by name and value, text a room can read, labels clear of cluster titles, pow's exponent,
a jump box, the step in the URL, an on-page key, a frame saved for the slides, and a full `?`.
"""

import numpy as np
import pytest
from mt_testing import needs_dot

import microtensor as mt
import viz
from viz.compact import decode
from viz.style import fmt_number

sync_api = pytest.importorskip("playwright.sync_api")
pytestmark = needs_dot
DATA = "JSON.parse(document.getElementById('mt-data').textContent)"
ORDERS = f"(() => {{ const d = {DATA}; return [d.nodes, d.forward, d.backward]; }})()"
HEAT_WIDTH = "document.querySelector('#panel canvas.heat').getBoundingClientRect().width"
SCROLL = "document.getElementById('panel').scrollTop"


@pytest.fixture(scope="module")
def pages(tmp_path_factory):
    """{name: path}: a 2-block GPT's step at depth 1 and at every op, its first attention layer
    (batch 2 × 8, causal mask), and a two-line regression whose inputs x and targets are
    constants of the graph and whose loss squares with pow."""
    import nn
    from models import GPT, GPTConfig

    mt.manual_seed(0)
    folder = tmp_path_factory.mktemp("teacher")
    model = GPT(GPTConfig(vocab_size=11, block_size=8, n_layer=2, n_head=2, n_embd=8))
    ids = np.random.default_rng(0).integers(0, 11, (2, 8))
    with viz.record_steps():
        _, loss = model(ids, ids)
        loss.backward()
    out = {}
    for name, options in (("depth1", {"depth": 1}), ("every", {}),
                          ("attn", {"focus": "blocks.0.attn"})):
        out[name] = folder / f"{name}.html"
        viz.explore(loss, out[name], **options)

    class Line(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(3, 2)

        def forward(self, x, targets):
            return ((self.fc(x) - targets) ** 2).mean()

    x = mt.Tensor(np.arange(6.0, dtype=np.float32).reshape(2, 3))
    targets = mt.Tensor(np.full((2, 2), 0.5, dtype=np.float32))
    with viz.record_steps():
        line_loss = Line()(x, targets)
        line_loss.backward()
    out["line"] = folder / "line.html"
    viz.explore(line_loss, out["line"])
    return out


@pytest.fixture
def open_page(browser, pages):
    """open_page(name, width=1920, height=1080) -> a Playwright page; a console error fails."""
    opened = []

    def opener(name, width=1920, height=1080, accept_downloads=False):
        context = browser.new_context(viewport={"width": width, "height": height},
                                      accept_downloads=accept_downloads)
        page = context.new_page()
        page.errors = []
        page.on("console", lambda m: page.errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: page.errors.append(str(e)))
        page.goto(pages[name].as_uri())
        page.wait_for_selector("body[data-ready='1']", timeout=10_000)
        opened.append((context, page))
        return page

    yield opener
    for context, page in opened:
        assert page.errors == [], f"console errors: {page.errors}"
        context.close()


def step_to(page, pick):
    """Press Home, then → until the stepper is at the first step whose node `pick` chooses (a
    dict of the page's node table); returns (step index, node index)."""
    nodes, forward, backward = page.evaluate(ORDERS)
    order = forward + backward
    k = next(k for k, i in enumerate(order) if pick(nodes[i]))
    page.keyboard.press("Home")
    for _ in range(k + 1):
        page.keyboard.press("ArrowRight")
    return k, order[k]


def outline(page, selector):
    """(stroke, stroke-width, stroke-dasharray) of the outline shape of the box `selector` picks."""
    got = page.evaluate("""(sel) => {
        const g = document.querySelector(sel);
        const shape = g.querySelector('polygon:not([stroke="transparent"]), ellipse, path');
        const s = getComputedStyle(shape);
        return [s.stroke, s.strokeWidth, s.strokeDasharray]; }""", selector)
    return tuple(got)


# ---- 1. the softmax backward's lesson --------------------------------------------------------

def test_masked_cells_of_dA_keep_their_true_nonzero_gradient_and_the_scale_is_the_visible_cells(
        open_page):
    page = open_page("attn")
    k, i = step_to_backward(page, lambda n: n["role"] == "A")
    grad = page.evaluate(f"{DATA}.nodes[{i}].grad.heat")
    values = decode(grad)  # [heads, T, T] of batch row 0, within half a code step
    blocked = np.triu(np.ones(values.shape[1:], bool), k=1)
    visible, masked = values[:, ~blocked], values[:, blocked]
    half = (grad["hi"] - grad["lo"]) / 500
    assert np.abs(masked).max() > 10 * half, "the fact the page must show: ∂L/∂A ≠ 0 where masked"
    text = page.inner_text("#panel").split("\ngradient\n")[1]
    assert "not zero there" in text and "softmax's backward that cancels it" in text, text
    assert "grey checks" not in text, text
    m = max(-visible.min(), visible.max())
    ends = page.locator("#panel .colour-key").nth(1).inner_text().split()
    assert ends[0] == f"−{fmt_number(m)}" and ends[-1] == f"+{fmt_number(m)}", (
        f"expected the scale ±{fmt_number(m)} of the visible cells, got {ends}")
    head0 = values[0][~blocked]  # the statistics are of what the heatmap shows: head 0, read back
    assert f"visible cells of head 0 (the heatmap): min ≈ {fmt_number(head0.min())} · max ≈ " \
           f"{fmt_number(head0.max())}" in text, text
    assert "masked positions included" in text, "the whole-tensor statistics say what they hold"
    # the masked cell (query 0, key T−1) of head 0 is drawn in a colour, not grey: its pixel
    # away from the hatch lines has the colour of its value on the visible scale
    rgb = page.evaluate("""() => {
        const c = document.querySelectorAll('#panel canvas.heat')[1], ctx = c.getContext('2d');
        const T = 8, kx = c.width / T, ky = c.height / T;
        for (let y = 0; y < ky; y++) for (let x = 0; x < kx; x++) {
            const X = (T - 1) * kx + x, Y = y;
            if ((X + Y) % 5) return Array.from(ctx.getImageData(X, Y, 1, 1).data.slice(0, 3)); }
        }""")
    v = float(values[0, 0, -1])
    t = max(-1.0, min(1.0, v / m))
    want = ([255 + 222 * t, 255 + 150 * t, 255 + 50 * t] if t < 0
            else [255 - 40 * t, 255 - 215 * t, 255 - 200 * t])
    assert np.allclose(rgb, want, atol=6), (
        f"masked cell ∂L/∂A = {v:.3g}: expected {want}, got {rgb}")


def step_to_backward(page, pick):
    """Step to the backward step of the first node (in backward()'s order) `pick` chooses."""
    nodes, forward, backward = page.evaluate(ORDERS)
    b = next(b for b, i in enumerate(backward) if pick(nodes[i]))
    page.keyboard.press("Home")
    for _ in range(len(forward) + b + 1):
        page.keyboard.press("ArrowRight")
    return len(forward) + b, backward[b]


# ---- 2. keys stay with the stepper -----------------------------------------------------------

def test_after_choosing_a_speed_with_the_mouse_the_right_arrow_steps(open_page):
    page = open_page("every")
    page.locator("#speed").select_option("5")
    page.focus("#speed")  # the menu keeps the focus after a mouse choice
    page.keyboard.press("ArrowRight")
    assert page.evaluate("document.body.dataset.stepNode") != "", "→ must step, not change speed"
    assert page.locator("#speed").input_value() == "5", "the speed chosen stays"
    assert "forward 1 /" in page.inner_text("#step-text")
    page.locator("#jump").fill("")
    page.focus("#jump")
    page.keyboard.press("ArrowRight")  # typing in the jump box: keys are the text's
    assert "forward 1 /" in page.inner_text("#step-text")


# ---- 3. one outline for the current step -----------------------------------------------------

def test_the_current_step_has_one_outline_for_ops_weights_and_folded_boxes(open_page):
    red = ("rgb(214, 39, 40)", "5px", "none")
    page = open_page("every")
    step_to(page, lambda n: n["kind"] == "op")
    assert outline(page, "g.node.mt-current") == red, "an op"
    step_to_backward(page, lambda n: n["kind"] == "param")  # a weight receives its gradient
    assert "receives its gradient" in page.inner_text("#step-text")
    assert outline(page, "g.node.mt-current") == red, "a weight: the same outline as an op"
    page = open_page("depth1")
    page.keyboard.press("ArrowRight")  # the wte module box
    assert outline(page, "g.node.mt-current") == red, "a module box at depth 1"
    step_to(page, lambda n: n["module"].startswith("blocks.1"))
    assert page.locator("g.node.mt-current", has_text="×2").count() == 1
    assert outline(page, "g.node.mt-current") == red, "the folded run"


# ---- 4. depth 1: faded until run, the block running ------------------------------------------

def test_folded_boxes_holding_weights_stay_faded_until_their_ops_run(open_page):
    page = open_page("depth1")
    page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowRight")  # forward 2: the embeddings
    for name in ("ln_f", "×2"):
        box = page.locator("g.node", has_text=name).first
        assert "mt-waiting" in box.get_attribute("class"), f"{name} has not run at forward 2"


def test_the_folded_run_shows_which_of_its_blocks_runs(open_page):
    page = open_page("depth1")
    for block in (0, 1):
        step_to(page, lambda n, b=block: n["module"].startswith(f"blocks.{b}"))
        parts = page.locator("g.node.mt-current rect.mt-part")
        assert parts.count() == 2
        assert [("running" in (parts.nth(k).get_attribute("class") or "")) for k in (0, 1)] == [
            k == block for k in (0, 1)], f"block {block} of 2 is the one lit"
        assert f"block {block + 1} of 2" in page.inner_text("#step-text")
    page.keyboard.press("End")  # backward: blocks.0 finishes last
    step_to_backward(page, lambda n: n["module"].startswith("blocks.0"))
    assert "block 1 of 2" in page.inner_text("#step-text")


# ---- 5. the colour key stays -----------------------------------------------------------------

def test_the_heatmaps_colour_key_stays_after_a_hover(open_page):
    page = open_page("every")
    step_to(page, lambda n: n["op"] == "gelu")
    key = page.locator("#panel .colour-key").first
    before = key.inner_text()
    canvas = page.locator("#panel canvas.heat").first
    canvas.hover(position={"x": 5, "y": 5})
    assert "position t 0" in page.locator("#panel .readout").first.inner_text()
    page.mouse.move(5, 5)  # off the heatmap
    assert key.is_visible() and key.inner_text() == before, "the key must not go away"
    assert before.startswith("−") and "+" in before, before


# ---- 6. the model's inputs -------------------------------------------------------------------

def test_the_models_inputs_show_their_names_values_and_that_they_need_no_gradient(open_page):
    page = open_page("line")
    texts = page.locator("#graph svg text").all_text_contents()
    assert "x [2,3]" in texts and "targets [2,2]" in texts, texts
    assert not [t for t in texts if t.startswith("const")], texts
    page.locator("#graph g.node", has_text="targets").click()
    panel = page.inner_text("#panel")
    assert panel.startswith("targets") and "min 0.5 · max 0.5 · mean 0.5" in panel, panel
    assert "needs no gradient" in panel and "not recorded" not in panel, panel
    page.locator("#graph g.node", has_text="x [2,3]").click()
    assert "min 0 · max 5 · mean 2.5" in page.inner_text("#panel")


# ---- 7. readable text and heatmaps -----------------------------------------------------------

AUDIT = """() => { // visible text under 18 px (HTML by its font size, the graph's at its zoom)
  const small = [], vw = innerWidth, vh = innerHeight;
  const shown = (r, c) => r.width > 0 && r.height > 0 && r.right > 0 && r.bottom > 0
    && r.left < vw && r.top < vh
    && (!c || (r.bottom > c.top && r.top < c.bottom && r.right > c.left && r.left < c.right));
  document.querySelectorAll('body *').forEach((el) => {
    if (el.closest('svg')) return;
    const own = Array.from(el.childNodes).some((n) => n.nodeType === 3 && n.textContent.trim());
    if (!own && !['INPUT', 'SELECT', 'BUTTON'].includes(el.tagName)) return;
    if (el.offsetParent === null) return;
    const box = el.closest('#panel, #graph, #legend, #keys');
    if (!shown(el.getBoundingClientRect(), box && box.getBoundingClientRect())) return;
    const px = parseFloat(getComputedStyle(el).fontSize);
    if (px < 18) small.push(px + ' px: ' + (el.textContent || el.value || '').trim().slice(0, 30));
  });
  const g = document.getElementById('graph').getBoundingClientRect();
  document.querySelectorAll('#graph svg text').forEach((t) => {
    if (!shown(t.getBoundingClientRect(), g)) return;
    const px = parseFloat(getComputedStyle(t).fontSize) * t.getScreenCTM().a;
    if (px < 18) small.push(px.toFixed(1) + ' px (graph): ' + t.textContent.slice(0, 30));
  });
  return small; }"""


@pytest.mark.parametrize("size", [(1920, 1080), (1366, 768)])
def test_lecture_mode_has_no_text_under_18px_and_its_heatmaps_are_reachable(open_page, size):
    page = open_page("attn", *size)
    step_to_backward(page, lambda n: n["role"] == "A")
    narrow = page.evaluate(HEAT_WIDTH)
    page.keyboard.press("l")
    page.wait_for_timeout(300)
    assert page.evaluate(AUDIT) == [], "lecture mode at the top of the panel"
    wide = page.evaluate(HEAT_WIDTH)
    panel = page.evaluate("document.getElementById('panel').clientWidth")
    assert narrow < wide <= panel, f"the heatmap grows: {narrow} -> {wide} (panel {panel})"
    assert wide >= panel - 40, f"in lecture mode the heatmap fills the panel: {wide} of {panel}"
    top = page.evaluate(SCROLL)
    for _ in range(3):
        page.keyboard.press("PageDown")
    assert page.evaluate(SCROLL) > top, "PgDn scrolls the panel"
    assert page.evaluate(AUDIT) == [], "lecture mode, the panel scrolled to its heatmaps"
    pixels = "document.querySelector('#panel canvas.heat').toDataURL()"
    first = page.evaluate(pixels)
    page.keyboard.press("h")
    assert page.locator("#panel select.head").first.input_value() == "1", "H: the next head"
    assert page.evaluate(pixels) != first, "the heatmap shows head 1"
    assert page.evaluate("document.body.dataset.stepNode") != "", "still at the step"


@pytest.mark.parametrize("size", [(1920, 1080), (1366, 768)])
def test_outside_lecture_mode_the_graph_opens_readable(open_page, size):
    page = open_page("every", *size)
    scale = page.evaluate("document.querySelector('#graph svg').getScreenCTM().a")
    assert scale >= 1.2 - 1e-6, f"11 pt text at {11 * scale:.1f} px: expected 13 px or more"
    y = page.evaluate("document.querySelector('#graph svg').viewBox.baseVal.y")
    page.mouse.move(300, 400)
    page.mouse.wheel(0, 300)
    assert page.evaluate("document.querySelector('#graph svg').viewBox.baseVal.y") > y, (
        "the wheel scrolls the graph down")


# ---- 8. labels, the key in lecture mode, pow -------------------------------------------------

def test_no_gradient_label_covers_a_cluster_title(open_page):
    page = open_page("every")
    steps = page.evaluate(f"{DATA}.forward.length + {DATA}.backward.length")
    forward = page.evaluate(f"{DATA}.forward.length")
    page.keyboard.press("Home")
    for _ in range(forward):
        page.keyboard.press("ArrowRight")
    covered = []
    for k in range(forward, steps):
        page.keyboard.press("ArrowRight")
        covered += page.evaluate("""(k) => {
            const out = [];
            const titles = Array.from(document.querySelectorAll("#graph g.cluster text"));
            document.querySelectorAll('#graph text.mt-label').forEach((t) => {
                const a = t.getBoundingClientRect();
                titles.forEach((c) => { const b = c.getBoundingClientRect();
                    if (a.left < b.right && b.left < a.right
                        && a.top < b.bottom && b.top < a.bottom)
                        out.push(k + ': ' + t.textContent + ' on ' + c.textContent); }); });
            return out; }""", k)
    assert covered == [], covered


def test_lecture_mode_keeps_the_key_in_view_beside_the_panel(open_page):
    page = open_page("every", 1366, 768)
    page.keyboard.press("l")
    page.wait_for_timeout(300)
    key, panel = page.locator("#legend").bounding_box(), page.locator("#panel").bounding_box()
    assert key["x"] >= 0 and key["x"] + key["width"] <= panel["x"] + 1, (key, panel)
    assert key["y"] + key["height"] <= 768 + 1, key
    assert "current step" in page.inner_text("#legend")


def test_pow_shows_its_exponent(open_page):
    page = open_page("line")
    assert "pow ^2 [2,2]" in page.locator("#graph svg text").all_text_contents()
    page.locator("#graph g.node", has_text="pow").click()
    panel = page.inner_text("#panel")
    assert panel.startswith("pow ^2") and "exponent\tp = 2" in panel, panel


# ---- 9. where you are, the key, a frame for the slides, the help -----------------------------

def test_the_jump_box_finds_a_node_by_name_and_a_step_by_number(open_page):
    page = open_page("every")
    page.keyboard.press("/")
    page.keyboard.type("ln_f")
    page.keyboard.press("Enter")
    i = int(page.evaluate("document.body.dataset.stepNode"))
    node = page.evaluate(f"{DATA}.nodes[{i}]")
    assert "ln_f" in node["module"] + node["name"], node
    page.locator("#jump").fill("b5")
    page.locator("#jump").press("Enter")
    assert page.inner_text("#step-text").startswith("backward 5 /")


def test_the_step_is_in_the_url_and_a_reload_keeps_it(open_page):
    page = open_page("every")
    for _ in range(3):
        page.keyboard.press("ArrowRight")
    assert page.evaluate("location.hash") == "#step=f3"
    node = page.evaluate("document.body.dataset.stepNode")
    page.reload()
    page.wait_for_selector("body[data-ready='1']")
    assert page.evaluate("document.body.dataset.stepNode") == node
    assert page.inner_text("#step-text").startswith("forward 3 /")


def test_the_page_keys_its_marks(open_page):
    page = open_page("every")
    key = page.inner_text("#legend")
    for words in ("current step", "its inputs", "gradient it sends", "clicked", "faded"):
        assert words in key, (words, key)
    assert page.locator("#legend #picture-key svg text").count() > 3, "the picture's own key"
    page.keyboard.press("k")
    assert not page.locator("#picture-key").is_visible() and "faded" in page.inner_text("#legend")
    page.keyboard.press("k")
    assert not page.locator("#legend").is_visible()
    page.keyboard.press("k")
    assert page.locator("#picture-key").is_visible()


@pytest.mark.parametrize("key, magic", [("s", b"<svg"), ("p", b"\x89PNG")])
def test_the_frame_saves_as_a_picture_for_the_slides(open_page, tmp_path, key, magic):
    page = open_page("every", accept_downloads=True)
    for _ in range(4):
        page.keyboard.press("ArrowRight")
    with page.expect_download() as got:
        page.keyboard.press(key)
    path = tmp_path / got.value.suggested_filename
    got.value.save_as(path)
    data = path.read_bytes()
    assert path.name == "explorer-f4." + ("svg" if key == "s" else "png")
    assert data.startswith(magic), data[:20]
    if key == "s":
        assert b"mt-current" in data and b"<style" in data, "the lit boxes keep their look"
        caption = page.inner_text("#step-text").split("\n")[0][:30]
        assert b'class="mt-caption"' in data and caption.encode() in data, (
            f"a slide says its step: expected the caption {caption!r} in the saved frame")
    else:
        import struct
        width, height = struct.unpack(">II", data[16:24])
        graph = page.locator("#graph").bounding_box()
        assert (width, height) == (round(graph["width"]) * 2, round(graph["height"]) * 2)


def test_the_help_lists_the_mouse_and_the_head_menu(open_page):
    page = open_page("every")
    page.keyboard.press("?")
    text = page.inner_text("#keys")
    for words in ("Mouse", "drag", "wheel", "head menu", "H / Shift+H", "jump", "save this frame"):
        assert words in text, (words, text)


# ---- the second look: the topmost thing first, a focus page's jump, the key of this page -----

def test_esc_closes_the_help_list_first_and_lecture_mode_only_after(open_page):
    page = open_page("every", 1366, 768)
    page.keyboard.press("l")
    page.keyboard.press("?")
    box = page.locator("#keys").bounding_box()
    assert box["y"] + box["height"] <= 768, f"the ? list fits a 1366 × 768 screen: {box}"
    last = page.locator("#keys tr").last
    last.scroll_into_view_if_needed()
    assert last.is_visible(), "the ? list's last line can be reached"
    page.keyboard.press("Escape")
    assert page.locator("#keys").is_hidden(), "Esc closes the ? list"
    assert page.evaluate("document.body.classList.contains('lecture')"), (
        "the first Esc closed the list alone; lecture mode stays")
    page.keyboard.press("Escape")
    assert not page.evaluate("document.body.classList.contains('lecture')"), "Esc again leaves"


ON_PAGE_NODE = """(i) => JSON.parse(document.getElementById('mt-data').textContent).views
    .some((v) => Object.values(v.boxes).some((m) => m.indexOf(+i) >= 0))"""


def test_on_a_focus_page_the_jump_box_moves_to_a_node_drawn_there(open_page):
    page = open_page("attn")  # --focus blocks.0.attn: the rest of the model is not drawn
    page.locator("#jump").fill("weight")  # wte.weight, ln_f.weight ... are off this page
    page.locator("#jump").press("Enter")
    node = page.evaluate("document.body.dataset.stepNode")
    assert node != "" and page.evaluate(ON_PAGE_NODE, node), (
        f"Enter went to node {node!r}; expected a node this page draws")
    page.locator("#jump").fill("ln_f")
    page.locator("#jump").press("Enter")
    assert "no node on this page matches" in page.inner_text("#jump-info")


def test_a_new_step_in_the_address_of_an_open_page_moves_the_stepper(open_page):
    page = open_page("every")
    at = "(w) => document.getElementById('step-text').textContent.startsWith(w)"
    page.evaluate("location.hash = '#step=f7'")
    page.wait_for_function(at, arg="forward 7 /", timeout=5000)
    page.evaluate("location.hash = '#step=b2'")
    page.wait_for_function(at, arg="backward 2 /", timeout=5000)


@pytest.mark.parametrize("step", ["f999", "b9999", "garbage"])
def test_a_step_the_page_lacks_in_the_address_is_said_on_the_page(open_page, pages, step):
    page = open_page("every")
    page.goto(pages["every"].as_uri() + "#step=" + step)
    page.reload()
    page.wait_for_selector("body[data-ready='1']")
    info = page.inner_text("#jump-info")
    assert step in info and "this page has f1" in info, (
        f"expected the page to say it lacks step {step}; the jump box says {info!r}")


def test_the_key_lists_only_what_the_page_shows_and_clicked_is_not_dashed(open_page):
    page = open_page("every")  # every op drawn: no folded run
    assert page.locator("#key-part").is_hidden(), "no folded box here: no 'folded run' in the key"
    page.locator("#graph g.node").nth(3).click()
    assert outline(page, "g.node.mt-selected:not(.mt-current)")[2] == "none", (
        "a clicked box is outlined solid: dashes are the module outlines'")
    swatch = page.evaluate("getComputedStyle(document.querySelector('#legend .sw.selected'))"
                           ".borderTopStyle")
    assert swatch == "solid", f"the key draws 'clicked' as the box is drawn; got {swatch}"
    page = open_page("depth1")  # blocks folded into "×2": the mark is on this page
    assert page.locator("#key-part").is_visible()


def test_the_tied_token_table_names_its_axes_on_the_depth1_page(open_page):
    page = open_page("depth1")
    step_to_backward(page, lambda n: n["name"] == "wte.weight")  # it receives its gradient
    panel = page.inner_text("#panel")
    assert "rows: token id (0–10)" in panel and "columns: feature (0–7)" in panel, panel
