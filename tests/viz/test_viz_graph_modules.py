"""Module grouping in draw_graph: one cluster per module, depth=k folds modules into single boxes,
focus= draws one module's inside."""
import pytest

import viz


def module_boxes(dot):
    """{first label line: label} of the folded-module boxes (drawn as 3-D boxes)."""
    return {a["label"].split("\n")[0]: a["label"] for a in dot.nodes.values()
            if a.get("shape") == "box3d"}


def test_one_cluster_per_module_labelled_with_its_class(read_dot, tiny_gpt, gpt_step):
    model = tiny_gpt(n_layer=2)
    dot = read_dot(viz.draw_graph(gpt_step(model)))
    modules = {path: type(m).__name__ for path, m in model.named_modules()
               if path and type(m).__name__ not in ("ModuleList", "Dropout")}  # these record no op
    assert set(dot.clusters) == set(modules), \
        f"expected one cluster per module {sorted(modules)}, got {sorted(dot.clusters)}"
    assert dot.clusters["blocks.1.attn"] == "attn  MultiHeadAttention", \
        f"expected a nested cluster named by its last unit and class, got " \
        f"{dot.clusters['blocks.1.attn']!r}"
    assert dot.clusters["blocks.1"] == "blocks.1  TransformerBlock", dot.clusters["blocks.1"]


def test_ops_sit_in_the_cluster_of_the_module_that_ran_them(read_dot, tiny_gpt, gpt_step):
    dot = read_dot(viz.draw_graph(gpt_step(tiny_gpt())))
    softmaxes = sorted(dot.cluster_of[k] for k in dot.find("softmax\n"))
    assert softmaxes == ["blocks.0.attn", "blocks.1.attn"], \
        f"expected one attention softmax in each block's attn cluster, got {softmaxes}"
    (head,) = dot.find("cross_entropy")
    assert dot.cluster_of[head] == "", "expected the loss outside every module cluster"


def test_depth_1_folds_the_gpt_into_embeddings_blocks_and_final_norm(read_dot, tiny_gpt, gpt_step):
    dot = read_dot(viz.draw_graph(gpt_step(tiny_gpt(n_layer=3)), depth=1, fold=False))
    boxes = module_boxes(dot)
    assert set(boxes) == {"wte", "wpe", "blocks.0", "blocks.1", "blocks.2", "ln_f"}, \
        f"expected one box per top-level module (a list index stays with its list), got " \
        f"{sorted(boxes)}"
    assert "TransformerBlock\n[2,8,8]" in boxes["blocks.1"], \
        f"expected the block's class and output shape, got {boxes['blocks.1']!r}"
    assert not dot.clusters, f"expected no clusters left at depth 1, got {sorted(dot.clusters)}"
    assert not dot.find("softmax"), "expected the attention ops folded away"


def test_the_depth_1_baby_gpt_fits_one_slide(read_dot, gpt_step):
    from models import GPT, GPTConfig
    from models.training.settings import PRESETS

    c = PRESETS["baby"]
    model = GPT(GPTConfig(vocab_size=65, block_size=c.block_size, n_layer=c.n_layer,
                          n_head=c.n_head, n_embd=c.n_embd, bias=c.bias))
    dot = read_dot(viz.draw_graph(gpt_step(model, seq=8), depth=1, fold=False))
    assert len(dot.nodes) <= 16, \
        f"expected at most 16 boxes for one slide, got {len(dot.nodes)}: {dot.labels()}"
    assert len(module_boxes(dot)) == c.n_layer + 3, f"expected {c.n_layer} blocks + wte, wpe, ln_f"


