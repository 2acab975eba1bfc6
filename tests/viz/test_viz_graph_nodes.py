"""draw_graph's boxes and edges: one box per recorded op, leaves named with their shapes, gradient
norms only after backward()."""
import re

import numpy as np
import pytest
from mt_testing import graph_nodes

import microtensor as mt
import nn
import viz


def recorded_functions(root):
    """Every op node behind `root`, walked through `grad_fn.inputs` (independently of viz)."""
    return graph_nodes(root)


def mlp_loss(backward):
    mlp = nn.Sequential(nn.Linear(4, 6), nn.ReLU(), nn.Linear(6, 3))
    x = mt.randn(5, 4, requires_grad=True, name="x")
    loss = (mlp(x) ** 2).mean()
    if backward:
        with viz.record_grad_norms():
            loss.backward()
    return loss


def op_boxes(dot):
    return [k for k, a in dot.nodes.items() if a.get("shape") == "box"]


def test_one_box_per_recorded_op_in_a_gpt(read_dot, tiny_gpt, gpt_step):
    loss = gpt_step(tiny_gpt())
    dot = read_dot(viz.draw_graph(loss))
    functions = recorded_functions(loss)
    assert len(op_boxes(dot)) == len(functions), \
        f"expected one box per recorded op ({len(functions)}), got {len(op_boxes(dot))}"
    for op in {f.op for f in functions}:
        expected = sum(f.op == op for f in functions)
        got = sum(1 for k in op_boxes(dot)
                  if re.search(rf"(^|\n){op}( |\n|$)", dot.nodes[k]["label"]))
        assert got == expected, f"op {op!r}: expected {expected} boxes, got {got}"


def test_every_edge_of_the_recorded_graph_is_drawn(read_dot):
    loss = mlp_loss(backward=False)
    dot = read_dot(viz.draw_graph(loss))
    # inputs that are no scalar constant: each is one edge into its op
    expected = sum(1 for f in recorded_functions(loss) for slot in range(len(f.inputs))
                   if slot not in f.constants)
    assert len(dot.edges) == expected, f"expected {expected} edges, got {len(dot.edges)}"


def test_op_boxes_show_the_op_and_its_output_shape(read_dot):
    dot = read_dot(viz.draw_graph(mlp_loss(backward=False)))
    labels = dot.labels()
    for text in ("matmul [5,6]", "relu [5,6]", "matmul [5,3]", "mean []"):
        assert text in labels, f"expected a box {text!r}; got {labels}"


def test_leaves_show_parameter_and_tensor_names_with_shapes(read_dot):
    dot = read_dot(viz.draw_graph(mlp_loss(backward=False)))
    leaves = {a["label"].split()[0]: a for a in dot.nodes.values() if a.get("shape") == "ellipse"}
    assert set(leaves) == {"x", "0.weight", "0.bias", "2.weight", "2.bias"}, \
        f"expected the input x and the four parameters, got {sorted(leaves)}"
    assert "[4,6]" in leaves["0.weight"]["label"] and "[5,4]" in leaves["x"]["label"], \
        f"expected shapes in the leaf labels, got {leaves['0.weight']['label']!r}, " \
        f"{leaves['x']['label']!r}"


def test_a_gpt_parameter_label_keeps_its_module_and_the_tooltip_the_full_name(read_dot, tiny_gpt,
                                                                             gpt_step):
    dot = read_dot(viz.draw_graph(gpt_step(tiny_gpt())))
    node = dot.find("q_proj.weight")
    tips = sorted(dot.nodes[k]["tooltip"] for k in node)
    assert tips == ["blocks.0.attn.q_proj.weight", "blocks.1.attn.q_proj.weight"], \
        f"expected the two q_proj weights, named in full in their tooltips; got {tips}"


def test_before_backward_the_same_call_draws_the_forward_graph_only(read_dot):
    graph = viz.draw_graph(mlp_loss(backward=False))
    dot = read_dot(graph)
    assert "‖g‖" not in graph.source, "expected no gradient norm before backward()"
    assert "forward graph" in graph.source, "expected the caption to say it is the forward graph"
    assert all("penwidth" not in attrs for _, _, attrs in dot.edges), "expected plain edges"


def test_after_backward_every_box_shows_its_gradient_norm(read_dot):
    loss = mlp_loss(backward=True)
    dot = read_dot(viz.draw_graph(loss))
    missing = [a["label"] for a in dot.nodes.values() if "‖g‖" not in a["label"]]
    assert not missing, f"expected ‖g‖ in every box after backward(), missing in {missing}"
    root = dot.find("mean")[0]
    assert dot.nodes[root]["label"].endswith("‖g‖ 1"), \
        f"expected ‖∂L/∂L‖ = 1 at the loss, got {dot.nodes[root]['label']!r}"


