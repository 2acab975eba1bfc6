"""Pictures ready for a slide: the key inside the picture, readable numbers, visible thin edges,
arrow direction, folded repeated blocks, page size and the landscape attention layout."""
import json
import re
import subprocess

import pytest
from mt_testing import needs_dot

import microtensor as mt
import viz
from viz.fold import FoldedNode, fold_repeats
from viz.save import page_size
from viz.style import MIN_WIDTH, fmt_count, fmt_number
from viz.trace import Edge, Node


def backward(loss):
    """One backward() that notes the gradient norms the pictures draw."""
    with viz.record_grad_norms():
        loss.backward()
    return loss


def small_loss():
    x = mt.randn(3, 4, requires_grad=True, name="x")
    w = mt.randn(4, 4, requires_grad=True, name="W")
    return backward(((x @ w).tanh() * 0.01).sum())


def test_the_key_inside_the_picture_says_what_width_colour_box_norms_and_edge_labels_mean():
    source = viz.draw_graph(small_loss()).source
    key = source[source.rindex("label=<<table"):]   # the graph's own label, last in the source
    for text in ("edge: ‖∂L/∂x‖ sent back along it (log scale)",
                 "‖g‖ in a box: ‖∂L/∂y‖, the gradient of the box's output y",
                 "a number on an edge: the ‖∂L/∂x‖ it carries",
                 "arrows: the way data flows"):
        assert text in key, f"expected the key to say {text!r}; key: {key[:300]}"
    assert len(re.findall(r'<td bgcolor="#[0-9a-f]{6}" fixedsize="true" width="40"', key)) == 5, \
        "expected five sample strokes from the thinnest to the thickest edge"


def test_the_key_before_backward_says_how_to_get_gradients():
    x = mt.randn(3, requires_grad=True, name="x")
    source = viz.draw_graph((x * 2.0).sum()).source
    assert "run backward() to see gradient norms" in source, "expected the forward-only key"
    bare = viz.draw_graph((x * 2.0).sum(), legend=False).source
    assert "label=<<table" not in bare, "expected no key with legend=False"


@pytest.mark.parametrize("value, text", [(0.00123, "0.00123"), (0.000123, "1.23e-4"),
                                         (3.1749, "3.17"), (123.4, "123"), (1234.0, "1.23e3"),
                                         (1.0, "1"), (999.7, "1.00e3"), (0.0, "0"), (-0.5, "-0.5")])
def test_numbers_have_3_significant_digits_plain_between_a_thousandth_and_a_thousand(value, text):
    assert fmt_number(value) == text, f"expected {value} -> {text!r}, got {fmt_number(value)!r}"


def test_counts_take_an_si_prefix():
    assert fmt_count(4_194_304, "FLOP") == "4.19 MFLOP", fmt_count(4_194_304, "FLOP")
    assert fmt_count(32_768, "B") == "32.8 kB", fmt_count(32_768, "B")
    assert fmt_count(12, "B") == "12 B", fmt_count(12, "B")


def test_the_thinnest_gradient_edge_is_still_plainly_visible(read_dot):
    a = mt.Tensor([1.0, 2.0], requires_grad=True, name="a")
    b = mt.Tensor([1.0, 2.0], requires_grad=True, name="b")
    loss = backward((a * 1e-6 + b * 1e3).sum())                 # nine orders of magnitude apart
    widths = [float(attrs["penwidth"]) for _, _, attrs in read_dot(viz.draw_graph(loss)).edges]
    assert min(widths) >= MIN_WIDTH >= 1.4, \
        f"expected every edge at least {MIN_WIDTH} pt wide, got {widths}"


def test_backward_direction_turns_every_arrow_and_keeps_the_same_boxes_and_edges(read_dot):
    loss = small_loss()
    forward = read_dot(viz.draw_graph(loss))
    back = read_dot(viz.draw_graph(loss, direction="backward"))
    assert [(s, d) for s, d, _ in back.edges] == [(s, d) for s, d, _ in forward.edges], \
        "expected the same edges (same layout), only drawn the other way"
    assert all(attrs.get("dir") == "back" for _, _, attrs in back.edges), \
        "expected dir=back on every edge"
    assert "arrows: the way the gradient flows" in viz.draw_graph(loss, direction="backward").source
    with pytest.raises(ValueError, match="direction"):
        viz.draw_graph(loss, direction="sideways")


def folded_boxes(source):
    return re.findall(r"<b>([^<]*) · (\w+) ×(\d+)</b>", source)


def test_folding_gives_one_box_for_the_four_repeated_blocks_with_a_bar_each(tiny_gpt, gpt_step):
    source = viz.draw_graph(gpt_step(tiny_gpt(n_layer=4)), depth=1).source
    assert folded_boxes(source) == [("blocks.0–3", "TransformerBlock", "4")], \
        f"expected one box 'blocks.0–3 · TransformerBlock ×4', got {folded_boxes(source)}"
    bars = re.findall(r'<td bgcolor="#[0-9a-f]{6}" fixedsize="true" width="12" height="(\d+)">',
                      source)
    assert len(bars) == 4 and max(map(int, bars)) == 24, \
        f"expected 4 bars, the largest block's full height (24), got {bars}"
    unfolded = viz.draw_graph(gpt_step(tiny_gpt(n_layer=4)), depth=1, fold=False).source
    assert not folded_boxes(unfolded) and unfolded.count("TransformerBlock") == 4, \
        "expected fold=False to draw the four blocks one box each"


