"""The operands of the Tensor's arithmetic operators (ops/arithmetic.py): a Tensor, numpy array
or Python number on either side, lifted to the dtype PyTorch gives the result."""
import numbers

import numpy as np

from ..tensor import Tensor, apply
from .cast import Cast
from .promotion import as_array, category, result_type
from .scalars import wrapped


def lift(other, dtype=None):
    """`other` as a Tensor of `dtype` (a constant is cast; one that requires grad is not)."""
    if not isinstance(other, Tensor):
        if isinstance(other, (numbers.Number, np.generic)) and dtype is not None:
            return Tensor._make(wrapped(other, dtype))  # to dtype at once; ints wrap as torch
        # a copy, as Tensor(array): an op may save it for backward, and the caller may
        # refill the array before then (one buffer over micro-batches)
        other = Tensor._make(np.array(other) if isinstance(other, np.ndarray)
                             else as_array(other, None))
    if dtype is None or other.dtype == dtype:
        return other
    if other._requires_grad:  # cast on the graph, so that its gradient still reaches it
        return apply(Cast(dtype), other)
    return Tensor._make(other.data.astype(dtype))


def tensor_power_operands(base, exponent):
    """(base, exponent) of `base ** exponent` (both Tensors) lifted to torch's result dtype;
    ValueError for integers to a negative integer power, as the scalar form."""
    dtype = result_type(base.data, exponent.data)
    if category(dtype) < 2 and (exponent.data < 0).any():
        raise ValueError("**: integers to negative integer powers are not allowed (as torch); "
                         "use a float exponent")
    return lift(base, dtype), lift(exponent, dtype)


def operands(a, b, self, op):
    """(a, b) as Tensors of the result's dtype, for `a op b` where self (a Tensor) is a or b.

    TypeError for a bool operand of "sub" (as torch); "div" of integers gives float32 (torch's
    true division), not numpy's float64."""
    other = b if a is self else a
    a_data = a.data if isinstance(a, Tensor) else a
    b_data = b.data if isinstance(b, Tensor) else b
    # the two common cases first, that result_type would only confirm: the same dtype, or a
    # Python number with a floating tensor (a scalar never widens it: float32 * 0.5 is float32)
    if (other.dtype == self.dtype if isinstance(other, Tensor)
            else isinstance(other, (int, float)) and self.dtype.kind == "f"):
        dtype = self.dtype
    elif op == "div" and a is not self and isinstance(other, int) and self.dtype == np.bool_:
        dtype = np.dtype(np.float32)  # n / bool x: float32 for any n, as torch (even 2**63)
    else:
        dtype = result_type(a_data, b_data)
    if op == "sub" and np.bool_ in (result_type(a_data), result_type(b_data)):
        raise TypeError("-: subtraction with a bool operand is not supported (as in "
                        "PyTorch); cast the mask first, e.g. mask.data.astype(np.int64)")
    if op == "div" and category(dtype) < 2:  # int / int is float32 in PyTorch, not float64
        dtype = np.dtype(np.float32)
    return lift(a, dtype), lift(b, dtype)
