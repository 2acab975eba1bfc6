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
    """z = max(a, 0);   ∂L/∂a = g ⊙ [a > 0]"""

    op = "relu"

    def forward(self, a):
        positive = a > 0
        self.save(positive=positive)
        return a * positive

    def backward(self, g):
        return g * self.saved["positive"]


_ERFC_COEFFS = (-1.26551223, 1.00002368, 0.37409196, 0.09678418, -0.18628806, 0.27886807,
                -1.13520398, 1.48851587, -0.82215223, 0.17087277)


def erf(x):
    """The error function, elementwise, to 1e-7 (numpy has none); also returns exp(−x²).

    Chebyshev fit of erfc from Press et al., "Numerical Recipes" §6.2:
    erfc(z) ≈ t·exp(−z² + P(t)), t = 1/(1 + z/2), z = |x|. |x| is capped at 9 (erf is
    1 to float precision there) so that exp never produces subnormal floats, which are slow.
    """
    z = np.minimum(np.abs(x), 9)
    t = 1 / (1 + 0.5 * z)
    poly = t * _ERFC_COEFFS[-1]
    for c in _ERFC_COEFFS[-2:0:-1]:  # Horner's rule, in place to spare temporaries
        poly += c
        poly *= t
    gauss = np.exp(-z * z)
    erfc = t * gauss * np.exp(poly + _ERFC_COEFFS[0])
    return np.copysign(1 - erfc, x), gauss


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
        erf_value, gauss = erf(x / _SQRT_2)  # gauss = exp(−x²/2) = √(2π)·φ(x)
        cdf = 0.5 * (1 + erf_value)
        self.save(x=x, cdf=cdf, gauss=gauss)
        return x * cdf

    def backward(self, g):
        x = self.saved["x"]
        if self.approximate == "tanh":
            th = self.saved["tanh"]
            du = _SQRT_2_OVER_PI * (1 + 3 * 0.044715 * x * x)
            return g * (0.5 * (1 + th) + 0.5 * x * (1 - th * th) * du)
        pdf = _INV_SQRT_2PI * self.saved["gauss"]
        return g * (self.saved["cdf"] + x * pdf)