def test_folding_makes_one_box_per_run_of_one_class_and_keeps_the_edges_between_runs():
    def module(key, name, cls, norm):
        return Node(key, "module", op=cls, name=name, shape=(2, 3), grad_norm=norm)

    nodes = {"in": Node("in", "op", op="add", shape=(2, 3))}
    classes = ["Block", "Block", "Block", "Mixer", "Block", "Block"]
    for i, cls in enumerate(classes):
        nodes[i] = module(i, f"layers.{i}", cls, norm=float(i + 1))
    chain = ["in"] + list(range(len(classes)))
    edges = [Edge(a, b, 0, 1.0) for a, b in zip(chain, chain[1:])]
    folded, kept_edges = fold_repeats(nodes, edges)
    runs = sorted((n.name, len(n.members)) for n in folded.values() if isinstance(n, FoldedNode))
    assert runs == [("layers.0–2", 3), ("layers.4–5", 2)], f"expected two runs, got {runs}"
    assert "layers.3" in [n.name for n in folded.values()], "expected the lone Mixer kept as it is"
    pairs = sorted((str(e.src), str(e.dst)) for e in kept_edges)
    expected = [("3", "fold:layers.4-5"), ("fold:layers.0-2", "3"), ("in", "fold:layers.0-2")]
    assert pairs == expected, \
        f"expected in → run → Mixer → run, got {pairs}"
    members = folded["fold:layers.0-2"].members
    assert members == [("layers.0", 1.0), ("layers.1", 2.0), ("layers.2", 3.0)], members


@pytest.mark.parametrize("size, inches", [("16:9", (40 / 3, 7.5)), ("4:3", (40 / 3, 10.0)),
                                          ("10x5.625", (10.0, 5.625)), ((8, 4.5), (8.0, 4.5))])
def test_a_page_is_a_ratio_of_a_13_33_inch_slide_or_inches(size, inches):
    assert page_size(size) == pytest.approx(inches), \
        f"expected {size!r} -> {inches}, got {page_size(size)}"


@pytest.mark.parametrize("size", ["16-9", "wide", "0x3", (1,), "3:0"])
def test_a_bad_page_size_is_refused_naming_the_value(size):
    with pytest.raises(ValueError, match=re.escape(repr(size))):
        page_size(size)


def slide_render(graph, fmt):
    return subprocess.run(["dot", f"-T{fmt}"], input=graph.source.encode(), capture_output=True,
                          check=True).stdout


@needs_dot
def test_a_16_9_png_at_144_dpi_is_1920_wide_or_1080_high(tmp_path):
    from PIL import Image

    graph = viz.draw_graph(small_loss(), size="16:9")
    path = viz.save(graph, str(tmp_path / "g.png"), dpi=144)
    width, height = Image.open(path).size
    assert (width == 1920 and height <= 1080) or (height == 1080 and width <= 1920), \
        f"expected the picture scaled to fit 1920 x 1080, got {width} x {height}"


def attention_graph(tiny_gpt, gpt_step):
    from models import GPT, GPTConfig

    model = GPT(GPTConfig(vocab_size=65, block_size=16, n_layer=1, n_head=4, n_embd=128,
                          bias=False))
    return viz.draw_graph(gpt_step(model, seq=16), focus="blocks.0.attn", size="16:9")


@needs_dot
def test_the_attention_slide_keeps_text_at_14_px_or_more_at_1920_by_1080(tiny_gpt, gpt_step):
    svg = slide_render(attention_graph(tiny_gpt, gpt_step), "svg").decode()
    page = re.search(r'<svg width="([\d.]+)pt" height="([\d.]+)pt"', svg)
    width, height = float(page.group(1)), float(page.group(2))
    scale = float(re.search(r"scale\(([\d.]+)", svg).group(1))
    smallest = min(float(f) for f in re.findall(r'font-size="([\d.]+)"', svg))
    # the picture fits the 960 x 540 pt page; on a 1920 x 1080 slide a point is 2 px
    assert width <= 960.5 and height <= 540.5, f"expected it to fit 16:9, got {width} x {height} pt"
    px = smallest * scale * 2
    assert px >= 14, f"expected text of at least 14 px on the slide, got {px:.1f} px"
    assert width / height > 1.4, f"expected a landscape picture, got {width:.0f} x {height:.0f} pt"


def inside(point, box):
    x, y = point
    return box[0] < x < box[2] and box[1] < y < box[3]


@needs_dot
def test_the_attention_layout_runs_no_edge_through_a_cluster_it_does_not_enter(tiny_gpt, gpt_step):
    layout = json.loads(slide_render(attention_graph(tiny_gpt, gpt_step), "json"))
    objects = layout["objects"]
    clusters = {o["_gvid"]: o for o in objects if o.get("name", "").startswith("cluster_")}
    members = {}
    for gvid, c in clusters.items():
        for node in c.get("nodes", []):
            members.setdefault(node, set()).add(gvid)
    boxes = {g: [float(v) for v in c["bb"].split(",")] for g, c in clusters.items()}
    crossings = []
    for e in layout["edges"]:
        own = members.get(e["tail"], set()) | members.get(e["head"], set())
        points = [tuple(map(float, p.split(","))) for p in re.findall(r"[\d.]+,[\d.]+",
                                                                       e["pos"].replace("e,", ""))]
        for gvid, box in boxes.items():
            if gvid not in own and any(inside(p, box) for p in points[1:-1]):
                crossings.append((objects[e["tail"]]["label"][:20],
                                  objects[e["head"]]["label"][:20], clusters[gvid]["name"]))
    assert not crossings, f"expected no edge through a foreign cluster, got {crossings}"


def test_a_leaf_without_a_name_is_numbered(read_dot):
    a, b = mt.randn(3, requires_grad=True), mt.randn(3, requires_grad=True)
    labels = read_dot(viz.draw_graph((a * b).sum())).labels()
    names = sorted(" ".join(label.split()[:2]) for label in labels if label.startswith("input"))
    assert names == ["input 1", "input 2"], f"expected 'input 1' and 'input 2', got {names}"
