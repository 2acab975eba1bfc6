"""The teaching marks of draw_graph: residual skip vs branch edges with their gradient norms (notes
3.6), and the S, A, Z attention chain (notes 3.1–3.5)."""
import numpy as np

import microtensor as mt
import nn
import viz
from nn.block import residual


def marked(dot, kind):
    return [(s, d, attrs) for s, d, attrs in dot.edges if attrs.get("label", "").startswith(kind)]


def test_a_residual_add_marks_one_skip_and_one_branch_edge_with_their_gradients(read_dot):
    x = mt.randn(3, 4, requires_grad=True, name="x")
    w = mt.randn(4, 4, requires_grad=True, name="W")
    y = residual(x, (x @ w).tanh())                   # y = x + F(x)
    y.retain_grad()
    loss = (y * mt.randn(3, 4)).sum()
    with viz.record_grad_norms():
        loss.backward()
    dot = read_dot(viz.draw_graph(loss))
    (skip,), (branch,) = marked(dot, "skip"), marked(dot, "branch")
    # ∂L/∂x = ∂L/∂y (through I, the skip) + the part through ∂F/∂x (the branch)
    through_skip = np.linalg.norm(y.grad)
    through_branch = np.linalg.norm(x.grad - y.grad)
    assert skip[2]["label"] == f"skip {through_skip:.3g}", \
        f"expected the skip edge labelled with ‖∂L/∂y‖ = {through_skip:.3g}, got " \
        f"{skip[2]['label']!r}"
    assert branch[2]["label"] == f"branch {through_branch:.3g}", \
        f"expected the branch edge labelled {through_branch:.3g}, got {branch[2]['label']!r}"
    assert skip[0] == branch[0], "expected both edges to leave the same tensor x"
    assert dot.nodes[skip[1]]["label"].startswith("add  (residual)"), \
        "expected the skip to enter the add"
    assert skip[2]["style"] != branch[2]["style"], "expected the two paths drawn differently"


def test_each_block_has_two_skips_and_two_branches(read_dot, tiny_gpt, gpt_step):
    dot = read_dot(viz.draw_graph(gpt_step(tiny_gpt(n_layer=3))))
    assert len(marked(dot, "skip")) == 6 and len(marked(dot, "branch")) == 6, \
        f"expected 2 skip and 2 branch edges per block (6 each), got " \
        f"{len(marked(dot, 'skip'))}, {len(marked(dot, 'branch'))}"


def test_post_norm_blocks_are_marked_too(read_dot, tiny_gpt, gpt_step):
    dot = read_dot(viz.draw_graph(gpt_step(tiny_gpt(n_layer=1, norm_first=False))))
    branches = [dot.nodes[d]["label"].split()[0] for _, d, _ in marked(dot, "branch")]
    # post-norm x + F(x): the branch starts at the attention's three projections and the MLP
    assert sorted(branches) == ["matmul"] * 4, f"expected q, k, v and MLP matmuls, got {branches}"


def test_before_backward_the_residual_edges_are_marked_without_norms(read_dot, tiny_gpt, gpt_step):
    dot = read_dot(viz.draw_graph(gpt_step(tiny_gpt(n_layer=1), backward=False)))
    labels = sorted(attrs["label"] for _, _, attrs in marked(dot, "skip") + marked(dot, "branch"))
    assert labels == ["branch", "branch", "skip", "skip"], f"expected bare marks, got {labels}"


def attention_chain(dot):
    """The S, A, Z boxes in data order, following edges from QKᵀ."""
    next_of = {s: d for s, d, _ in dot.edges}
    (key,) = dot.find("QKᵀ\n")
    chain = [key]
    while not dot.nodes[chain[-1]]["label"].startswith("Z = AV"):
        chain.append(next_of[chain[-1]])
    return [dot.nodes[k]["label"].split("\n") for k in chain]


def test_self_attention_is_the_chain_qkt_scale_mask_softmax_times_v(read_dot):
    mha = nn.MultiHeadAttention(8, 2)
    x = mt.randn(2, 5, 8, requires_grad=True, name="X")
    loss = (mha(x, is_causal=True) ** 2).sum()
    with viz.record_grad_norms():
        loss.backward()
    chain = attention_chain(read_dot(viz.draw_graph(loss)))
    titles = [lines[0] for lines in chain]
    assert titles == ["QKᵀ", "S = QKᵀ/√d_k", "mask: S → −∞ where blocked",
                      "A = softmax(S)  (rows over keys)", "Z = AV"], f"got {titles}"
    assert chain[1][1] == "mul ×1/√4", \
        f"expected the scale 1/√d_k with d_k = 4, got {chain[1][1]!r}"
    shapes = [lines[2] for lines in chain]
    assert shapes == ["[B,H,T,T] = [2,2,5,5]"] * 4 + ["[B,H,T,d_v] = [2,2,5,4]"], f"got {shapes}"


def test_cross_attention_keeps_t_q_and_t_k_apart(read_dot):
    mha = nn.MultiHeadAttention(8, 2)
    x, memory = mt.randn(1, 3, 8, requires_grad=True), mt.randn(1, 6, 8, requires_grad=True)
    out = mha(x, context=memory)
    chain = attention_chain(read_dot(viz.draw_graph(out.sum())))
    shapes = [lines[2] for lines in chain]
    assert shapes == ["[B,H,T_q,T_k] = [1,2,3,6]"] * 3 + ["[B,H,T_q,d_v] = [1,2,3,4]"], \
        f"expected T_q = 3 queries over T_k = 6 keys, no mask step, got {shapes}"


def test_attention_boxes_stand_out_by_colour(read_dot, tiny_gpt, gpt_step):
    dot = read_dot(viz.draw_graph(gpt_step(tiny_gpt(n_layer=1))))
    colours = {dot.nodes[k]["fillcolor"] for k in dot.find("A = softmax")}
    plain = {dot.nodes[k]["fillcolor"] for k in dot.find("reshape")}
    assert colours and colours.isdisjoint(plain), \
        f"expected attention fill {colours} unlike {plain}"
