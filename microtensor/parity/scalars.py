"""A Python number meeting a tensor's dtype, as PyTorch: wrapped where torch computes with it
(`uint8 + 300`, `uint8 == -1`), checked where torch stores it (`masked_fill`, `t[i] = 300`).

torch converts an int operand to the result's dtype with C's wrapping (300 into uint8 is 44, so
`u8 + 300` adds 44, and `u8 == -1` compares with 255); numpy 2 refuses it (OverflowError). When
the number is stored, torch refuses one that does not fit ("value cannot be converted to type
uint8_t without overflow"), where numpy's unsafe cast would store 44 silently. torch's limits
(c10's `overflows`): a signed type holds [min, max]; an unsigned one [−max, max] (−1 into uint8
is 255, two's complement); a floating type any value up to its max, inf and NaN included.
"""
import numbers

import numpy as np

_FLOAT_MAX = {2: float(np.finfo(np.float16).max), 4: float(np.finfo(np.float32).max),
              8: float("inf")}  # by itemsize (a float64 holds any Python float)


class ValueOverflowError(ValueError, RuntimeError):
    """A number stored into a dtype that cannot hold it: ValueError here, RuntimeError as torch."""


def _python_int(value):
    kind = type(value)
    if kind is int or kind is float or kind is bool:  # the usual ones, without the ABC check
        return kind is int
    return isinstance(value, (numbers.Integral, np.integer)) and not isinstance(value, np.bool_)


def wrapped(value, dtype):
    """`value` as a 0-d array of `dtype` (an array as np.asarray); a Python int wraps into an
    integer dtype as torch's (modulo 2⁶⁴, then C's cast). OverflowError, as torch's, for an int
    outside [−2⁶³, 2⁶⁴), whatever the dtype."""
    dtype = np.dtype(dtype)
    if _python_int(value):
        if not -2**63 <= value < 2**64:  # torch's int64 or uint64 holds it, or nothing
            raise OverflowError(f"int {value} is too big to convert (as torch); the numbers "
                                f"an op takes lie in [-2**63, 2**64)")
        if dtype.kind in "iu" and not np.iinfo(dtype).min <= value <= np.iinfo(dtype).max:
            return np.array(int(value) % 2**64, dtype=np.uint64).astype(dtype)
    return np.asarray(value, dtype=dtype)


def check_fits(value, dtype, who):
    """ValueOverflowError naming `who` when the number `value` cannot be stored in `dtype`
    without overflow, as torch refuses it; bool holds any number."""
    dtype = np.dtype(dtype)
    if dtype.kind == "b" or isinstance(value, (bool, np.bool_)):
        return
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        low = -int(info.max) if dtype.kind == "u" else int(info.min)
        if not isinstance(value, (numbers.Integral, np.integer)) and not np.isfinite(value):
            return  # inf and NaN into an integer: the caller's own error
        fits = low <= value <= info.max
    else:
        fits = not np.isfinite(value) or abs(float(value)) <= float(np.finfo(dtype).max)
    if not fits:
        raise ValueOverflowError(f"{who}: value {value!r} cannot be converted to {dtype} "
                                 f"without overflow (as torch); the {dtype} range is "
                                 f"{_range(dtype)}")


def check_item_assignment(value, dtype):
    """`t[i] = number`: as check_fits, except into float16, where torch's item assignment
    stores inf for a number past 65504 (its masked_fill refuses it). An int outside int64's
    range is refused whatever the dtype (torch: "Overflow when unpacking long long")."""
    if _python_int(value) and not -2**63 <= value < 2**63:
        raise ValueOverflowError(f"t[...] = value: the int {value} lies outside int64's range "
                                 "(as torch, refused)")
    if not (np.dtype(dtype).kind == "f" and np.dtype(dtype).itemsize < 4):
        check_fits(value, dtype, "t[...] = value")


def _range(dtype):
    if dtype.kind == "f":
        return f"±{np.finfo(dtype).max}"
    info = np.iinfo(dtype)
    return f"[{-int(info.max) if dtype.kind == 'u' else info.min}, {info.max}]"


def fill_value(value, dtype, who):
    """masked_fill's value, checked: a number (or numpy scalar) that fits `dtype`, returned as
    a 0-d array (a Python float as given), or a 0-d Tensor (as given, so that a gradient reaches
    it). As torch: TypeError for anything else, ValueError for a value tensor with dims or
    (ValueOverflowError) a value that does not fit."""
    from ..tensor import Tensor  # here: tensor.py imports the parity package
    dtype = np.dtype(dtype)
    if type(value) is float and dtype.kind == "f" and (
            abs(value) <= _FLOAT_MAX[dtype.itemsize] or abs(value) == np.inf):
        return value  # attention's −inf: it fits, no more checks
    if isinstance(value, Tensor):
        if value.ndim:
            raise ValueError(f"{who}: a value tensor must be 0-d (as torch); got shape "
                             f"{value.shape}: pass value.reshape(()) or a number")
        number = value.data.item()
    elif isinstance(value, (numbers.Number, np.generic)) and not isinstance(value, complex):
        number, value = value, np.asarray(value)  # an array: -1 into uint8 wraps, as torch
    else:
        raise TypeError(f"{who}: value must be a number or a 0-d Tensor; got "
                        f"{type(value).__name__}")
    if np.dtype(dtype).kind in "iu" and isinstance(number, float) and not np.isfinite(number):
        raise ValueOverflowError(f"{who}: value {number} cannot be stored in a {dtype} tensor")
    if _python_int(number) and not -2**63 <= number < 2**64:
        raise OverflowError(f"{who}: int {number} is too big to convert (as torch)")
    check_fits(number, dtype, who)
    return value
