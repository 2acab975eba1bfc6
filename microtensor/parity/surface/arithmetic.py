"""The surface of `+ − × ÷ ** neg` and `@`: a Tensor, numpy array or Python number on either side,
lifted to the dtype PyTorch gives the result (parity/operands.py), and torch's refusals (bool
operands of −, a negative integer power, bool matmul), a Tensor exponent of `**`; 1-D operands of
`@` reshaped to 2-D around the op, as torch does."""
import numbers

import numpy as np

from ...ops.tensor_power import PowTensor
from ...tensor import Tensor, apply
from ..operands import lift, operands, tensor_power_operands
from ..promotion import category, result_type


def install(Tensor):
    for name, op in (("add", "add"), ("sub", "sub"), ("mul", "mul"), ("truediv", "div")):
        plain = getattr(Tensor, f"__{name}__")
        setattr(Tensor, f"__{name}__", _in_order(plain, op))
        setattr(Tensor, f"__r{name}__", _reflected(plain, op))
    Tensor.__neg__ = _neg(Tensor.__neg__)
    Tensor.__pos__ = _pos
    Tensor.__pow__ = _pow(Tensor.__pow__)
    plain_matmul = Tensor.__matmul__
    Tensor.__matmul__ = lambda self, other: _matmul(plain_matmul, self, lift(other))
    Tensor.__rmatmul__ = lambda self, other: _matmul(plain_matmul, lift(other), self)


def _in_order(plain, op):
    def method(self, other):  # self + other
        return plain(*operands(self, other, self, op))
    return method


def _reflected(plain, op):
    def method(self, other):  # other + self: a number or array on the left
        return plain(*operands(other, self, self, op))
    return method


def _neg(plain):
    def neg(self):
        if self.dtype == np.bool_:
            raise TypeError("-t on a bool tensor is not supported (as torch); use ~t to invert")
        return plain(self)
    return neg


def _pos(self):
    if self.dtype == np.bool_:
        raise TypeError("+t on a bool tensor is not supported (as torch)")
    return self


def _pow(plain):
    def pow_method(self, exponent):
        if isinstance(exponent, Tensor):  # t ** Tensor: both differentiable (ops/tensor_power.py)
            return apply(PowTensor(), *tensor_power_operands(self, exponent))
        if not isinstance(exponent, numbers.Number):
            raise TypeError(f"** takes a scalar exponent; got {type(exponent).__name__}")
        base = lift(self, result_type(self.data, exponent))  # int ** 0.5 is float32, as torch
        if category(base.dtype) < 2 and exponent < 0:
            raise ValueError(f"** {exponent}: integers to negative integer powers are not "
                             "allowed (as torch); use a float exponent")
        # a Python number, so that numpy does not widen: float32 ** np.float64(2) is float32
        exponent = exponent.item() if isinstance(exponent, np.generic) else exponent
        return plain(base, exponent)
    return pow_method


def _matmul(plain, a, b):
    """a @ b with numpy's (and torch's) rules: a 1-D a [K] is a row [1, K], a 1-D b [K] a
    column [K, 1], and that size-1 dim leaves the product."""
    if "b" in (a.data.dtype.kind, b.data.dtype.kind):  # bool
        raise TypeError("@ of bool tensors is not supported (as torch); cast to int first")
    if a.ndim == 0 or b.ndim == 0:
        raise ValueError(f"matmul needs operands with at least 1 dim; got shapes "
                         f"{a.shape} and {b.shape} (use * for a scalar)")
    k_b = b.shape[0 if b.ndim == 1 else -2]
    if a.shape[-1] != k_b:
        raise ValueError(f"matmul: inner dims differ: a {a.shape} @ b {b.shape} "
                         f"({a.shape[-1]} vs {k_b})")
    if a.ndim > 1 and b.ndim > 1:
        return plain(a, b)
    z = plain(a.reshape(1, -1) if a.ndim == 1 else a, b.reshape(-1, 1) if b.ndim == 1 else b)
    batch, (m, n) = z.shape[:-2], z.shape[-2:]
    return z.reshape(batch + (m,) * (a.ndim > 1) + (n,) * (b.ndim > 1))
