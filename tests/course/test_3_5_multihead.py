"""Notes 3.5: multi-head attention is not one A copied H times.

Each head h has its own slice of the projections (columns h·d..(h+1)·d of W_Q, W_K,
W_V), attends on its own, and W_O mixes the concatenated heads. The shapes run
[B, T, D] → [B, T, H, d] → [B, H, T, d] → scores [B, H, T, T] → context [B, H, T, d]
→ [B, T, D]. With D fixed, MHA has 4D² weights (+4D biases) whatever H is; with the
per-head width d fixed, more heads make the model wider and its compute larger.
"""
import math

import numpy as np
import pytest
from mt_testing import check_close, check_shape, np_softmax, recorded_steps, to_float64

import microtensor as mt
import nn


def _first_input_chain(node, steps):
    """A graph node and the nodes reached by following each one's first input, `steps` times."""
    chain = [node]
    for _ in range(steps):
        chain.append(chain[-1].inputs[0])
    return chain


def test_each_head_attends_with_its_own_slice_of_the_projections():
    b, t, d_model, h = 2, 5, 12, 3
    d = d_model // h
    mha = to_float64(nn.MultiHeadAttention(d_model, h, keep_attention=True))
    x = np.random.default_rng(0).normal(size=(b, t, d_model))
    mha(mt.Tensor(x))
    a = mha.last_attention.data                              # [B, H, T, T]
    for head in range(h):
        cols = slice(head * d, (head + 1) * d)
        q = x @ mha.q_proj.weight.data[:, cols] + mha.q_proj.bias.data[cols]
        k = x @ mha.k_proj.weight.data[:, cols] + mha.k_proj.bias.data[cols]
        expected = np_softmax(q @ np.swapaxes(k, 1, 2) / math.sqrt(d))
        check_close(
            a[:, head], expected, f"head {head}'s A from its own W_Q, W_K columns", atol=1e-12
        )
    for h1 in range(h):
        for h2 in range(h1 + 1, h):
            gap = np.abs(a[:, h1] - a[:, h2]).max()
            assert gap > 0.05, (
                f"heads {h1} and {h2}: expected different attention maps, got max gap {gap:.3g}"
            )


def test_shapes_B_T_D_to_heads_to_scores_and_back():
    b, t, d_model, h = 2, 5, 24, 3
    d = d_model // h
    mha = nn.MultiHeadAttention(d_model, h)
    x = mt.randn(b, t, d_model, requires_grad=True)
    with recorded_steps() as steps:
        out = mha(x)
    # the query path, walking back from QKᵀ: transpose ← reshape ← projection
    q_heads, q_split, q_flat = _first_input_chain(steps["QKᵀ"].grad_fn, 3)[1:]
    check_shape(q_flat, (b, t, d_model), "Q = X W_Q [B, T, D]")
    assert q_split.op == "reshape", f"expected a reshape to [B, T, H, d], got {q_split.op}"
    check_shape(q_split, (b, t, h, d), "Q reshaped [B, T, H, d]")
    assert q_heads.op == "transpose", f"expected a transpose to [B, H, T, d], got {q_heads.op}"
    check_shape(q_heads, (b, h, t, d), "Q per head [B, H, T, d]")
    check_shape(steps["S"], (b, h, t, t), "scores S [B, H, T, T]")
    check_shape(steps["A"], (b, h, t, t), "A [B, H, T, T]: H matrices of T×T")
    check_shape(steps["Z"], (b, h, t, d), "context per head [B, H, T, d]")
    # the merge, walking back from the output projection's matmul
    out_matmul = next(n for n in _first_input_chain(out.grad_fn, 3) if n.op == "matmul")
    merged, swapped, z = _first_input_chain(out_matmul, 3)[1:]
    assert z is steps["Z"].grad_fn, "the output projection should read the heads' context Z"
    check_shape(swapped, (b, t, h, d), "context transposed [B, T, H, d]")
    check_shape(merged, (b, t, d_model), "heads concatenated [B, T, D]")
    check_shape(out, (b, t, d_model), "MHA output [B, T, D]")


@pytest.mark.parametrize("n_heads", [1, 2, 3, 4, 6, 12])
def test_mha_has_4_D_squared_weights_plus_4_D_biases_whatever_H(n_heads):
    d_model = 12
    with_bias = sum(p.size for p in nn.MultiHeadAttention(d_model, n_heads).parameters())
    without = sum(p.size for p in nn.MultiHeadAttention(d_model, n_heads, bias=False).parameters())
    assert without == 4 * d_model**2, f"H={n_heads}: expected 4D² = {4 * d_model**2}, got {without}"
    assert with_bias == 4 * d_model ** 2 + 4 * d_model, \
        f"H={n_heads}: expected 4D² + 4D = {4 * d_model ** 2 + 4 * d_model}, got {with_bias}"


def _cost(b, t, d_model, h):
    """(matmul FLOPs of projections, of QKᵀ + AV, elements of A), by microtensor.profile()."""
    mha = nn.MultiHeadAttention(d_model, h, bias=False)
    x = mt.randn(b, t, d_model)
    with mt.profile() as prof:
        mha(x)
    proj = prof.flops(op="matmul", where=lambda r: r.module.endswith("_proj"))
    scores = prof.flops(op="matmul") - proj
    a_elements = sum(int(np.prod(r.out_shape)) for r in prof.records if r.op == "softmax")
    return proj, scores, a_elements


def test_with_D_fixed_more_heads_keep_the_flops_but_add_score_matrices():
    b, t, d_model = 2, 6, 24
    for h in (1, 2, 4, 8):
        proj, scores, a_elements = _cost(b, t, d_model, h)
        assert proj == 8 * b * t * d_model**2, f"H={h}: projection FLOPs expected 8BTD², got {proj}"
        assert scores == 4 * b * t * t * d_model, (
            f"H={h}: QKᵀ+AV FLOPs expected 4BT²D, got {scores}"
        )
        assert a_elements == b * h * t * t, (
            f"H={h}: A expected B·H·T² = {b * h * t * t} elements, got {a_elements}"
        )


def test_with_head_width_fixed_more_heads_make_the_model_wider_and_costlier():
    b, t, d = 2, 6, 4
    costs = {}
    for h in (1, 2, 4):
        d_model = h * d
        mha = nn.MultiHeadAttention(d_model, h, bias=False)
        params = sum(p.size for p in mha.parameters())
        assert params == 4 * d_model**2, (
            f"H={h}, d={d}: expected 4(Hd)² = {4 * d_model**2}, got {params}"
        )
        costs[h] = sum(_cost(b, t, d_model, h)[:2])
        expected = 8 * b * t * d_model ** 2 + 4 * b * t * t * d_model
        assert costs[h] == expected, (
            f"H={h}, D={d_model}: FLOPs expected {expected}, got {costs[h]}"
        )
    assert costs[1] < costs[2] < costs[4], f"FLOPs should grow with H at fixed d, got {costs}"
