"""Elementwise ops (+ − * / neg ** exp log sqrt tanh relu gelu): values match numpy and backward
matches finite differences.

Every gradient is checked with `microtensor.gradcheck` in float64, over several shapes,
including numpy broadcasting (the engine must sum a broadcast input's gradient back to
its own shape) and Python scalars or numpy arrays on either side of the operator.
"""
import math
import operator

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import mutually_broadcastable_shapes
from mt_testing import FEW_EXAMPLES, array64, assert_close, check_gradients, tensor64

import microtensor as mt
import microtensor.functional as F

BINARY = {"add": operator.add, "sub": operator.sub, "mul": operator.mul, "div": operator.truediv}

# (shape of a, shape of b): same shape, trailing broadcast, size-1 axes on both sides, 0-d.
BROADCAST_PAIRS = [
    ((3, 4), (3, 4)),
    ((3, 4), (4,)),
    ((4,), (3, 4)),
    ((2, 1, 4), (3, 1)),
    ((3, 1), (2, 1, 4)),
    ((2, 3, 4), (1, 3, 1)),
    ((), (2, 3)),
    ((2, 3), ()),
]


def _divisor_safe(b):
    """Keep divisors away from 0 so that a / b and its derivative stay moderate."""
    return np.where(np.abs(b) < 0.5, 0.5 * np.sign(b) + (b == 0), b)


@pytest.mark.parametrize("name", BINARY)
@pytest.mark.parametrize("shape_a, shape_b", BROADCAST_PAIRS)
def test_binary_op_with_broadcasting_matches_numpy_and_finite_differences(name, shape_a, shape_b):
    op = BINARY[name]
    a = tensor64(*shape_a, seed=1)
    b = mt.Tensor(_divisor_safe(array64(*shape_b, seed=2)), requires_grad=True)
    out = op(a, b)
    assert_close(out, op(a.data, b.data), f"{name} forward for {shape_a} and {shape_b}")
    assert check_gradients(op, a, b)


@FEW_EXAMPLES
@given(shapes=mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=4, max_side=3),
       name=st.sampled_from(sorted(BINARY)), seed=st.integers(0, 2**16))
def test_binary_op_gradient_sums_back_to_each_broadcast_input_shape(shapes, name, seed):
    op = BINARY[name]
    shape_a, shape_b = shapes.input_shapes
    a = tensor64(*shape_a, seed=seed)
    b = mt.Tensor(_divisor_safe(array64(*shape_b, seed=seed + 1)), requires_grad=True)
    out = op(a, b)
    assert out.shape == shapes.result_shape, (
        f"{name}{shape_a, shape_b}: expected output shape {shapes.result_shape}, got {out.shape}")
    assert check_gradients(op, a, b)
    op(a, b).sum().backward()  # gradcheck leaves .grad as it found it; fill it now
    assert a.grad.shape == shape_a and b.grad.shape == shape_b, (
        f"{name}: gradients must have the inputs' shapes {shape_a} and {shape_b}; "
        f"got {a.grad.shape} and {b.grad.shape}")


@pytest.mark.parametrize("name", BINARY)
def test_python_scalar_on_either_side_gives_numpy_values_and_gradients(name):
    op = BINARY[name]
    x = mt.Tensor(_divisor_safe(array64(2, 3, seed=3)), requires_grad=True)
    assert_close(op(x, 2.5), op(x.data, 2.5), f"x {name} 2.5")
    assert_close(op(2.5, x), op(2.5, x.data), f"2.5 {name} x")
    assert check_gradients(lambda t: op(t, 2.5), x)
    assert check_gradients(lambda t: op(2.5, t), x)
    assert check_gradients(lambda t: op(3, t), x)  # a Python int too


