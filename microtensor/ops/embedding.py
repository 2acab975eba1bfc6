"""Embedding lookup: row `i` of the weight matrix for each integer id `i`.

z[..., :] = W[ids[...], :];   ∂L/∂W[i] = Σ of g over every position whose id is i.
"""
import numpy as np

from ..autograd import Function


class Embedding(Function):
    """ids [...] (integers) and weight [V, D] -> [..., D]."""

    op = "embedding"

    def __init__(self, ids):
        super().__init__()
        self.ids = ids

    def forward(self, weight):
        if self.ids.size and (self.ids.min() < 0 or self.ids.max() >= weight.shape[0]):
            raise IndexError(f"embedding: ids must lie in [0, {weight.shape[0]}); got values "
                             f"from {self.ids.min()} to {self.ids.max()}")
        return weight[self.ids]

    def backward(self, g):
        (weight_shape,) = self.input_shapes
        gw = np.zeros(weight_shape, dtype=g.dtype)
        # rows spelled out: reshape(-1, D) is ambiguous when D = 0
        np.add.at(gw, self.ids.reshape(-1), g.reshape(self.ids.size, weight_shape[1]))
        return gw
