"""The activations: ReLU and GELU, each with its derivative (notes 3.6: the FFN's nonlinearity;
3.8: the backward flow passes through them).

GELU follows Hendrycks & Gimpel 2016, "Gaussian Error Linear Units": x·Φ(x). The other
elementwise functions (exp, log, sqrt, abs, tanh) are alike, off the path: ops/elementwise.py.
"""
import numpy as np

from ..autograd import Function
from ..parity.gelu import gelu_and_slope
from ..tensor import Tensor, apply


class ReLU(Function):
    """z = max(a, 0);   ∂L/∂a = 0 where a ≤ 0, else g"""

    op = "relu"

    def forward(self, a):
        self.save(inactive=a <= 0)  # the slope at a = 0 taken as 0, as torch
        return np.where(a < 0, 0, a)  # max(a, 0); <, not <=, so that −0.0 stays −0.0 (torch)

    def backward(self, g):
        return np.where(self.saved["inactive"], 0, g).astype(g.dtype, copy=False)


class GELU(Function):
    """z = x·Φ(x), Φ the standard normal CDF;   ∂L/∂x = g ⊙ (Φ(x) + x·φ(x))

    Φ(x) = ½(1 + erf(x/√2)), φ(x) = exp(−x²/2)/√(2π); numpy has no erf (parity/gelu.py).
    """

    op = "gelu"

    def forward(self, x):
        z, slope = gelu_and_slope(x, self.needs_input_grad[0])  # x·Φ(x); ∂z/∂x if needed
        self.save(slope=slope)
        return z

    def backward(self, g):
        return g * self.saved["slope"]


Tensor.relu = lambda a: apply(ReLU(), a)  # GELU has no method: F.gelu (parity/surface/)
