"""Notes 3.1: why Q, K and V are separate.

Their shapes, the key axis of softmax, and why A is not symmetric.

Single head, no batch: X [T, D], W_Q and W_K [D, d_k], W_V [D, d_v]; Q and K are
[T, d_k], V is [T, d_v]; S and A are [T_q, T_k] and Z is [T_q, d_v]. The shapes are read
off the tensors that `nn.scaled_dot_product_attention` records ("QKᵀ", "S", "A", "Z").
"""
import math

import numpy as np
import pytest
from mt_testing import check_close, check_shape, np_softmax, recorded_steps, to_float64

import microtensor as mt
import nn


def _project(x, d_out):
    """A bias-free float64 projection [D, d_out], the course's `X W`."""
    return to_float64(nn.Linear(x.shape[-1], d_out, bias=False))


def test_self_attention_shapes_when_d_v_differs_from_d_k():
    T, D, d_k, d_v = 5, 6, 4, 3
    x = mt.Tensor(np.random.default_rng(0).normal(size=(T, D)))
    w_q, w_k, w_v = _project(x, d_k), _project(x, d_k), _project(x, d_v)
    q, k, v = w_q(x), w_k(x), w_v(x)
    with recorded_steps() as steps:
        z, a = nn.scaled_dot_product_attention(q, k, v)
    check_shape(w_q.weight, (D, d_k), "W_Q")
    check_shape(w_v.weight, (D, d_v), "W_V")
    check_shape(q, (T, d_k), "Q = X W_Q")
    check_shape(k, (T, d_k), "K = X W_K")
    check_shape(v, (T, d_v), "V = X W_V")
    check_shape(steps["QKᵀ"], (T, T), "QKᵀ")
    check_shape(steps["S"], (T, T), "S = QKᵀ/√d_k")
    check_shape(steps["A"], (T, T), "A = softmax(S)")
    check_shape(z, (T, d_v), "Z = AV (features from V)")
    # and the values: an independent numpy computation of softmax(QKᵀ/√d_k) V
    xn = x.data
    qn, kn, vn = xn @ w_q.weight.data, xn @ w_k.weight.data, xn @ w_v.weight.data
    a_expected = np_softmax(qn @ kn.T / math.sqrt(d_k))
    check_close(a, a_expected, "A", atol=1e-12)
    check_close(z, a_expected @ vn, "Z", atol=1e-12)


def test_cross_attention_output_length_follows_queries_and_width_follows_values():
    T_q, T_k, d_k, d_v = 3, 7, 4, 2
    rng = np.random.default_rng(1)
    q = mt.Tensor(rng.normal(size=(T_q, d_k)), requires_grad=True)  # so the graph is recorded
    k = mt.Tensor(rng.normal(size=(T_k, d_k)), requires_grad=True)
    v = mt.Tensor(rng.normal(size=(T_k, d_v)), requires_grad=True)
    with recorded_steps() as steps:
        z, a = nn.scaled_dot_product_attention(q, k, v)
    check_shape(steps["S"], (T_q, T_k), "S for cross-attention")
    check_shape(a, (T_q, T_k), "A for cross-attention")
    check_shape(z, (T_q, d_v), "Z for cross-attention: T_q rows, d_v features")
    a_expected = np_softmax(q.data @ k.data.T / math.sqrt(d_k))
    check_close(z, a_expected @ v.data, "cross-attention Z", atol=1e-12)


def test_q_and_k_must_share_their_last_dim_but_v_need_not():
    rng = np.random.default_rng(2)
    q, v = mt.Tensor(rng.normal(size=(3, 4))), mt.Tensor(rng.normal(size=(5, 9)))
    with pytest.raises(ValueError, match="do not fit"):
        nn.scaled_dot_product_attention(q, mt.Tensor(rng.normal(size=(5, 3))), v)
    z, _ = nn.scaled_dot_product_attention(q, mt.Tensor(rng.normal(size=(5, 4))), v)
    check_shape(z, (3, 9), "Z with d_v = 9 ≠ d_k = 4")


def test_softmax_normalises_each_query_row_over_the_keys():
    rng = np.random.default_rng(3)
    q, k, v = (mt.Tensor(rng.normal(size=(4, 6, 3))) for _ in range(3))
    _, a = nn.scaled_dot_product_attention(q, k, v)
    s = q.data @ np.swapaxes(k.data, -1, -2) / math.sqrt(3)
    check_close(a, np_softmax(s, axis=-1), "A = softmax over the key axis (last)", atol=1e-12)
    check_close(a.data.sum(axis=-1), np.ones((4, 6)), "every row of A sums to 1", atol=1e-12)
    column_sums = a.data.sum(axis=-2)
    assert np.abs(column_sums - 1).max() > 0.1, (
        f"columns of A (over queries) should not be distributions; expected sums far from 1, "
        f"got {column_sums[0]}")
    assert not np.allclose(a.data, np_softmax(s, axis=-2)), \
        "softmax over the query axis must give a different matrix, got the same"


def test_attention_weights_are_not_symmetric_even_without_a_mask():
    T, D, d_k = 4, 5, 3
    x = mt.Tensor(np.random.default_rng(4).normal(size=(T, D)))
    w_q, w_k = _project(x, d_k), _project(x, d_k)
    q, k = w_q(x), w_k(x)
    _, a = nn.scaled_dot_product_attention(q, k, k)
    qk = q.data @ k.data.T
    assert np.abs(qk - qk.T).max() > 0.1, f"QKᵀ with W_Q ≠ W_K should be asymmetric, got\n{qk}"
    assert np.abs(a.data - a.data.T).max() > 0.05, f"A should be asymmetric, got\n{a.data}"


def test_rowwise_normalisation_alone_breaks_symmetry():
    """Even with W_Q = W_K, where QKᵀ is symmetric, each row is normalised on its own."""
    T, D, d_k = 4, 5, 3
    x = mt.Tensor(np.random.default_rng(5).normal(size=(T, D)))
    w = _project(x, d_k)
    q = w(x)
    _, a = nn.scaled_dot_product_attention(q, q, q)
    s = q.data @ q.data.T
    check_close(s, s.T, "QKᵀ with W_Q = W_K is symmetric", atol=1e-12)
    assert np.abs(a.data - a.data.T).max() > 0.05, (
        f"A = softmax of a symmetric S is still asymmetric: expected |A − Aᵀ| > 0.05, "
        f"got max {np.abs(a.data - a.data.T).max():.3g}")
    # the reason: row i is divided by its own Σ_j exp(S_ij);
    # A_ij / A_ji = Σ_j' e^S_jj' / Σ_j' e^S_ij'
    e = np.exp(s / math.sqrt(d_k))
    row_totals = e.sum(axis=1)
    check_close(a.data / a.data.T, row_totals[None, :] / row_totals[:, None],
                "A_ij / A_ji = (row total of j) / (row total of i)", atol=1e-10)
