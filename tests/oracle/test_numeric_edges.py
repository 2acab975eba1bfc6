"""Where PyTorch defines a result at a numeric edge, microtensor gives the same one (issue 7).

Each test states one fact; expected values come from a hand calculation or Python's math
module, and from PyTorch where the fact is "the same as PyTorch".
"""
import math

import numpy as np
import pytest

import microtensor as mt
import microtensor.functional as F

INF, NAN = float("inf"), float("nan")


def _exact_gelu(x):
    return np.array([v * 0.5 * (1 + math.erf(v / math.sqrt(2))) for v in x.reshape(-1)])


# ---- gelu ---------------------------------------------------------------------------------
def test_float64_gelu_equals_the_exact_formula_to_machine_precision():
    x = np.linspace(-10, 10, 4001)
    got = F.gelu(mt.Tensor(x)).data
    error = np.abs(got - _exact_gelu(x)).max()
    assert error <= 4 * np.finfo(np.float64).eps, f"expected error <= 8.9e-16, got {error:.3g}"


def test_float64_gelu_gradient_equals_phi_plus_x_times_pdf_to_machine_precision():
    x = np.linspace(-10, 10, 4001)
    t = mt.Tensor(x, requires_grad=True)
    F.gelu(t).sum().backward()
    cdf = np.array([0.5 * (1 + math.erf(v / math.sqrt(2))) for v in x])
    expected = cdf + x * np.exp(-x * x / 2) / math.sqrt(2 * math.pi)
    error = np.abs(t.grad - expected).max()
    assert error <= 4 * np.finfo(np.float64).eps, f"expected error <= 8.9e-16, got {error:.3g}"


# Measured max |ours − float64 truth| over these 200,001 points: 4.59e-07 on an Intel Xeon
# with AVX-512 (numpy 2.4.6) and on an AMD EPYC family 23 (AVX2, issue 25), both at x ≈ 10
# where half a float32 ulp is 4.77e-07. The bound 6e-07 leaves 30% margin and still fails a
# gelu off by one ulp of its largest outputs (9.5e-07). Torch's own error on the machine at
# hand (3.75e-07 on AVX2, 1.07e-06 on AVX-512) is no bound: it depends on its SIMD path.
FLOAT32_GELU_MAX_ERROR = 6e-07


def test_float32_gelu_is_within_6e_7_of_the_float64_truth_over_minus_10_to_10():
    x = np.linspace(-10, 10, 200001, dtype=np.float32)
    exact = _exact_gelu(x.astype(np.float64))
    ours = F.gelu(mt.Tensor(x)).data
    assert ours.dtype == np.float32, f"expected float32, got {ours.dtype}"
    our_error = np.abs(ours - exact).max()
    assert our_error <= FLOAT32_GELU_MAX_ERROR, (
        f"float32 gelu max error over [-10, 10]: expected <= {FLOAT32_GELU_MAX_ERROR:.3g}, "
        f"got {our_error:.3g}")


def test_gelu_at_plus_and_minus_inf_is_what_torch_gives():
    x = mt.Tensor(np.array([-INF, INF]), requires_grad=True)
    with np.errstate(invalid="ignore"):
        y = F.gelu(x)
        y.backward(np.ones(2))
    # −inf·Φ(−inf) = −inf·0 is NaN in PyTorch too; the gradient Φ + x·φ is NaN at both ends
    assert np.isnan(y.data[0]) and y.data[1] == INF, f"expected [nan, inf], got {y.data}"
    assert np.isnan(x.grad).all(), f"expected gradient [nan, nan], got {x.grad}"


# ---- relu ---------------------------------------------------------------------------------
def test_relu_of_minus_inf_is_0_and_of_nan_is_nan():
    y = F.relu(mt.Tensor(np.array([-INF, -1.0, 0.0, 2.0, INF, NAN]))).data
    assert np.array_equal(y, [0, 0, 0, 2, INF, NAN], equal_nan=True), (
        f"expected [0, 0, 0, 2, inf, nan], got {y}")


