"""Inverted dropout (Srivastava et al. 2014): zero each element with probability p, scale the rest
by 1/(1−p); applied to each sub-layer's output before the residual add (Vaswani et al. 2017 §5.4).

z = x ⊙ m / (1 − p) with m ~ Bernoulli(1 − p);   ∂L/∂x = g ⊙ m / (1 − p).
Applied by F.dropout (parity/surface/nn_functional.py), which nn.Dropout calls in training.
"""
import numpy as np

from ..autograd import Function


class Dropout(Function):
    """Keeps each element with probability 1 − p, scaled by 1/(1 − p): the expected value stays."""

    op = "dropout"

    def __init__(self, p, generator):
        self.p, self.generator = p, generator

    def forward(self, x):
        keep = self.generator.random(x.shape, dtype=np.float32) >= self.p  # m
        scale = keep.astype(x.dtype) * (1.0 / (1.0 - self.p))
        self.save(scale=scale)
        return x * scale

    def backward(self, g):
        return g * self.saved["scale"]
