"""Elementwise functions `exp log sqrt abs tanh relu gelu` and `cast`, each with its derivative
(notes 3.6: the FFN's activation; 3.8: their backward).

GELU follows Hendrycks & Gimpel 2016, "Gaussian Error Linear Units": exact form
x·Φ(x), or the tanh approximation GPT-2 used.
"""
import math

import numpy as np

from ..autograd import Function
from ..parity.arguments import floating_only, tensor
from ..parity.erf import erf, normal_pdf
from ..parity.gelu_float32 import gelu_float32
from ..parity.promotion import category
from ..tensor import Tensor, apply, tensor_method


class Exp(Function):
    """z = eᵃ;   ∂L/∂a = g ⊙ z"""

    op = "exp"

    def forward(self, a):
        z = np.exp(a)
        self.save(z=z)
        return z

    def backward(self, g):
        return g * self.saved["z"]


class Log(Function):
    """z = ln a;   ∂L/∂a = g / a"""

    op = "log"

    def forward(self, a):
        self.save(a=a)
        return np.log(a)

    def backward(self, g):
        return g / self.saved["a"]


class Sqrt(Function):
    """z = √a;   ∂L/∂a = g / (2z)"""

    op = "sqrt"

    def forward(self, a):
        z = np.sqrt(a)
        self.save(z=z)
        return z

    def backward(self, g):
        return g / (2 * self.saved["z"])


class Abs(Function):
    """z = |a|;   ∂L/∂a = g ⊙ sign(a)   (0 at a = 0, as PyTorch)"""

    op = "abs"

    def forward(self, a):
        sign = np.asarray(np.sign(a))
        sign[np.isnan(sign)] = 0  # the slope at NaN is 0, as torch's sgn
        self.save(sign=sign)
        return np.abs(a)

    def backward(self, g):
        return g * self.saved["sign"]


class Tanh(Function):
    """z = tanh a;   ∂L/∂a = g ⊙ (1 − z²)"""

    op = "tanh"

    def forward(self, a):
        z = np.tanh(a)
        self.save(z=z)
        return z

    def backward(self, g):
        z = self.saved["z"]
        return g * (1 - z * z)


class ReLU(Function):
    """z = max(a, 0);   ∂L/∂a = g where a > 0 (and where a is NaN, as PyTorch), else 0"""

    op = "relu"

    def forward(self, a):
        self.save(inactive=a <= 0)
        # not a·[a > 0]: −inf·0 would be NaN. As PyTorch, NaN stays NaN and −0.0 stays −0.0
        # (np.maximum(−0.0, 0) would give +0.0, and 1/relu(x) the other infinity)
        return np.where(a < 0, 0, a)

    def backward(self, g):
        # np.where, not g·mask: an inactive unit passes exactly 0 even when g is inf or NaN
        return np.where(self.saved["inactive"], 0, g).astype(g.dtype, copy=False)


_SQRT_2 = math.sqrt(2.0)
_SQRT_2_OVER_PI = math.sqrt(2 / math.pi)


class GELU(Function):
    """z = x·Φ(x), Φ the standard normal CDF;   ∂L/∂x = g ⊙ (Φ(x) + x·φ(x)).

    approximate="tanh": Φ(x) ≈ ½(1 + tanh(u)), u = √(2/π)(x + 0.044715x³),
    ∂L/∂x = g ⊙ (½(1 + tanh u) + ½x(1 − tanh²u)·√(2/π)(1 + 3·0.044715x²)).
    The exact form takes Φ from `erf` (parity/erf.py) in float64, exact to machine precision; other
    dtypes (float32, float16) take the few-pass formula of parity/gelu_float32.py in float32, whose
    error stays within PyTorch's float32 GELU's.
    """

    op = "gelu"

    def __init__(self, approximate="none"):
        super().__init__()
        if approximate not in ("none", "tanh"):
            raise ValueError(f"gelu: approximate must be 'none' or 'tanh'; got {approximate!r}")
        self.approximate = approximate

    def forward(self, x):
        if self.approximate == "tanh":
            th = np.tanh(_SQRT_2_OVER_PI * (x + 0.044715 * x * x * x))
            self.save(x=x, tanh=th)
            return 0.5 * x * (1 + th)
        if x.dtype != np.float64:
            z, slope = gelu_float32(x.astype(np.float32, copy=False),
                                    with_slope=self.needs_input_grad[0])
            z = z.astype(x.dtype, copy=False)
            slope = None if slope is None else slope.astype(x.dtype, copy=False)
        else:
            cdf = erf(x * (1 / _SQRT_2))
            cdf += 1
            cdf *= 0.5  # Φ(x) = ½(1 + erf(x/√2))
            z = x * cdf
            slope = cdf + x * normal_pdf(x) if self.needs_input_grad[0] else None
        # the slope Φ(x) + x·φ(x) is made here, where Φ is at hand: one array kept, not x and Φ
        self.save(slope=slope)
        return z

    def backward(self, g):
        if self.approximate == "tanh":
            x, th = self.saved["x"], self.saved["tanh"]
            du = _SQRT_2_OVER_PI * (1 + 3 * 0.044715 * x * x)
            return g * (0.5 * (1 + th) + 0.5 * x * (1 - th * th) * du)
        return g * self.saved["slope"]


class Cast(Function):
    """z = a in another dtype (torch's a.to(dtype));   ∂L/∂a = g, back in a's dtype

    What type promotion makes of an operand that requires grad (float32 · a learnable 0-d
    float64 is float32, as torch): a plain astype would cut it off the graph.
    """

    op = "cast"

    def __init__(self, dtype):
        super().__init__()
        self.to = np.dtype(dtype)

    def forward(self, a):
        self.source = a.dtype  # a setting, not an array: backward only needs its dtype
        return a.astype(self.to)

    def backward(self, g):
        return g.astype(self.source)


# ---- the Tensor methods and functional forms -------------------------------------------------

def _floating(x):
    """x, or for a bool or integer tensor its float32 copy: exp(int) is float32 in PyTorch
    (numpy would give float64)."""
    if category(x.dtype) == 2:
        return x
    return Tensor._make(x.data.astype(np.float32))


@tensor_method("exp")
def exp_method(self):
    return apply(Exp(), _floating(self))


@tensor_method("log")
def log_method(self):
    return apply(Log(), _floating(self))


@tensor_method("sqrt")
def sqrt_method(self):
    return apply(Sqrt(), _floating(self))


@tensor_method("tanh")
def tanh_method(self):
    return apply(Tanh(), _floating(self))


@tensor_method("abs", "__abs__")
def abs_method(self):
    if self.dtype == np.bool_:
        raise TypeError("abs() of a bool tensor is not supported (as torch)")
    return apply(Abs(), self)


@tensor_method("relu")
def _relu_method(self):
    if self.dtype == np.bool_:
        raise TypeError("relu of a bool tensor is not supported (as torch)")
    return apply(ReLU(), self)


def relu(x):
    """max(x, 0) elementwise; TypeError for a bool x (as torch)."""
    return tensor(x, "x").relu()


def gelu(x, approximate="none"):
    """x·Φ(x) elementwise, Φ the standard normal CDF (Hendrycks & Gimpel 2016);
    approximate="tanh" for GPT-2's form. ValueError for any other `approximate`."""
    return apply(GELU(approximate), floating_only(tensor(x, "x"), "gelu"))