def test_an_inactive_relu_unit_passes_no_gradient_even_when_the_upstream_one_is_inf_or_nan():
    x = mt.Tensor(np.array([-INF, -1.0, 0.0, 3.0, 4.0]), requires_grad=True)
    F.relu(x).backward(np.array([INF, NAN, INF, INF, NAN]))
    assert np.array_equal(x.grad, [0, 0, 0, INF, NAN], equal_nan=True), (
        f"expected [0, 0, 0, inf, nan], got {x.grad}")


# ---- cross_entropy ------------------------------------------------------------------------
def test_float32_cross_entropy_of_two_equal_logits_1e8_is_ln_2():
    loss = F.cross_entropy(mt.Tensor(np.array([[1e8, 1e8]], dtype=np.float32)), np.array([0]))
    assert loss.dtype == np.float32 and abs(loss.item() - math.log(2)) < 1e-7, (
        f"expected float32 ln 2 = 0.6931472, got {loss.dtype} {loss.item()}")


@pytest.mark.parametrize("reduction, expected", [("mean", NAN), ("sum", 0.0)])
def test_cross_entropy_with_every_target_ignored_is_nan_or_0_with_gradient_exactly_0(
        reduction, expected):
    z = mt.Tensor(np.array([[1.0, 2.0, 3.0], [0.0, 0.0, 0.0]]), requires_grad=True)
    loss = F.cross_entropy(z, np.array([-100, -100]), reduction=reduction)
    loss.backward()
    assert np.array_equal(loss.data, expected, equal_nan=True), (
        f"{reduction}: expected {expected} (as torch), got {loss.data}")
    assert np.array_equal(z.grad, np.zeros((2, 3))), f"expected a zero gradient, got {z.grad}"


def test_cross_entropy_none_gives_0_gradient_to_an_ignored_row_whose_upstream_is_inf():
    z = mt.Tensor(np.array([[1.0, 2.0, 3.0], [0.0, 1.0, 0.0]]), requires_grad=True)
    loss = F.cross_entropy(z, np.array([-100, 1]), reduction="none")
    loss.backward(np.array([INF, 1.0]))
    p = np.exp([0.0, 1.0, 0.0]) / np.exp([0.0, 1.0, 0.0]).sum()
    expected = np.array([[0.0, 0.0, 0.0], p - [0, 1, 0]])
    assert np.allclose(z.grad, expected, rtol=1e-12, atol=0), f"expected {expected}, got {z.grad}"


# ---- scalar promotion (torch.result_type) -------------------------------------------------
PROMOTION = [  # (tensor, op, scalar, expected values, expected dtype); checked against torch below
    (np.array([1, 2]), "*", np.float32(1.5), [1.5, 3.0], np.float32),
    (np.array([1, 2]), "*", 1.5, [1.5, 3.0], np.float32),
    (np.array([1, 2]), "+", np.float64(0.5), [1.5, 2.5], np.float32),
    (np.array([True, False]), "*", 3, [3, 0], np.int64),
    (np.array([True, False]), "+", 0.5, [1.5, 0.5], np.float32),
    (np.array([1.0, 2.0], dtype=np.float32), "**", np.float64(2), [1.0, 4.0], np.float32),
    (np.array([1.0, 2.0], dtype=np.float32), "*", np.float64(2), [2.0, 4.0], np.float32),
    (np.array([1, 2], dtype=np.int32), "*", np.int64(3), [3, 6], np.int32),
    (np.array([1, 2]), "/", 2, [0.5, 1.0], np.float32),
    (np.array([1, 2]), "**", 0.5, [1.0, math.sqrt(2)], np.float32),
    (np.array([1, 2]), "**", 2, [1, 4], np.int64),
    (np.array([1.0, 2.0]), "*", np.float32(0.1), [0.1, 0.2], np.float64),
]


