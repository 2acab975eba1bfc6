"""The fast paths stay exact: the float32 GELU slope, and row sums, dot products and maxima.

(Its float32 values against PyTorch's error: tests/oracle/test_numeric_edges.py.)
"""
import math

import numpy as np
import pytest

import microtensor as mt
import microtensor.functional as F
from microtensor.ops.rows import row_dot, row_max, row_sum, vecdot_numpy1

_erf = np.vectorize(math.erf)


def _gelu_exact(x):
    x = np.asarray(x, dtype=np.float64)
    return x * 0.5 * (1 + _erf(x / math.sqrt(2)))


def _gelu_slope_exact(x):
    x = np.asarray(x, dtype=np.float64)
    return 0.5 * (1 + _erf(x / math.sqrt(2))) + x * np.exp(-x * x / 2) / math.sqrt(2 * math.pi)


def test_float32_gelu_gradient_is_the_exact_slope_to_float32_precision():
    x = mt.Tensor(np.linspace(-10, 10, 20_001, dtype=np.float32), requires_grad=True)
    F.gelu(x).sum().backward()
    error = np.abs(x.grad - _gelu_slope_exact(x.data)).max()
    assert error < 1e-6, f"max |dGELU/dx − (Φ(x) + xφ(x))|: expected < 1e-6, got {error:.3g}"


def test_float32_gelu_of_large_inputs_is_x_or_zero():
    x = np.array([-1e4, -40.0, 40.0, 1e4], dtype=np.float32)
    got = F.gelu(mt.Tensor(x)).data
    assert np.array_equal(got, [0.0, 0.0, 40.0, 1e4]), f"expected [0, 0, 40, 1e4], got {got}"


@pytest.mark.parametrize("n", [1, 2, 5, 64, 65])
def test_row_sum_dot_and_max_equal_numpy_along_the_last_axis(n):
    x = np.random.default_rng(n).standard_normal((3, 4, n))
    y = np.random.default_rng(n + 1).standard_normal((3, 4, n))
    np.testing.assert_allclose(row_sum(x), x.sum(-1, keepdims=True), rtol=1e-12,
                               err_msg="row_sum vs x.sum(-1)")
    np.testing.assert_allclose(row_dot(x, y), (x * y).sum(-1, keepdims=True), rtol=1e-12,
                               err_msg="row_dot vs (x*y).sum(-1)")
    assert np.array_equal(row_max(x), x.max(-1, keepdims=True)), "row_max vs x.max(-1)"


def test_row_max_keeps_minus_inf_rows_and_nan_as_numpy_does():
    x = np.array([[-np.inf, -np.inf, -np.inf], [1.0, np.nan, 2.0], [3.0, -np.inf, 1.0]])
    got = row_max(x)[:, 0]
    assert np.isneginf(got[0]) and np.isnan(got[1]) and got[2] == 3.0, \
        f"expected [-inf, nan, 3], got {got}"


def test_reductions_along_another_axis_fall_back_to_numpy():
    x = np.random.default_rng(0).standard_normal((3, 4, 5))
    for axis in (0, 1):
        assert np.array_equal(row_max(x, axis), x.max(axis, keepdims=True)), f"max axis {axis}"
        np.testing.assert_allclose(row_sum(x, axis), x.sum(axis, keepdims=True), rtol=1e-12)


def test_numpy1_fallback_of_vecdot_gives_the_row_dot_products():
    # numpy 1.x has no np.vecdot: row_dot then uses this einsum; held against float64 sums
    rng = np.random.default_rng(3)
    x, y = rng.standard_normal((4, 3, 7)), rng.standard_normal((4, 3, 7))
    expected = (x * y).sum(axis=-1)
    got = vecdot_numpy1(x, y)
    assert got.shape == expected.shape and np.allclose(got, expected, rtol=1e-12, atol=1e-12), \
        f"expected {expected}, got {got}"
    got_b = vecdot_numpy1(x, y[0])  # the batch dims broadcast, as np.vecdot's
    assert np.allclose(got_b, (x * y[0]).sum(axis=-1), rtol=1e-12, atol=1e-12)
