"""Notes 3.2: why the scores are divided by √d_k.

For q, k with independent unit-variance entries, q·k = Σ_r q_r k_r has variance d_k, so
S = QKᵀ/√d_k has variance ≈ 1 (a seeded experiment over several d_k, on the "QKᵀ" and
"S" tensors that attention records). Without the scaling, softmax saturates: the largest
weight approaches 1 and the Jacobian entries ∂p_i/∂s_j = p_i(δ_ij − p_j) shrink.
This is the design motive under an i.i.d. assumption, not a theorem about hidden states.
"""
import math

import numpy as np
import pytest
from mt_testing import backward_jacobian, check_close, np_softmax, recorded_steps

import microtensor as mt
import nn

D_KS = (4, 16, 64, 256)


def _scores(d_k, n=20_000, seed=0):
    """Unscaled QKᵀ and scaled S of n independent (q, k) pairs, read off attention's graph."""
    rng = np.random.default_rng(seed + d_k)
    q = mt.Tensor(rng.standard_normal((n, 1, d_k)), requires_grad=True)
    k = mt.Tensor(rng.standard_normal((n, 1, d_k)), requires_grad=True)
    with recorded_steps() as steps:
        nn.scaled_dot_product_attention(q, k, k)
    return steps["QKᵀ"].data.reshape(-1), steps["S"].data.reshape(-1)


@pytest.mark.parametrize("d_k", D_KS)
def test_variance_of_q_dot_k_is_d_k_and_about_1_after_scaling(d_k):
    qk, s = _scores(d_k)
    # sampling error of a variance from 20,000 draws is about √(2/20000) = 1 %; allow 6 %
    assert abs(qk.var() / d_k - 1) < 0.06, (
        f"Var(q·k) at d_k={d_k}: expected ≈ {d_k}, got {qk.var():.2f}"
    )
    assert abs(s.var() - 1) < 0.06, f"Var(q·k/√d_k) at d_k={d_k}: expected ≈ 1, got {s.var():.3f}"
    check_close(s, qk / math.sqrt(d_k), "S = QKᵀ/√d_k", atol=1e-12)


def test_variance_grows_linearly_with_d_k():
    variances = [_scores(d_k, n=10_000)[0].var() for d_k in D_KS]
    ratio = variances[-1] / variances[0]
    assert 55 < ratio < 75, f"Var(q·k) at d_k=256 over d_k=4: expected ≈ 64, got {ratio:.1f}"


def _max_weights(d_k, scaled, n=2000, t=8, seed=0):
    rng = np.random.default_rng(seed)
    q, k = rng.standard_normal((n, 1, d_k)), rng.standard_normal((n, t, d_k))
    s = (q @ np.swapaxes(k, -1, -2))[:, 0]                       # [n, t] raw q·k
    return np_softmax(s / math.sqrt(d_k) if scaled else s)


def test_without_scaling_softmax_saturates_to_one_large_weight():
    for d_k in (64, 256):
        unscaled = _max_weights(d_k, scaled=False).max(axis=-1).mean()
        scaled = _max_weights(d_k, scaled=True).max(axis=-1).mean()
        assert unscaled > 0.85, (
            f"d_k={d_k}, no scaling: expected mean largest weight > 0.85, got {unscaled:.3f}"
        )
        assert scaled < 0.5, (
            f"d_k={d_k}, scaled: expected mean largest weight < 0.5, got {scaled:.3f}"
        )


def test_softmax_backward_is_the_jacobian_p_i_delta_ij_minus_p_j():
    s = np.array([0.3, -1.2, 2.0, 0.5])
    p = np_softmax(s)
    by_hand = np.diag(p) - np.outer(p, p)                      # p_i (δ_ij − p_j)
    check_close(backward_jacobian(lambda x: x.softmax(axis=-1), s), by_hand,
                "∂p_i/∂s_j from backward() vs p_i(δ_ij − p_j)", atol=1e-12)


def test_softmax_jacobian_entries_shrink_when_unscaled():
    d_k = 256
    rows = 200
    p_unscaled = _max_weights(d_k, scaled=False, n=rows)
    p_scaled = _max_weights(d_k, scaled=True, n=rows)

    def largest_entry(p):                                      # max_ij |p_i(δ_ij − p_j)| per row
        jac = p[:, :, None] * (np.eye(p.shape[-1]) - p[:, None, :])
        return np.abs(jac).max(axis=(1, 2))

    unscaled, scaled = np.median(largest_entry(p_unscaled)), np.median(largest_entry(p_scaled))
    assert unscaled < 0.01, (
        f"unscaled d_k={d_k}: expected median largest |∂p_i/∂s_j| < 0.01, got {unscaled:.3g}"
    )
    assert scaled > 0.15, (
        f"scaled d_k={d_k}: expected median largest |∂p_i/∂s_j| > 0.15, got {scaled:.3g}"
    )
    # the same through the engine: one row of scores, scaled (÷√256 = 16) and not
    s = np.array([1.0, 0.2, -0.5, 0.4])
    small = np.abs(backward_jacobian(lambda x: x.softmax(axis=-1), 16 * s)).max()
    large = np.abs(backward_jacobian(lambda x: x.softmax(axis=-1), s)).max()
    assert small < 1e-3 < 0.1 < large, (
        f"largest |∂p_i/∂s_j| from backward(): expected < 1e-3 for the unscaled row 16·s and "
        f"> 0.1 for s, got {small:.3g} and {large:.3g}")