def _apply(a, op, b):
    return {"*": lambda: a * b, "+": lambda: a + b, "/": lambda: a / b, "**": lambda: a ** b}[op]()


@pytest.mark.parametrize("array, op, scalar, values, dtype", PROMOTION)
def test_a_scalar_never_truncates_and_never_widens_a_tensor(array, op, scalar, values, dtype):
    got = _apply(mt.Tensor(array), op, scalar)
    assert got.dtype == dtype, f"{array.dtype} {op} {scalar!r}: expected {dtype}, got {got.dtype}"
    assert np.allclose(got.data, values, rtol=1e-6), f"expected {values}, got {got.data}"
    if op != "**":
        swapped = _apply(scalar, op, mt.Tensor(array))
        assert swapped.dtype == dtype, (
            f"{scalar!r} {op} {array.dtype}: expected {dtype}, got {swapped.dtype}")


@pytest.mark.parametrize("array, op, scalar, values, dtype", PROMOTION)
def test_the_promotion_table_above_is_torchs(array, op, scalar, values, dtype):
    torch = pytest.importorskip("torch")
    result = _apply(torch.tensor(array), op, scalar)
    assert result.numpy().dtype == dtype, f"torch gives {result.dtype}; the table says {dtype}"


@pytest.mark.parametrize("a, b", [(np.array([1, 2]), np.array([2, 2])),
                                  (np.array([True, False]), np.array([True, True]))])
def test_dividing_integer_or_bool_tensors_gives_float32(a, b):
    got = mt.Tensor(a) / mt.Tensor(b)
    assert got.dtype == np.float32, f"expected float32 (as torch), got {got.dtype}"
    assert np.allclose(got.data, a / b), f"expected {a / b}, got {got.data}"


def test_an_integer_tensor_times_a_float32_tensor_is_float32():
    got = mt.Tensor(np.array([1, 2])) * mt.Tensor(np.array([0.5, 0.25], dtype=np.float32))
    assert got.dtype == np.float32, f"expected float32 (as torch), got {got.dtype}"


def test_a_float_scalar_keeps_full_precision_on_a_float64_tensor():
    got = (mt.Tensor(np.array([1.0])) * 0.1).data[0]
    assert got == 0.1, f"expected exactly 0.1 (the scalar is not rounded to float32), got {got!r}"


def test_subtracting_a_bool_tensor_is_a_type_error_as_in_torch():
    with pytest.raises(TypeError, match="bool"):
        mt.Tensor(np.array([1, 2])) - mt.Tensor(np.array([True, False]))


def test_the_gradient_through_a_promoted_product_has_the_tensors_dtype():
    x = mt.Tensor(np.array([1.0, 2.0], dtype=np.float32), requires_grad=True)
    (x * np.float64(3.0)).sum().backward()
    assert x.grad.dtype == np.float32 and np.array_equal(x.grad, [3.0, 3.0]), (
        f"expected float32 [3, 3], got {x.grad.dtype} {x.grad}")


# ---- numpy conversion ---------------------------------------------------------------------
def test_np_array_of_a_tensor_is_a_copy_and_np_asarray_shares_as_in_torch():
    t = mt.Tensor([1.0, 2.0])
    copy = np.array(t)
    copy[0] = 9.0
    assert t.data[0] == 1.0, f"np.array(tensor) must copy; the tensor became {t.data}"
    assert np.shares_memory(np.asarray(t), t.data), "np.asarray(tensor) should share the data"
    assert np.array(t, dtype=np.float64).dtype == np.float64, "np.array(t, dtype=) should cast"


# ---- zero-size and 0-d inputs (found by the differential test) ----------------------------
@pytest.mark.parametrize("op", ["softmax", "log_softmax"])
def test_softmax_over_an_empty_axis_is_empty_as_in_torch(op):
    x = mt.Tensor(np.zeros((2, 0)), requires_grad=True)
    with np.errstate(divide="ignore"):  # log Σ over nothing = log 0, broadcast over nothing
        y = getattr(x, op)(-1)
        y.backward(np.zeros((2, 0)))
    assert y.shape == (2, 0) and x.grad.shape == (2, 0), f"expected (2, 0), got {y.shape}"


