"""Tensor refuses dtypes no op defines (complex, strings, objects) when it is made."""
import numpy as np
import pytest

from microtensor import Tensor


@pytest.mark.parametrize("data, dtype", [
    (np.array([1 + 2j]), "complex128"), (["a", "b"], "<U1"),
    (np.array([1, None], dtype=object), "object"), (np.zeros(2, dtype=[("x", "f4")]), r"\[")])
def test_tensor_refuses_unsupported_dtypes(data, dtype):
    with pytest.raises(TypeError, match=f"Tensor: dtype {dtype}"):
        Tensor(data)


def test_tensor_refuses_an_unsupported_dtype_argument():
    with pytest.raises(TypeError, match="Tensor: dtype complex64 is not supported"):
        Tensor([1.0], dtype=np.complex64)


@pytest.mark.parametrize("dtype", [np.bool_, np.uint8, np.int32, np.float16, np.float64])
def test_tensor_keeps_the_supported_dtypes(dtype):
    assert Tensor(np.zeros(2, dtype)).dtype == dtype


@pytest.mark.parametrize("grad, dtype", [("x", "<U1"), (np.array([1j, 2j]), "complex128")])
def test_backward_refuses_a_grad_that_is_not_real_numbers(grad, dtype):
    x = Tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(TypeError, match=f"grad must hold real numbers; got dtype {dtype}"):
        (x * 2).backward(grad)
