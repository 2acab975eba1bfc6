"""Notes 3.8: the backward pass of attention, and what attention costs.

With G = ∂L/∂Z and Z = AV:  ∂L/∂V = AᵀG,  ∂L/∂A = GVᵀ; each softmax row then gives
ds = a ⊙ (da − Σ a ⊙ da), and S = QKᵀ/√d_k passes it on to Q and K. Future keys that
the hard mask blocks receive no gradient through A. Costs (a multiply-add counts 2):
projections 8BTD², QKᵀ and AV 4BT²D, and the attention matrix holds B·H·T² numbers.
"""
import math

import numpy as np
import pytest
from mt_testing import check_close, recorded_steps

import microtensor as mt
import nn


def _setup(is_causal=False, t_q=4, t_k=4, d_k=3, d_v=5, seed=0):
    """q, k, v leaves, the forward's A, S and Z (intermediates keep .grad), and upstream G."""
    rng = np.random.default_rng(seed)
    q, k = (mt.Tensor(rng.normal(size=(t, d_k)), requires_grad=True) for t in (t_q, t_k))
    v = mt.Tensor(rng.normal(size=(t_k, d_v)), requires_grad=True)
    with recorded_steps() as steps:
        z, a = nn.scaled_dot_product_attention(q, k, v, is_causal=is_causal)
    s = steps["S"]                                           # before the mask, if any
    for tensor in (a, s, z):
        tensor.retain_grad()
    g = rng.normal(size=z.shape)
    (z * g).sum().backward()                                  # L = Σ G ⊙ Z, so ∂L/∂Z = G
    return q, k, v, a, s, z, g


def test_dL_dV_is_A_transpose_G():
    q, k, v, a, s, z, g = _setup(t_q=3, t_k=6)
    check_close(z.grad, g, "∂L/∂Z = G", atol=0)
    check_close(v.grad, a.data.T @ g, "∂L/∂V = AᵀG", atol=1e-12)


def test_dL_dA_is_G_V_transpose():
    q, k, v, a, s, z, g = _setup(t_q=3, t_k=6)
    check_close(a.grad, g @ v.data.T, "∂L/∂A = GVᵀ", atol=1e-12)


def test_softmax_row_gradient_is_a_times_da_minus_its_weighted_mean():
    q, k, v, a, s, z, g = _setup()
    da = g @ v.data.T
    by_formula = a.data * (da - (a.data * da).sum(axis=-1, keepdims=True))
    check_close(s.grad, by_formula, "∂L/∂S = a ⊙ (da − Σ a ⊙ da), row by row", atol=1e-12)
    # the same as multiplying each row's Jacobian p_i(δ_ij − p_j) into da
    by_jacobian = np.stack([(np.diag(p) - np.outer(p, p)) @ d for p, d in zip(a.data, da)])
    check_close(s.grad, by_jacobian, "∂L/∂S via the explicit softmax Jacobian", atol=1e-12)


def test_scores_pass_the_gradient_to_q_and_k():
    q, k, v, a, s, z, g = _setup(t_q=3, t_k=5)
    ds = s.grad / math.sqrt(q.shape[-1])                      # through S = QKᵀ/√d_k
    check_close(q.grad, ds @ k.data, "∂L/∂Q = (∂L/∂S / √d_k) K", atol=1e-12)
    check_close(k.grad, ds.T @ q.data, "∂L/∂K = (∂L/∂S / √d_k)ᵀ Q", atol=1e-12)


@pytest.mark.parametrize("is_causal", [False, True])
def test_attention_backward_agrees_with_finite_differences(is_causal):
    rng = np.random.default_rng(1)
    q, k, v = (mt.Tensor(rng.normal(size=(4, 3)), requires_grad=True) for _ in range(3))
    w = rng.normal(size=(4, 3))

    def loss(q, k, v):
        return (nn.scaled_dot_product_attention(q, k, v, is_causal=is_causal)[0] * w).sum()

    assert mt.gradcheck(loss, [q, k, v]), "gradcheck returns True or raises with both values"


def test_blocked_future_positions_get_zero_gradient_through_a():
    q, k, v, a, s, z, g = _setup(is_causal=True, t_q=5, t_k=5)
    future = np.triu(np.ones((5, 5), dtype=bool), k=1)
    assert np.all(s.grad[future] == 0), (
        f"∂L/∂S at blocked entries: expected exactly 0, got {s.grad[future]}"
    )
    assert np.abs(s.grad[~future]).max() > 1e-3, "visible entries should carry gradient"
    # the first query's output alone: nothing reaches the keys and values of positions 1..4
    rng = np.random.default_rng(2)
    q, k, v = (mt.Tensor(rng.normal(size=(5, 3)), requires_grad=True) for _ in range(3))
    z, _ = nn.scaled_dot_product_attention(q, k, v, is_causal=True)
    z[0].sum().backward()
    check_close(k.grad[1:], np.zeros((4, 3)), "∂z₀/∂k_j for future j", atol=0)
    check_close(v.grad[1:], np.zeros((4, 3)), "∂z₀/∂v_j for future j", atol=0)
    check_close(v.grad[0], np.ones(3), "∂(Σ z₀)/∂v₀: z₀ = v₀ exactly", atol=0)


@pytest.mark.parametrize("b,t,d_model,h", [(2, 5, 24, 3), (1, 16, 32, 4), (3, 7, 12, 6)])
def test_attention_flops_and_matrix_size_follow_the_formulas(b, t, d_model, h):
    mha = nn.MultiHeadAttention(d_model, h, bias=False)
    x = mt.randn(b, t, d_model, requires_grad=True)
    with mt.profile() as prof:
        mha(x, is_causal=True)
    projections = prof.flops(op="matmul", where=lambda r: r.module.endswith("_proj"))
    scores = prof.flops(op="matmul", where=lambda r: not r.module.endswith("_proj"))
    softmax = [r for r in prof.records if r.op == "softmax"]
    # independent counts: 4 projections of [B·T, D] @ [D, D];
    # per head [T, d] @ [d, T] and [T, T] @ [T, d]
    d = d_model // h
    assert projections == 4 * 2 * (b * t) * d_model * d_model == 8 * b * t * d_model ** 2, \
        f"projection FLOPs: expected 8BTD² = {8 * b * t * d_model ** 2:,}, got {projections:,}"
    assert scores == b * h * 2 * (2 * t * d * t) == 4 * b * t * t * d_model, \
        f"QKᵀ + AV FLOPs: expected 4BT²D = {4 * b * t * t * d_model:,}, got {scores:,}"
    assert [r.out_shape for r in softmax] == [(b, h, t, t)], (
        f"A: expected one [B, H, T, T], got {softmax}"
    )
    kept = prof.saved_bytes(op="softmax")
    assert kept == b * h * t * t * 4, \
        f"softmax keeps A for backward: expected B·H·T²·4 = {b * h * t * t * 4} bytes, got {kept}"