def test_a_tied_weight_leaving_a_folded_module_is_named_on_its_edge(read_dot, tiny_gpt, gpt_step):
    dot = read_dot(viz.draw_graph(gpt_step(tiny_gpt()), depth=1))
    labelled = [attrs["label"] for _, _, attrs in dot.edges if "label" in attrs]
    assert labelled == ["wte.weight [11,8]"], \
        f"expected the LM head's read of wte.weight [V, D] to be named, got {labelled}"
    wte = [a["label"] for a in dot.nodes.values() if a["label"].startswith("wte")]
    assert "[2,8,8]" in wte[0], f"expected wte's box to show its output [B,T,D], got {wte}"


def test_depth_2_keeps_the_residual_adds_between_folded_sublayers(read_dot, tiny_gpt, gpt_step):
    dot = read_dot(viz.draw_graph(gpt_step(tiny_gpt(n_layer=2)), depth=2))
    boxes = module_boxes(dot)
    assert {"ln_1", "attn", "ln_2", "mlp"} <= set(boxes), \
        f"expected the block's sub-layers as boxes, got {sorted(boxes)}"
    assert len(dot.find("(residual)")) == 4, "expected two residual adds per block"
    assert set(dot.clusters) == {"blocks.0", "blocks.1", "wte", "wpe", "ln_f"}, sorted(dot.clusters)


def test_folding_merges_edges_and_keeps_the_largest_gradient(read_dot, tiny_gpt, gpt_step):
    dot = read_dot(viz.draw_graph(gpt_step(tiny_gpt()), depth=1))
    pairs = [(s, d) for s, d, _ in dot.edges]
    assert len(pairs) == len(set(pairs)), f"expected one edge per pair of boxes, got {pairs}"


def test_focus_draws_only_the_inside_of_one_module(read_dot, tiny_gpt, gpt_step):
    dot = read_dot(viz.draw_graph(gpt_step(tiny_gpt()), focus="blocks.0.attn"))
    outside = [k for k, a in dot.nodes.items()
               if "dashed" not in a["style"] and dot.cluster_of[k] == ""]
    assert not outside, \
        f"expected every solid box inside blocks.0.attn, got " \
        f"{[dot.nodes[k]['label'] for k in outside]}"
    assert "blocks.0.attn" in dot.clusters and "blocks.0" not in dot.clusters, \
        f"expected the focused module as the outer cluster, got {sorted(dot.clusters)}"
    assert not any("blocks.1" in a.get("tooltip", "") for a in dot.nodes.values()), \
        "expected nothing of blocks.1"
    assert len(dot.find("softmax")) == 1, "expected the one softmax of blocks.0.attn"


def test_focus_shows_what_feeds_in_and_what_reads_out_as_dashed_boxes(read_dot, tiny_gpt, gpt_step):
    dot = read_dot(viz.draw_graph(gpt_step(tiny_gpt()), focus="blocks.0.attn"))
    dashed = sorted(a["label"].split("\n")[0] for a in dot.nodes.values() if "dashed" in a["style"])
    assert dashed == ["from blocks.0.ln_1: layer_norm [2,8,8]", "to blocks.0: add [2,8,8]"], \
        f"expected ln_1 feeding in and the residual add reading out, got {dashed}"


def test_focus_with_depth_counts_from_the_focused_module(read_dot, tiny_gpt, gpt_step):
    dot = read_dot(viz.draw_graph(gpt_step(tiny_gpt()), focus="blocks.1", depth=1))
    assert set(module_boxes(dot)) == {"ln_1", "attn", "ln_2", "mlp"}, sorted(module_boxes(dot))
    inside = [k for k in dot.find("(residual)") if dot.cluster_of[k] == "blocks.1"]
    assert len(inside) == 2, f"expected the two residual adds of blocks.1, got {len(inside)}"


def test_focus_on_an_unknown_module_lists_the_modules(tiny_gpt, gpt_step):
    loss = gpt_step(tiny_gpt(n_layer=1), backward=False)
    with pytest.raises(ValueError, match=r"focus='blocks.7' matches no module.*blocks.0.attn"):
        viz.draw_graph(loss, focus="blocks.7")
