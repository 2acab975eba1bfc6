"""Notes 3.3: why the causal mask goes in before softmax.

Also what padding masks and all-blocked rows do.

M_ij = 0 where j ≤ i, −∞ otherwise: exp(−∞) = 0, so future weights are exactly 0 and the
visible ones renormalise. Zeroing the future after softmax leaves rows that no longer
sum to 1. For a finite additive bias the place of the 1/√d_k matters; for a hard 0/−∞
mask it does not. A row with every key blocked is the one exception to "rows sum to 1":
it gets zero weights and a zero output, never NaN.
"""
import math

import numpy as np
from mt_testing import check_close, np_softmax, to_float64

import microtensor as mt
import microtensor.functional as F
import nn


def _qkv(t=5, d_k=4, d_v=3, seed=0, batch=()):
    rng = np.random.default_rng(seed)
    return (rng.normal(size=batch + (t, d_k)), rng.normal(size=batch + (t, d_k)),
            rng.normal(size=batch + (t, d_v)))


def _attend(q, k, v, **kwargs):
    out, weights = nn.scaled_dot_product_attention(
        mt.Tensor(q), mt.Tensor(k), mt.Tensor(v), **kwargs
    )
    return out.data, weights.data


def test_mask_before_softmax_keeps_rows_summing_to_one_and_renormalises_the_visible_keys():
    q, k, v = _qkv()
    t = q.shape[0]
    _, a = _attend(q, k, v, is_causal=True)
    check_close(a.sum(axis=-1), np.ones(t), "row sums of causally masked A", atol=1e-12)
    future = np.triu(np.ones((t, t), dtype=bool), k=1)
    assert np.all(a[future] == 0), f"future weights: expected exactly 0, got {a[future]}"
    s = q @ k.T / math.sqrt(q.shape[-1])
    for i in range(t):  # softmax over keys 0..i only
        check_close(
            a[i, : i + 1], np_softmax(s[i, : i + 1]), f"row {i} over its visible keys", atol=1e-12
        )


def test_zeroing_the_future_after_softmax_breaks_the_row_sums():
    q, k, v = _qkv()
    t = q.shape[0]
    z_before, a_before = _attend(q, k, v, is_causal=True)
    _, a_full = _attend(q, k, v)
    a_after = a_full * np.tril(np.ones((t, t)))              # the wrong order: softmax, then zero
    sums = a_after.sum(axis=-1)
    assert np.all(sums[:-1] < 1 - 1e-3), f"rows 0..T−2 after zeroing: expected sums < 1, got {sums}"
    check_close(sums[-1], 1.0, "the last row has no future to lose", atol=1e-12)
    # each row is the correct one shrunk by its sum: the output's scale changes
    check_close(
        a_after, a_before * sums[:, None], "zeroed-after = masked-before × row sum", atol=1e-12
    )
    check_close(a_after @ v, z_before * sums[:, None], "output of the wrong order", atol=1e-12)


def test_finite_bias_gives_different_results_before_and_after_scaling():
    q, k, v = _qkv(d_k=16)
    t, d_k = q.shape[0], q.shape[-1]
    i, j = np.indices((t, t))
    bias = -1.0 * np.abs(i - j)                              # a finite distance penalty
    qk = q @ k.T
    inside = np_softmax((qk + bias) / math.sqrt(d_k))        # (QKᵀ + M)/√d_k
    outside = np_softmax(qk / math.sqrt(d_k) + bias)         # QKᵀ/√d_k + M
    assert np.abs(inside - outside).max() > 0.05, (
        f"(QKᵀ+M)/√d_k vs QKᵀ/√d_k+M: expected different A, "
        f"got max difference {np.abs(inside - outside).max():.3g}")
    _, a = _attend(q, k, v, attn_mask=bias)
    check_close(
        a, outside, "a float attn_mask is added to the scaled scores (QKᵀ/√d_k + M)", atol=1e-12
    )


def test_hard_mask_does_not_care_where_the_scaling_is():
    q, k, v = _qkv(d_k=16)
    t, d_k = q.shape[0], q.shape[-1]
    hard = np.where(np.triu(np.ones((t, t), dtype=bool), k=1), -np.inf, 0.0)
    qk = q @ k.T
    inside = np_softmax((qk + hard) / math.sqrt(d_k))
    outside = np_softmax(qk / math.sqrt(d_k) + hard)
    check_close(inside, outside, "0/−∞ mask inside vs outside the scaling", atol=1e-12)
    _, a_float = _attend(q, k, v, attn_mask=hard)
    _, a_bool = _attend(q, k, v, attn_mask=hard == -np.inf)
    check_close(a_float, outside, "float 0/−∞ mask", atol=1e-12)
    check_close(a_bool, outside, "boolean mask (True = blocked)", atol=1e-12)