def test_a_parameter_box_shows_the_norm_of_its_grad(read_dot):
    mlp = nn.Linear(3, 2)
    loss = (mlp(mt.randn(4, 3)) ** 2).sum()
    with viz.record_grad_norms():
        loss.backward()
    dot = read_dot(viz.draw_graph(loss))
    (key,) = [k for k, a in dot.nodes.items() if a["label"].startswith("weight")]
    expected = f"‖g‖ {np.linalg.norm(mlp.weight.grad):.3g}"
    assert expected in dot.nodes[key]["label"], \
        f"expected {expected!r} in {dot.nodes[key]['label']!r}"


def test_edge_width_grows_with_the_gradient_on_a_log_scale(read_dot):
    a = mt.Tensor([1.0, 2.0], requires_grad=True, name="a")
    b = mt.Tensor([1.0, 2.0], requires_grad=True, name="b")
    c = mt.Tensor([1.0, 2.0], requires_grad=True, name="c")
    loss = (a * 0.01 + b * 1.0 + c * 100.0).sum()  # ‖∂L/∂·‖ = 0.01√2, √2, 100√2
    with viz.record_grad_norms():
        loss.backward()
    dot = read_dot(viz.draw_graph(loss))
    width = {dot.nodes[s]["label"].split()[0]: float(attrs["penwidth"])
             for s, _, attrs in dot.edges if dot.nodes[s]["label"].split()[0] in "abc"}
    assert width["a"] < width["b"] < width["c"], f"expected widths a < b < c, got {width}"
    middle = (width["a"] + width["c"]) / 2
    assert width["b"] == pytest.approx(middle, abs=0.02), \
        f"expected b (10^0, halfway between 10^-2 and 10^2 on a log scale) at {middle}, got " \
        f"{width['b']}"
    colours = {dot.nodes[s]["label"][0]: attrs["color"] for s, _, attrs in dot.edges
               if dot.nodes[s]["label"][0] in "ac"}
    assert colours["a"] != colours["c"], f"expected different colours, got {colours}"


def test_scale_constants_are_folded_into_their_op(read_dot):
    x = mt.randn(3, requires_grad=True, name="x")
    y = (x * 0.5).sum()
    dot = read_dot(viz.draw_graph(y))
    assert len(dot.nodes) == 3, \
        f"expected x, mul and sum boxes (the 0.5 folded), got {dot.labels()}"
    assert dot.find("mul ×0.5"), f"expected the constant in the mul box, got {dot.labels()}"



def test_a_named_constant_reads_its_name_and_an_unnamed_one_is_numbered(read_dot):
    x = mt.randn(2, 3, requires_grad=True, name="x")
    table = mt.Tensor(np.ones((2, 3)), name="positions (sinusoidal)")
    y = (x + table + np.ones((2, 3))).sum()
    labels = sorted(a["label"] for a in read_dot(viz.draw_graph(y)).nodes.values()
                    if a.get("shape") == "ellipse")
    assert labels == ["const 1 [2,3]", "positions (sinusoidal) [2,3]", "x [2,3]"], \
        f"expected the named table, one numbered constant and x; got {labels}"


def test_the_encoder_decoders_position_tables_are_named_in_its_picture(read_dot):
    from models.seq2seq import Seq2SeqTransformer
    from models.tasks import dates as task
    from models.training.settings import TranslateConfig

    src_tok, tgt_tok = task.source_tokenizer(), task.target_tokenizer()
    config = TranslateConfig(d_model=8, n_heads=2, n_encoder_layers=1, n_decoder_layers=1,
                             d_ff=16)
    model = Seq2SeqTransformer(config.model_config())
    _, loss = model(*task.encode_batch([("3 Mar 1999", "1999-03-03")], src_tok, tgt_tok))
    dot = read_dot(viz.draw_graph(loss, depth=1))
    named = sorted(a["label"] for a in dot.nodes.values() if "positions" in a["label"])
    assert named == ["positions (sinusoidal) [10,8]", "positions (sinusoidal) [11,8]"], \
        f"expected a source and a target table; got {named}"
    assert not [a for a in dot.nodes.values() if a["label"].startswith("const")], \
        f"expected no anonymous constant; got {dot.labels()}"

def test_show_saved_lists_what_backward_keeps(read_dot):
    x = mt.randn(2, 3, requires_grad=True, name="x")
    y = x.exp().sum()
    dot = read_dot(viz.draw_graph(y, show_saved=True))
    (key,) = dot.find("exp")
    assert "saved:" in dot.nodes[key]["label"] and "[2,3]" in dot.nodes[key]["label"], \
        f"expected the saved output [2,3] in the exp box, got {dot.nodes[key]['label']!r}"


def test_bad_arguments_are_refused():
    loss = mlp_loss(backward=False)
    with pytest.raises(ValueError, match="depth must be >= 1"):
        viz.draw_graph(loss, depth=0)
    with pytest.raises(ValueError, match="rankdir"):
        viz.draw_graph(loss, rankdir="up")


def test_the_graph_displays_in_jupyter():
    graph = viz.draw_graph(mlp_loss(backward=False))
    assert hasattr(graph, "_repr_mimebundle_"), "expected graphviz's Jupyter display hook"
