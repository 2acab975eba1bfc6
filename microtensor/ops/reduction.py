"""Reductions `sum mean` over a tuple of axes, each with its backward (max: ops/maximum.py).

The backward of a reduction spreads g back over the reduced axes: every input element of a sum
gets g, of a mean g/n.
"""
import math

import numpy as np

from ..autograd import Function
from ..parity.summation import mean_as_torch, sum_as_torch
from ..tensor import Tensor, apply


class Reduction(Function):
    """A reduction over `axes` (a sorted tuple of dims), kept as size 1 if `keepdims`."""

    def __init__(self, axes, keepdims=False):
        self.axes, self.keepdims = axes, keepdims

    def _spread(self, g):
        """g with the reduced axes put back as size 1, so that it broadcasts over the input."""
        return g if self.keepdims else np.expand_dims(g, self.axes)


class Sum(Reduction):
    """z = Σ a over axes;   ∂L/∂a = g broadcast back over the summed axes"""

    op = "sum"

    def forward(self, a):
        return sum_as_torch(a, self.axes, self.keepdims)  # a.sum(axes), added as torch adds

    def backward(self, g):
        return np.broadcast_to(self._spread(g), self.input_shapes[0])


class Mean(Reduction):
    """z = (1/n) Σ a over axes;   ∂L/∂a = g / n broadcast back"""

    op = "mean"

    def forward(self, a):
        self.count = math.prod(a.shape[i] for i in self.axes)  # n
        return mean_as_torch(a, self.axes, self.keepdims, self.count)  # Σ a / n, as torch

    def backward(self, g):
        return np.broadcast_to(self._spread(g) / max(self.count, 1), self.input_shapes[0])


# parity/surface/reduction.py wraps both: x.sum() of all, axis= or dim=, keepdim= (as torch)
Tensor.sum = lambda x, axes, keepdims=False: apply(Sum(axes, keepdims), x)
Tensor.mean = lambda x, axes, keepdims=False: apply(Mean(axes, keepdims), x)