def test_padding_mask_blocks_padded_keys_and_real_outputs_ignore_the_padding():
    b, t, d, h = 2, 5, 8, 2
    mha = to_float64(nn.MultiHeadAttention(d, h, keep_attention=True))
    rng = np.random.default_rng(1)
    x = rng.normal(size=(b, t, d))
    pad = np.array([[False] * 5, [False, False, False, True, True]])  # sequence 1 has 3 real tokens
    out = mha(mt.Tensor(x), key_padding_mask=pad).data
    a = mha.last_attention.data  # [B, H, T_q, T_k]
    assert np.all(a[1, :, :, 3:] == 0), (
        f"weights on padded keys: expected 0, got {a[1, :, :, 3:].max()}"
    )
    check_close(a.sum(axis=-1), np.ones((b, h, t)), "row sums with a padding mask", atol=1e-12)
    x2 = x.copy()
    x2[1, 3:] = rng.normal(size=(2, d)) * 100                # different junk in the padding
    out2 = mha(mt.Tensor(x2), key_padding_mask=pad).data
    check_close(out2[1, :3], out[1, :3], "real positions after the padding changed", atol=1e-10)
    check_close(
        mha(mt.Tensor(x[1:2, :3])).data, out[1:2, :3], "the unpadded sequence alone", atol=1e-10
    )


def test_padding_queries_are_not_masked_so_the_loss_must_ignore_them():
    b, t, d, h, vocab = 1, 4, 8, 2, 6
    mha = to_float64(nn.MultiHeadAttention(d, h, keep_attention=True))
    x = np.random.default_rng(2).normal(size=(b, t, d))
    pad = np.array([[False, False, True, True]])
    mha(mt.Tensor(x), key_padding_mask=pad)
    a = mha.last_attention.data
    check_close(
        a[0, :, 2:].sum(axis=-1),
        np.ones((h, 2)),
        "padded query rows still attend (sum 1): the key mask does not switch them off",
        atol=1e-12,
    )
    # the loss mask: ignore_index drops padded targets from the mean
    logits = np.random.default_rng(3).normal(size=(b, t, vocab))
    targets = np.array([[1, 4, -100, -100]])
    loss = F.cross_entropy(mt.Tensor(logits), targets).item()
    log_p = logits[0] - np.log(np.exp(logits[0]).sum(axis=-1, keepdims=True))
    expected = -(log_p[0, 1] + log_p[1, 4]) / 2
    check_close(loss, expected, "cross-entropy over the two real targets only", atol=1e-12)


def test_fully_masked_row_gives_zero_weights_and_output_not_nan():
    q, k, v = _qkv(t=4)
    blocked = np.zeros((4, 4), dtype=bool)
    blocked[2] = True                                        # query 2 may see no key at all
    with np.errstate(invalid="ignore"):                      # the naive softmax: −∞ − (−∞) = NaN
        s = q @ k.T / math.sqrt(q.shape[-1])
        naive = np_softmax(np.where(blocked, -np.inf, s))
    assert np.isnan(naive[2]).all(), f"naive softmax of an all −∞ row: expected NaN, got {naive[2]}"
    qt, kt, vt = (mt.Tensor(x, requires_grad=True) for x in (q, k, v))
    z, a = nn.scaled_dot_product_attention(qt, kt, vt, attn_mask=blocked)
    check_close(a.data[2], np.zeros(4), "weights of the all-blocked row", atol=0)
    check_close(z.data[2], np.zeros(v.shape[-1]), "output of the all-blocked row", atol=0)
    check_close(
        a.data.sum(axis=-1), [1, 1, 0, 1], "row sums: 1 except the all-blocked row", atol=1e-12
    )
    z.sum().backward()
    for name, t in (("Q", qt), ("K", kt), ("V", vt)):
        assert np.isfinite(t.grad).all(), f"∂L/∂{name}: expected finite values, got {t.grad}"
    check_close(qt.grad[2], np.zeros(q.shape[-1]), "∂L/∂q of the all-blocked query", atol=0)
