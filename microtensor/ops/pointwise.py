"""Elementwise functions `exp log sqrt tanh relu gelu`, each with its derivative.

GELU follows Hendrycks & Gimpel 2016, "Gaussian Error Linear Units": exact form
x·Φ(x), or the tanh approximation GPT-2 used.
"""
import math

import numpy as np

from ..autograd import Function


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


_ERFC_COEFFS = (-1.26551223, 1.00002368, 0.37409196, 0.09678418, -0.18628806, 0.27886807,
                -1.13520398, 1.48851587, -0.82215223, 0.17087277)


_exact_erf = np.frompyfunc(math.erf, 1, 1)  # the C library's erf, correct to about 1 ulp


def erf(x):
    """The error function, elementwise (numpy has none).

    float64: Python's math.erf on each element, exact to machine precision (float64 is for
    gradient checks and comparisons with PyTorch; about 2x the time of the fit below).
    Other dtypes, to 1e-7 (float32's precision), fast: a Chebyshev fit of erfc from
    Press et al., "Numerical Recipes" §6.2:
    erfc(z) ≈ t·exp(−z² + P(t)), t = 1/(1 + z/2), z = |x|; erf(x) = sign(x)·(1 − erfc(|x|)).
    |x| is capped at 9 (erf is 1 to float precision there) so that exp never produces
    subnormal floats, which are slow. Updated in place: GELU calls this on big arrays.
    """
    if x.dtype == np.float64:
        return np.asarray(_exact_erf(x), dtype=np.float64)  # a 0-d input gives a Python float
    shape, x = np.shape(x), np.reshape(x, -1)  # 1-D: numpy scalars cannot be updated in place
    z = np.minimum(np.abs(x), 9)
    t = 1 / (1 + 0.5 * z)
    e = t * _ERFC_COEFFS[-1]
    e += _ERFC_COEFFS[-2]
    for c in _ERFC_COEFFS[-3::-1]:  # Horner's rule: P(t) = c₀ + t(c₁ + t(c₂ + …))
        e *= t
        e += c
    e -= z * z
    np.exp(e, out=e)
    e *= t  # erfc(|x|)
    np.subtract(1, e, out=e)
    return np.copysign(e, x, out=e).reshape(shape)


def normal_pdf(x):
    """φ(x) = exp(−x²/2)/√(2π), elementwise.

    Where exp(−x²/2) would fall below the dtype's smallest normal float (|x| > 13.2 in
    float32, 37.6 in float64) φ is set to 0 instead: subnormal floats are slow, and
    x·φ(x) at x = ±inf is then NaN, as PyTorch's GELU gradient there.
    """
    x2 = x * x
    cap = -2 * math.log(np.finfo(x.dtype).tiny)
    return _INV_SQRT_2PI * np.exp(-0.5 * np.minimum(x2, cap)) * (x2 <= cap)


_SQRT_2 = math.sqrt(2.0)
_INV_SQRT_2PI = 1 / math.sqrt(2 * math.pi)
_SQRT_2_OVER_PI = math.sqrt(2 / math.pi)


class GELU(Function):
    """z = x·Φ(x), Φ the standard normal CDF;   ∂L/∂x = g ⊙ (Φ(x) + x·φ(x)).

    approximate="tanh": Φ(x) ≈ ½(1 + tanh(u)), u = √(2/π)(x + 0.044715x³),
    ∂L/∂x = g ⊙ (½(1 + tanh u) + ½x(1 − tanh²u)·√(2/π)(1 + 3·0.044715x²)).
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
        cdf = erf(x * (1 / _SQRT_2))
        cdf += 1
        cdf *= 0.5  # Φ(x) = ½(1 + erf(x/√2))
        self.save(x=x, cdf=cdf)
        return x * cdf

    def backward(self, g):
        x = self.saved["x"]
        if self.approximate == "tanh":
            th = self.saved["tanh"]
            du = _SQRT_2_OVER_PI * (1 + 3 * 0.044715 * x * x)
            return g * (0.5 * (1 + th) + 0.5 * x * (1 - th * th) * du)
        return g * (self.saved["cdf"] + x * normal_pdf(x))