def test_matmul_with_an_inner_dim_of_0_gives_zeros():
    a = mt.Tensor(np.zeros((2, 2, 0)), requires_grad=True)
    b = mt.Tensor(np.zeros((0, 3)), requires_grad=True)
    y = a @ b
    y.backward(np.ones((2, 2, 3)))
    assert np.array_equal(y.data, np.zeros((2, 2, 3))), f"expected zeros [2, 2, 3], got {y.data}"
    assert (a.grad.shape, b.grad.shape) == ((2, 2, 0), (0, 3)), "gradients keep the input shapes"


def test_embedding_of_a_table_with_0_columns_has_an_empty_gradient():
    w = mt.Tensor(np.zeros((3, 0)), requires_grad=True)
    F.embedding(np.array([[0, 2]]), w).backward(np.zeros((1, 2, 0)))
    assert w.grad.shape == (3, 0), f"expected gradient shape (3, 0), got {w.grad.shape}"


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_gelu_of_a_0_dim_tensor_is_a_0_dim_tensor(dtype):
    y = F.gelu(mt.Tensor(np.array(1.0, dtype=dtype)))
    expected = 0.5 * (1 + math.erf(1 / math.sqrt(2)))
    assert y.shape == () and abs(y.item() - expected) < 1e-7, f"expected {expected}, got {y}"


def test_an_ignored_row_with_nan_logits_gets_a_nan_gradient_as_in_torch():
    z = mt.Tensor(np.array([[NAN, 0.0], [1.0, 2.0]]), requires_grad=True)
    loss = F.cross_entropy(z, np.array([-100, 1]), reduction="sum")
    with np.errstate(invalid="ignore"):
        loss.backward()
    assert np.isnan(z.grad[0]).all() and np.isfinite(z.grad[1]).all(), (
        f"expected NaN in the ignored NaN row only (PyTorch: 0·NaN), got {z.grad}")
    assert np.isfinite(loss.item()), f"the ignored row adds 0 to the loss; got {loss.item()}"


def test_relu_keeps_the_sign_of_minus_zero_as_in_torch():
    y = F.relu(mt.Tensor(np.array([-0.0, 0.0, -2.0]))).data
    assert np.signbit(y).tolist() == [True, False, False], (
        f"expected relu(-0.0) = -0.0 and relu(-2) = +0.0 (as torch), got signs {np.signbit(y)}")


@pytest.mark.parametrize("value, dtype", [(0.1, np.float64), (-1e9, np.float32)])
def test_layer_norm_of_a_constant_row_is_exactly_the_bias(value, dtype):
    x = mt.Tensor(np.full((2, 3), value, dtype=dtype), requires_grad=True)
    bias = mt.Tensor(np.array([0.5, -1.0, 2.0], dtype=dtype))
    y = F.layer_norm(x, 3, mt.Tensor(np.ones(3, dtype=dtype)), bias).data
    assert np.array_equal(y, np.broadcast_to(bias.data, (2, 3))), (
        f"x − mean(x) is exactly 0 for a constant row of {value} (as torch); "
        f"expected the bias {bias.data}, got {y}")


def test_the_gradient_of_x_to_the_half_at_minus_zero_and_minus_inf_is_torchs():
    x = mt.Tensor(np.array([-0.0, -INF, 4.0]), requires_grad=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        (x ** 0.5).backward(np.ones(3))
    # ½·x^(−½) with x^(−½) = 1/√x, as PyTorch's rsqrt: 1/√(−0.0) = −inf, 1/√(−inf) = NaN
    assert np.array_equal(x.grad, [-INF, NAN, 0.25], equal_nan=True), (
        f"expected [-inf, nan, 0.25], got {x.grad}")