@pytest.mark.parametrize("name", BINARY)
def test_numpy_array_on_either_side_gives_a_tensor_with_numpy_values_and_gradients(name):
    op = BINARY[name]
    x = mt.Tensor(_divisor_safe(array64(2, 3, seed=4)), requires_grad=True)
    arr = _divisor_safe(array64(3, seed=5))  # broadcasts against x
    left, right = op(arr, x), op(x, arr)
    assert isinstance(left, mt.Tensor), (
        f"ndarray {name} Tensor should give a Tensor; got {type(left)}")
    assert_close(left, op(arr, x.data), f"ndarray {name} x")
    assert_close(right, op(x.data, arr), f"x {name} ndarray")
    assert check_gradients(lambda t: op(arr, t), x)
    assert check_gradients(lambda t: op(t, arr), x)


def test_neg_flips_values_and_gradient():
    x = tensor64(2, 3)
    assert_close(-x, -x.data, "-x")
    assert check_gradients(lambda t: -t, x)


@pytest.mark.parametrize("exponent", [0.5, -1, 3, 2, -0.5, 1.5])
@pytest.mark.parametrize("shape", [(5,), (2, 3), (2, 2, 2)])
def test_pow_with_scalar_exponent_matches_power_rule(exponent, shape):
    # positive bases: x^0.5 and x^-1 are only real and smooth there
    x = tensor64(*shape, low=0.5, high=2.0)
    assert_close(x ** exponent, x.data ** exponent, f"x ** {exponent}")
    assert check_gradients(lambda t: t ** exponent, x)


def test_pow_with_integer_exponent_works_for_negative_bases():
    x = tensor64(2, 3, away_from=0.0)
    assert check_gradients(lambda t: t ** 3, x)
    assert_close((x ** 3).data, x.data ** 3, "x ** 3 for negative x")


UNARY = {
    # name: (microtensor fn, numpy reference, input range)
    "exp": (lambda t: t.exp(), np.exp, {"low": -2, "high": 2}),
    "log": (lambda t: t.log(), np.log, {"low": 0.2, "high": 3}),
    "sqrt": (lambda t: t.sqrt(), np.sqrt, {"low": 0.2, "high": 3}),
    "tanh": (lambda t: t.tanh(), np.tanh, {"low": -3, "high": 3}),
    "relu": (lambda t: t.relu(), lambda a: np.maximum(a, 0), {"away_from": 0.0}),
    "F.relu": (F.relu, lambda a: np.maximum(a, 0), {"away_from": 0.0}),
}


@pytest.mark.parametrize("name", UNARY)
@pytest.mark.parametrize("shape", [(), (7,), (3, 4), (2, 3, 2)])
def test_unary_op_matches_numpy_and_finite_differences(name, shape):
    fn, reference, value_range = UNARY[name]
    x = tensor64(*shape, seed=7, **value_range)
    assert_close(fn(x), reference(x.data), f"{name} forward")
    assert check_gradients(fn, x)


def test_relu_gradient_is_one_for_positive_and_zero_for_negative_inputs():
    x = mt.Tensor(np.array([-2.0, -0.5, 0.5, 3.0]), requires_grad=True)
    x.relu().sum().backward()
    assert_close(x.grad, [0.0, 0.0, 1.0, 1.0], "relu gradient")


def _gelu_exact(a):
    values = [v * 0.5 * (1 + math.erf(v / math.sqrt(2))) for v in a.reshape(-1)]
    return np.array(values).reshape(a.shape)


def _gelu_tanh(a):
    return 0.5 * a * (1 + np.tanh(math.sqrt(2 / math.pi) * (a + 0.044715 * a ** 3)))


@pytest.mark.parametrize("approximate, reference", [("none", _gelu_exact), ("tanh", _gelu_tanh)])
@pytest.mark.parametrize("shape", [(9,), (3, 4), (2, 2, 3)])
def test_gelu_matches_its_formula_and_finite_differences(approximate, reference, shape):
    x = tensor64(*shape, seed=11, low=-4, high=4)
    # the exact form uses a rational erf approximation good to ~1e-7
    assert_close(F.gelu(x, approximate=approximate), reference(x.data),
                 f"gelu(approximate={approximate!r}) forward", atol=1e-7)
    assert check_gradients(lambda t: F.gelu(t, approximate=approximate), x)


def test_gelu_rejects_an_unknown_approximation():
    with pytest.raises(ValueError, match="approximate"):
        F.gelu(tensor64(3), approximate="sigmoid")
