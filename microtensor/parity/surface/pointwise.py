"""The surface of the elementwise functions: an integer or bool input computed in float32 (as
torch; numpy would give float64), torch's refusals of bool inputs, `abs(t)`, the functional
forms `relu` and `gelu`, and GELU's tanh approximation (GPT-2's, `approximate="tanh"`)."""
import math

import numpy as np

from ...autograd import Function
from ...ops.pointwise import GELU
from ...tensor import Tensor, apply
from ..arguments import floating_only, tensor
from ..promotion import category


def install(Tensor):
    for name in ("exp", "log", "sqrt", "tanh"):
        setattr(Tensor, name, _floating(getattr(Tensor, name)))
    Tensor.abs = Tensor.__abs__ = _no_bool(Tensor.abs, "abs()")
    Tensor.relu = _no_bool(Tensor.relu, "relu")


def _floating(plain):
    """exp(int) is float32 in PyTorch: a bool or integer tensor goes in as its float32 copy."""
    def method(self):
        return plain(self if category(self.dtype) == 2
                     else Tensor._make(self.data.astype(np.float32)))
    return method


def _no_bool(plain, what):
    def method(self):
        if self.dtype == np.bool_:
            raise TypeError(f"{what} of a bool tensor is not supported (as torch)")
        return plain(self)
    return method


def relu(x):
    """max(x, 0) elementwise; TypeError for a bool x (as torch)."""
    return tensor(x, "x").relu()


def gelu(x, approximate="none"):
    """x·Φ(x) elementwise, Φ the standard normal CDF (Hendrycks & Gimpel 2016);
    approximate="tanh" for GPT-2's form. ValueError for any other `approximate`."""
    if approximate not in ("none", "tanh"):
        raise ValueError(f"gelu: approximate must be 'none' or 'tanh'; got {approximate!r}")
    x = floating_only(tensor(x, "x"), "gelu")
    return apply(GELU() if approximate == "none" else GELUTanh(), x)


_SQRT_2_OVER_PI = math.sqrt(2 / math.pi)


class GELUTanh(Function):
    """z = ½x(1 + tanh u), u = √(2/π)(x + 0.044715x³), GELU's tanh approximation;
    ∂L/∂x = g ⊙ (½(1 + tanh u) + ½x(1 − tanh²u)·√(2/π)(1 + 3·0.044715x²))"""

    op = "gelu"

    def forward(self, x):
        th = np.tanh(_SQRT_2_OVER_PI * (x + 0.044715 * x * x * x))
        self.save(x=x, tanh=th)
        return 0.5 * x * (1 + th)

    def backward(self, g):
        x, th = self.saved["x"], self.saved["tanh"]
        du = _SQRT_2_OVER_PI * (1 + 3 * 0.044715 * x * x)
        return g * (0.5 * (1 + th) + 0.5 * x * (1 - th * th) * du)
