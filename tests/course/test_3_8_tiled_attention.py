"""Notes 3.8: ordinary attention keeps O(BHT²) memory for its weights; FlashAttention changes how
memory is accessed, not the mathematical result.

Shown with attention="tiled" (nn/tiled_attention.py: tiles, an online softmax, only Z and each
row's log-sum-exp kept): the same output and gradients as ordinary attention, and the memory,
measured: the bytes `profile()` counts for backward, and the peak of numpy's allocations.
"""
import math
import tracemalloc

import numpy as np
from mt_testing import check_close

import microtensor as mt
import nn


def _attend(attention, arrays, upstream, **kwargs):
    """(Z, ∂L/∂Q, ∂L/∂K, ∂L/∂V, bytes kept for backward, peak bytes of forward + backward)."""
    q, k, v = (mt.Tensor(a, requires_grad=True) for a in arrays)
    tracemalloc.start()
    with mt.profile() as prof:
        if attention == "tiled":  # the same Z, in tiles (nn/tiled_attention.py)
            z = nn.tiled_attention(q, k, v, **kwargs)
        else:
            z, _ = nn.scaled_dot_product_attention(q, k, v, **kwargs)
    z.backward(upstream)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return z.data, q.grad, k.grad, v.grad, prof.saved_bytes(), peak


def _inputs(b, h, t, d, dtype, seed=0):
    rng = np.random.default_rng(seed)
    return ([rng.normal(size=(b, h, t, d)).astype(dtype) for _ in range(3)],
            rng.normal(size=(b, h, t, d)).astype(dtype))


def test_tiled_attention_has_the_same_output_and_gradients():
    arrays, upstream = _inputs(2, 2, 100, 8, np.float64)
    ordinary = _attend("ordinary", arrays, upstream, is_causal=True)
    tiled = _attend("tiled", arrays, upstream, is_causal=True)
    for name, got, expected in zip(("Z", "∂L/∂Q", "∂L/∂K", "∂L/∂V"), tiled, ordinary):
        check_close(got, expected, f"{name}, tiled vs ordinary (float64)", atol=1e-12)


def test_the_online_softmax_of_one_key_at_a_time_is_the_softmax():
    """Tiles of one key: m, l and the output are rescaled at every key, and still give Z."""
    q, k, v = (mt.Tensor(a) for a in _inputs(1, 1, 5, 3, np.float64)[0])
    z = nn.tiled_attention(q, k, v, tile_size=1)
    s = q.data[0, 0] @ k.data[0, 0].T / math.sqrt(3)
    a = np.exp(s - s.max(axis=1, keepdims=True))
    check_close(z.data[0, 0], (a / a.sum(axis=1, keepdims=True)) @ v.data[0, 0],
                "Z = softmax(QKᵀ/√d_k) V", atol=1e-12)


def test_ordinary_keeps_B_H_T_squared_weights_and_tiled_keeps_memory_linear_in_T():
    b, h, d = 2, 4, 16
    kept = {}
    for t in (128, 256):
        arrays, upstream = _inputs(b, h, t, d, np.float32)
        for attention in ("ordinary", "tiled"):
            kept[attention, t] = _attend(attention, arrays, upstream, is_causal=True)[4]
    for t in (128, 256):   # A [B, H, T, T] on top of Q, K, V (float32) and the scale's one float,
        # and the causal mask [T, T] (bool) that masked_fill keeps for backward, as torch's
        assert kept["ordinary", t] == 3 * b * h * t * d * 4 + b * h * t * t * 4 + 4 + t * t, kept
    assert kept["tiled", 256] == 2 * kept["tiled", 128], (
        f"expected tiled attention's bytes to double with T (Z and L [B, H, T, 1] beside Q, K, "
        f"V), got {kept['tiled', 128]} -> {kept['tiled', 256]}")


def test_the_peak_memory_of_forward_and_backward_is_measured_lower():
    arrays, upstream = _inputs(2, 4, 512, 16, np.float32)
    ordinary = _attend("ordinary", arrays, upstream, is_causal=True)[5]
    tiled = _attend("tiled", arrays, upstream, is_causal=True)[5]
    weights = 2 * 4 * 512 * 512 * 4                             # one [B, H, T, T] float32 array
    assert ordinary > 2 * weights and tiled < weights / 2, (
        f"expected ordinary's peak above two T×T arrays ({2 * weights}) and tiled's below half "
        f"of one; got ordinary {ordinary}, tiled {tiled}")
