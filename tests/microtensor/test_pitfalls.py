"""Pitfalls that broke other autograd engines, each pinned by a test.

* max with tied maxima: the gradient must be shared, summing to the upstream gradient.
* layer_norm: biased variance (divide by n, as PyTorch), and the two-pass variance that
  keeps float32 rows with a large common offset precise (the one-pass E[x²] − E[x]²
  loses everything there; the test shows that it does).
* softmax / log_softmax / cross_entropy at logits of ±1e4: finite values and gradients.
* a softmax row that is entirely −inf (every key masked): zeros and zero gradient, no NaN.
(`@` with 1-D operands and broadcast batch dims is pinned in test_matmul.py.)
"""
import numpy as np
import pytest
from mt_testing import assert_close

import microtensor as mt
import microtensor.functional as F


def test_max_with_tied_maxima_splits_gradient_evenly():
    x = mt.Tensor(np.array([1.0, 3.0, 3.0, 2.0]), requires_grad=True)
    m = x.max()
    m.backward(np.array(6.0))
    assert_close(x.grad, [0.0, 3.0, 3.0, 0.0], "max grad with two tied maxima")
    assert x.grad.sum() == 6.0, (
        f"max gradient must sum to the upstream 6, not double it; got {x.grad.sum()}")


@pytest.mark.parametrize("keepdims", [False, True])
def test_max_with_ties_along_an_axis_sums_to_the_upstream_gradient_per_row(keepdims):
    x = mt.Tensor(np.array([[5.0, 5.0, 5.0], [1.0, 4.0, 4.0], [0.0, -1.0, 2.0]]),
                  requires_grad=True)
    upstream = np.array([3.0, 2.0, 1.0]).reshape((3, 1) if keepdims else (3,))
    x.max(axis=1, keepdims=keepdims).backward(upstream)
    assert_close(x.grad, [[1, 1, 1], [0, 1, 1], [0, 0, 1]], "per-row tie splitting")
    assert_close(x.grad.sum(axis=1), [3.0, 2.0, 1.0],
                 "each row's max gradient sums to its upstream")


def test_layer_norm_uses_the_biased_variance():
    x = mt.Tensor(np.array([[1.0, 2.0, 3.0, 6.0]]))
    mean = 3.0
    biased_var = ((x.data - mean) ** 2).mean()  # 3.5; the unbiased one would be 14/3
    expected = (x.data - mean) / np.sqrt(biased_var + 1e-5)
    unbiased = (x.data - mean) / np.sqrt(np.var(x.data, ddof=1) + 1e-5)
    out = F.layer_norm(x, 4).data
    assert_close(out, expected, "layer_norm with variance Σ(x − μ)²/n", atol=1e-6)
    assert not np.allclose(out, unbiased, atol=1e-3), "layer_norm must not use the n − 1 variance"


def _one_pass_layer_norm(x, eps=1e-5):
    """The formula that fails: var = E[x²] − E[x]², in the input's own dtype."""
    mean = x.mean(axis=-1, keepdims=True)
    var = (x * x).mean(axis=-1, keepdims=True) - mean * mean
    return (x - mean) / np.sqrt(np.maximum(var, 0) + eps)


def test_layer_norm_keeps_float32_precision_with_a_large_common_offset():
    rng = np.random.default_rng(0)
    x32 = (1e4 + rng.standard_normal((8, 64))).astype(np.float32)
    x64 = x32.astype(np.float64)
    mean = x64.mean(axis=-1, keepdims=True)
    reference = (x64 - mean) / np.sqrt(((x64 - mean) ** 2).mean(axis=-1, keepdims=True) + 1e-5)

    out = F.layer_norm(mt.Tensor(x32), 64)
    assert out.dtype == np.float32, f"expected a float32 output; got {out.dtype}"
    gap = np.max(np.abs(out.data - reference))
    assert gap < 1e-3, (f"layer_norm on 1e4 + noise in float32: expected the float64 result "
                        f"±1e-3; off by {gap:.3g}")

    # The test can fail: the one-pass variance E[x²] − E[x]² is far off on the same rows
    # (E[x²] ≈ 1e8, where float32 steps are 8 apart, while the variance is about 1).
    one_pass_gap = np.max(np.abs(_one_pass_layer_norm(x32) - reference))
    assert one_pass_gap > 1e-1, (
        f"expected the one-pass formula to fail here; it is off by only {one_pass_gap:.3g}")


