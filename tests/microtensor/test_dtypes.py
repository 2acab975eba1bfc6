"""PyTorch's dtype rules: Python floats -> float32, ints -> int64, numpy arrays keep their dtype;
float32 stays float32.

A float32 model must not drift to float64 through a Python scalar (`x * 0.5`, `x / 3`)
or inside an op (softmax, layer_norm, gelu, cross_entropy): that would double memory
and time and make results differ from PyTorch. Gradients have their leaf's dtype.
"""
import numpy as np
import pytest

import microtensor as mt
import microtensor.functional as F


@pytest.mark.parametrize("data, expected", [
    (1.5, np.float32),
    ([1.0, 2.0], np.float32),
    ([[1, 2], [3, 4.5]], np.float32),  # any float in the list makes it a float list
    (3, np.int64),
    ([1, 2, 3], np.int64),
    (np.zeros(2), np.float64),
    (np.zeros(2, dtype=np.float32), np.float32),
    (np.zeros(2, dtype=np.int32), np.int32),
    (np.float64(2.0), np.float64),
    ([True, False], np.bool_),
])
def test_tensor_constructor_follows_pytorch_dtype_rules(data, expected):
    got = mt.Tensor(data).dtype
    assert got == expected, f"Tensor({data!r}).dtype: expected {np.dtype(expected)}, got {got}"


def test_explicit_dtype_argument_wins():
    got = mt.Tensor([1, 2], dtype="float64").dtype
    assert got == np.float64, f"Tensor([1, 2], dtype='float64'): expected float64, got {got}"
    got = mt.Tensor(np.zeros(2), dtype=np.float32).dtype
    assert got == np.float32, f"Tensor(float64 array, dtype=float32): expected float32, got {got}"


def _x32(*shape):
    data = np.random.default_rng(0).uniform(0.5, 2.0, size=shape).astype(np.float32)
    return mt.Tensor(data, requires_grad=True)


SCALAR_EXPRESSIONS = {
    "x * 0.5": lambda x: x * 0.5,
    "0.5 * x": lambda x: 0.5 * x,
    "x / 3": lambda x: x / 3,
    "3 / x": lambda x: 3 / x,
    "x + 1": lambda x: x + 1,
    "2.0 - x": lambda x: 2.0 - x,
    "x ** 2": lambda x: x ** 2,
    "x ** 0.5": lambda x: x ** 0.5,
    "x * np.float64(0.5)": lambda x: x * np.float64(0.5),
    "-x": lambda x: -x,
}


@pytest.mark.parametrize("name", SCALAR_EXPRESSIONS)
def test_float32_with_python_scalar_stays_float32(name):
    x = _x32(3)
    out = SCALAR_EXPRESSIONS[name](x)
    assert out.dtype == np.float32, f"{name}: expected float32, got {out.dtype}"
    out.sum().backward()
    assert x.grad.dtype == np.float32, f"{name}: gradient expected float32, got {x.grad.dtype}"


OPS = {
    "softmax": lambda x: x.softmax(-1),
    "log_softmax": lambda x: F.log_softmax(x, axis=0),
    "layer_norm": lambda x: F.layer_norm(x, 4),
    "layer_norm affine": lambda x: F.layer_norm(x, 4, weight=_x32(4), bias=_x32(4)),
    "gelu": lambda x: F.gelu(x),
    "gelu tanh": lambda x: F.gelu(x, approximate="tanh"),
    "relu": lambda x: x.relu(),
    "exp log sqrt tanh": lambda x: x.exp().log().sqrt().tanh(),
    "sum mean max": lambda x: x.sum(0) + x.mean(0) + x.max(0),
    "cross_entropy mean": lambda x: F.cross_entropy(x, np.array([0, 3, 1])),
    "cross_entropy none": lambda x: F.cross_entropy(x, np.array([0, 3, 1]), reduction="none"),
    "cross_entropy sum": lambda x: F.cross_entropy(x, np.array([0, 3, 1]), reduction="sum"),
    "matmul": lambda x: x @ _x32(4, 2),
    "masked_fill": lambda x: x.masked_fill(np.eye(3, 4, dtype=bool), -1e9),
    "dropout": lambda x: F.dropout(x, 0.5),
    "embedding": lambda x: F.embedding(np.array([2, 0]), x),
    "getitem": lambda x: x[[0, 0, 2], 1:],
}


@pytest.mark.parametrize("name", OPS)
def test_float32_op_output_and_gradient_stay_float32(name):
    x = _x32(3, 4)
    out = OPS[name](x)
    assert out.dtype == np.float32, f"{name}: output expected float32, got {out.dtype}"
    out.backward(np.ones(out.shape, dtype=np.float32))
    assert x.grad.dtype == np.float32, f"{name}: gradient expected float32, got {x.grad.dtype}"


def test_float32_leaf_gets_a_float32_gradient_even_through_a_float64_array():
    x = _x32(3)
    out = x * np.array([1.0, 2.0, 3.0])  # a float64 array promotes the output, as in PyTorch
    assert out.dtype == np.float64, f"float32 * float64 array: expected float64, got {out.dtype}"
    out.sum().backward()
    assert x.grad.dtype == np.float32, f"x.grad should keep x's dtype float32; got {x.grad.dtype}"


def test_float64_stays_float64_through_ops():
    x = mt.Tensor(np.ones((2, 3)), requires_grad=True)
    out = F.layer_norm((x * 0.5).softmax(), 3)
    assert out.dtype == np.float64, f"expected float64, got {out.dtype}"


def test_randn_and_zeros_default_to_float32():
    assert mt.randn(2, 3).dtype == np.float32, "randn should default to float32"
    assert mt.zeros(2, 3).dtype == np.float32, "zeros should default to float32"
    assert mt.zeros((2, 3)).shape == (2, 3), "zeros accepts a shape tuple"


@pytest.mark.parametrize("scalar_requires_grad", [False, True])
def test_float32_times_a_0d_float64_is_float32_whether_or_not_the_scalar_requires_grad(
        scalar_requires_grad):
    torch = pytest.importorskip("torch")
    a = np.array([1.0, 2.0, 3.0], np.float32)
    w = np.array([1.0, -1.0, 2.0], np.float32)
    x = mt.Tensor(a, requires_grad=True)
    s = mt.Tensor(np.array(2.0), requires_grad=scalar_requires_grad)
    y = x * s
    xt = torch.tensor(a, requires_grad=True)
    st = torch.tensor(2.0, dtype=torch.float64, requires_grad=scalar_requires_grad)
    yt = xt * st
    assert str(y.dtype) == str(yt.dtype).removeprefix("torch."), (
        f"float32 * 0-d float64 (requires_grad={scalar_requires_grad}): expected torch's "
        f"{yt.dtype}, got {y.dtype}")
    (y * mt.Tensor(w)).sum().backward()
    (yt * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(x.grad, xt.grad.numpy(), err_msg="∂L/∂x against torch")
    assert x.grad.dtype == np.float32, f"∂L/∂x dtype: expected float32, got {x.grad.dtype}"
    if scalar_requires_grad:
        assert s.grad.dtype == np.float64 and np.isclose(s.grad, st.grad.item()), (
            f"∂L/∂s: expected {st.grad.item()} float64, got {s.grad!r}")
