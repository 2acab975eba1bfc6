"""Backprop step by step (one frame per graph node, in backward's order) and the node overlays
(FLOPs and saved bytes equal to microtensor.profile()'s, gradients on edges)."""
import re

import numpy as np
import pytest
from mt_testing import needs_dot

import microtensor as mt
import nn
import viz
from viz.overlay import node_records
from viz.style import fmt_count


def mlp_step():
    """(loss, order): a two-layer MLP's loss after a backward() whose node order was noted."""
    mlp = nn.Sequential(nn.Linear(4, 6), nn.ReLU(), nn.Linear(6, 3))
    x = mt.randn(5, 4, requires_grad=True, name="x")
    loss = (mlp(x) ** 2).mean()
    with viz.record_backward_order() as order:
        loss.backward()
    return loss, order


def highlighted(frame):
    """The first label line of the one box drawn with the highlight's red border."""
    (line,) = [ln for ln in frame.body if 'color="#d62728"' in ln and "penwidth=4" in ln]
    return re.search(r'label="([^"\n]*)', line).group(1)


def test_one_frame_per_backward_node_in_the_order_backward_processed_them():
    loss, order = mlp_step()
    nodes, _ = viz.trace(loss)
    frames = viz.backprop_frames(loss, order)
    assert len(frames) == len(order) == len(nodes), \
        f"expected one frame per node backward() processed ({len(order)}), got {len(frames)}"
    expected = [(nodes[k].op + (f" ^{nodes[k].consts[-1]:.4g}" if nodes[k].op == "pow" else "")
                 or nodes[k].name) for k in order]  # pow's label carries its exponent
    got = [highlighted(f).split(" [")[0].split("  (")[0] for f in frames]
    assert got == expected, f"expected frames in backward's order {expected}, got {got}"
    assert got[0] == "mean" and nodes[order[-1]].kind in ("param", "input"), \
        f"expected backward to start at the loss and end at a leaf, got {got[0]} … {got[-1]}"


def test_backward_order_is_the_reverse_of_a_topological_order():
    loss, order = mlp_step()
    _, edges = viz.trace(loss)
    position = {key: i for i, key in enumerate(order)}
    late = [(e.src, e.dst) for e in edges if position[e.src] < position[e.dst]]
    assert not late, f"expected every node processed after all the nodes that read it, got {late}"


def test_a_frame_shows_only_the_gradients_known_so_far():
    loss, order = mlp_step()
    frames = viz.backprop_frames(loss, order)
    for i, frame in enumerate(frames):
        unknown = frame.source.count("‖g‖ ?")
        assert unknown == len(frames) - 1 - i, \
            f"frame {i}: expected {len(frames) - 1 - i} boxes still waiting, got {unknown}"


def test_frames_need_a_recorded_order():
    loss, _ = mlp_step()
    with pytest.raises(ValueError, match="record_backward_order"):
        viz.backprop_frames(loss, [])


@needs_dot
@pytest.mark.parametrize("suffix", [".gif", ".pdf"])
def test_the_frames_become_an_animated_gif_or_a_multi_page_pdf(tmp_path, suffix):
    from PIL import Image

    loss, order = mlp_step()
    frames = viz.backprop_frames(loss, order)[:3]
    path = viz.save_animation(frames, str(tmp_path / ("step" + suffix)), dpi=40)
    if suffix == ".gif":
        count = Image.open(path).n_frames
    else:
        with open(path, "rb") as f:
            count = len(re.findall(rb"/Type\s*/Page\b(?!s)", f.read()))
    assert count == 3, f"expected 3 frames (pages) in {suffix}, got {count}"


def attention_costs():
    mha = nn.MultiHeadAttention(16, 2, bias=True)
    x = mt.randn(2, 5, 16, requires_grad=True)
    with mt.profile() as prof, viz.record_costs() as ours:
        out = mha(x, is_causal=True)
    return out.sum(), prof, ours


def test_overlay_records_equal_microtensor_profiles_numbers_op_by_op():
    root, prof, ours = attention_costs()

    def rows(records):
        return sorted((r.op, r.module, r.flops, sum(n for _, n, _ in r.saved.values()))
                      for r in records)

    records = node_records(root)
    ops = [n for n in viz.trace(root)[0].values() if n.kind == "op"]
    assert len(records) == len(prof.records) == len(ops) - 1, \
        f"expected one record per op of the graph but the sum run after profiling, got " \
        f"{len(records)} records, {len(prof.records)} profiled, {len(ops)} ops"
    assert rows(records.values()) == rows(prof.records), \
        "expected each box's record to be one of profile()'s, with the same FLOPs and bytes"
    assert ours.flops() == prof.flops() and ours.saved_bytes() == prof.saved_bytes(), \
        f"expected the same totals, got {ours.flops()} vs {prof.flops()} FLOPs"


def test_the_flops_overlay_prints_each_ops_profile_count_in_its_box(read_dot):
    root, prof, _ = attention_costs()
    dot = read_dot(viz.draw_graph(root, overlay="flops"))
    printed = sorted(a["label"].split("\n")[-1] for a in dot.nodes.values()
                     if a["label"].endswith("FLOP"))
    expected = sorted(fmt_count(r.flops, "FLOP") for r in node_records(root).values())
    assert printed == expected, f"expected the profile's counts {expected}, got {printed}"
    matmuls = [r.flops for r in node_records(root).values() if r.op == "matmul"]
    assert sorted(matmuls) == sorted(r.flops for r in prof.records if r.op == "matmul"), \
        "expected every matmul's count to be profile()'s"


def test_a_folded_module_shows_the_sum_of_its_ops(read_dot, tiny_gpt):
    model = tiny_gpt(n_layer=2)
    ids = np.random.default_rng(0).integers(0, 11, (2, 9))
    with mt.profile() as prof, viz.record_costs():
        _, loss = model(ids[:, :-1], ids[:, 1:])
    dot = read_dot(viz.draw_graph(loss, depth=1, fold=False, overlay="saved"))
    (ln_f,) = [a["label"] for a in dot.nodes.values() if a["label"].startswith("ln_f\n")]
    assert ln_f.endswith("saved " + fmt_count(prof.saved_bytes(module="ln_f"), "B")), \
        f"expected ln_f's saved bytes {prof.saved_bytes(module='ln_f')}, got {ln_f!r}"


def test_the_grad_overlay_numbers_every_edge_and_costs_need_recording(read_dot):
    loss, _ = mlp_step()
    dot = read_dot(viz.draw_graph(loss, overlay="grad"))
    numbers = [attrs.get("label", "") for _, _, attrs in dot.edges]
    assert all(re.fullmatch(r"-?[\d.]+(e-?\d+)?", n) for n in numbers), \
        f"expected a number on every edge, got {[a.get('label') for _, _, a in dot.edges]}"
    with pytest.raises(ValueError, match="record_costs"):
        viz.draw_graph(loss, overlay="flops")
    with pytest.raises(ValueError, match="overlay"):
        viz.draw_graph(loss, overlay="time")
