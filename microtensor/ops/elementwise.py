"""Elementwise functions `exp log sqrt abs tanh`, each with its derivative (notes 3.8: their
backward). Off the reading path: the chapter's ops fuse their own (softmax's exp, the loss's
log, layer norm's √); the activations are ops/pointwise.py. An integer input reaches these as
float32, as torch's (parity/surface/pointwise.py).
"""
import numpy as np

from ..autograd import Function
from ..tensor import Tensor, apply


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
    """z = |a|;   ∂L/∂a = g ⊙ sign(a)   (0 at a = 0, and at NaN, as PyTorch)"""

    op = "abs"

    def forward(self, a):
        self.save(sign=np.nan_to_num(np.sign(a), nan=0.0))
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


Tensor.exp = lambda a: apply(Exp(), a)
Tensor.log = lambda a: apply(Log(), a)
Tensor.sqrt = lambda a: apply(Sqrt(), a)
Tensor.abs = lambda a: apply(Abs(), a)
Tensor.tanh = lambda a: apply(Tanh(), a)