def test_layer_norm_gradient_in_float32_with_a_large_offset_matches_float64():
    x32 = (1e4 + np.random.default_rng(1).standard_normal((2, 16))).astype(np.float32)
    upstream = np.random.default_rng(2).standard_normal((2, 16))
    x = mt.Tensor(x32, requires_grad=True)
    F.layer_norm(x, 16).backward(upstream.astype(np.float32))
    x64 = mt.Tensor(x32.astype(np.float64), requires_grad=True)
    F.layer_norm(x64, 16).backward(upstream)
    assert np.all(np.isfinite(x.grad)), f"layer_norm gradient has non-finite entries: {x.grad}"
    # float32 resolves 1e4 only to ~1e-3, so the row mean, and with it the gradient, is off by
    # about that
    assert_close(x.grad, x64.grad, "float32 layer_norm gradient vs float64", atol=5e-3)


EXTREME = np.array([[1e4, 0.0, -1e4], [-1e4, -1e4, 1e4], [1e4, 1e4, 1e4]])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_softmax_of_logits_1e4_gives_exact_one_hot_and_finite_gradients(dtype):
    x = mt.Tensor(EXTREME.astype(dtype), requires_grad=True)
    p = x.softmax(-1)
    assert_close(p, [[1, 0, 0], [0, 0, 1], [1 / 3, 1 / 3, 1 / 3]], "softmax of ±1e4", atol=1e-6)
    p.backward(np.arange(9, dtype=dtype).reshape(3, 3))
    assert np.all(np.isfinite(x.grad)), f"softmax gradient at ±1e4 is not finite: {x.grad}"


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_log_softmax_of_logits_1e4_is_finite_with_finite_gradients(dtype):
    x = mt.Tensor(EXTREME.astype(dtype), requires_grad=True)
    y = x.log_softmax(-1)
    expected = [[0.0, -1e4, -2e4], [-2e4, -2e4, 0.0], [-np.log(3)] * 3]
    assert_close(y, expected, "log_softmax of ±1e4", atol=1e-3, rtol=1e-6)
    y.sum().backward()
    assert np.all(np.isfinite(x.grad)), f"log_softmax gradient at ±1e4 is not finite: {x.grad}"
    # d(Σ log_softmax)/dx = 1 − C·softmax
    assert_close(x.grad, [[-2, 1, 1], [1, 1, -2], [0, 0, 0]], "log_softmax gradient", atol=1e-5)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_cross_entropy_of_logits_1e4_is_finite_with_finite_gradients(dtype):
    x = mt.Tensor(EXTREME.astype(dtype), requires_grad=True)
    targets = np.array([1, 2, 0])
    loss = F.cross_entropy(x, targets, reduction="none")
    assert_close(loss, [1e4, 0.0, np.log(3)], "cross_entropy at ±1e4", atol=1e-3, rtol=1e-6)
    loss.sum().backward()
    assert np.all(np.isfinite(x.grad)), f"cross_entropy gradient at ±1e4 is not finite: {x.grad}"
    assert_close(x.grad, [[1, -1, 0], [0, 0, 0], [-2 / 3, 1 / 3, 1 / 3]], "softmax − onehot",
                 atol=1e-6)


def test_fully_negative_infinity_softmax_row_gives_zeros_and_zero_gradient():
    scores = mt.Tensor(np.array([[0.5, -np.inf, 1.0], [-np.inf, -np.inf, -np.inf]]),
                       requires_grad=True)
    weights = scores.softmax(-1)
    assert_close(weights.data[1], np.zeros(3), "softmax of an all −inf row")
    e = np.exp([0.5, 1.0])
    assert_close(weights.data[0], [e[0] / e.sum(), 0.0, e[1] / e.sum()],
                 "softmax of a partly −inf row")
    weights.backward(np.ones((2, 3)) * 2.0)
    assert not np.any(np.isnan(scores.grad)), f"gradient has NaN: {scores.grad}"
    assert_close(scores.grad[1], np.zeros(3), "gradient of an all −inf row")


def test_attention_row_with_every_key_masked_gives_zero_weights_and_no_nan_gradient():
    # the attention recipe: scores.masked_fill(blocked, −inf).softmax(); row 1 blocks every key
    scores = mt.Tensor(np.random.default_rng(0).standard_normal((3, 4)), requires_grad=True)
    blocked = np.array([[False, True, True, True], [True] * 4, [False] * 4])
    weights = scores.masked_fill(blocked, -np.inf).softmax(-1)
    assert_close(weights.data[1], np.zeros(4), "weights of a fully masked query row")
    assert_close(weights.data.sum(axis=-1), [1.0, 0.0, 1.0],
                 "row sums (0 for the fully masked row)")
    (weights * np.arange(12.0).reshape(3, 4)).sum().backward()
    assert np.all(np.isfinite(scores.grad)), f"gradient through a fully masked row: {scores.grad}"
    assert_close(scores.grad[:2], np.zeros((2, 4)), "no gradient reaches masked scores", atol=0)
