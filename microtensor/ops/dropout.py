"""Inverted dropout (Srivastava et al. 2014): zero each element with probability p, scale the rest
by 1/(1−p) (notes 3.6: applied to each sub-layer's output before the residual add).

z = x ⊙ m / (1 − p) with m ~ Bernoulli(1 − p);   ∂L/∂x = g ⊙ m / (1 − p).
"""
import numpy as np

from .. import random
from ..autograd import Function
from ..parity.arguments import check_probability, tensor
from ..tensor import Tensor, apply


class Dropout(Function):
    """Keeps each element with probability 1 − p, scaled by 1/(1 − p): the expected value stays."""

    op = "dropout"

    def __init__(self, p, generator):
        super().__init__()
        self.p, self.generator = p, generator

    def forward(self, x):
        # float32 draws: half the memory of float64, and ample resolution to compare with p
        keep = self.generator.random(x.shape, dtype=np.float32) >= self.p
        scale = keep.astype(x.dtype) * (1.0 / (1.0 - self.p))
        self.save(scale=scale)
        return x * scale

    def backward(self, g):
        return g * self.saved["scale"]


def dropout(x, p=0.5, training=True):
    """Zero each element with probability p and scale the rest by 1/(1−p), so the expected
    value is unchanged ("inverted" dropout: nothing to rescale at eval); p is 0.5 unless
    given (torch's default); identity if not
    training or p == 0, zeros if p == 1 (as torch). ValueError unless 0 ≤ p ≤ 1."""
    p = check_probability(p, "dropout")
    x = tensor(x, "x")
    if not training or p == 0:
        return x
    if p == 1:  # every element dropped: zeros of x's dtype, and a zero gradient
        return x * Tensor(np.zeros((), x.dtype))
    return apply(Dropout(p, random.generator()), x)
