"""`Cast`: a tensor in another dtype, on the graph (torch's a.to(dtype)). What type promotion
makes of an operand that requires grad (float32 · a learnable 0-d float64 is float32, as torch):
a plain astype would cut it off the graph."""
import numpy as np

from ..autograd import Function


class Cast(Function):
    """z = a in another dtype;   ∂L/∂a = g, back in a's dtype"""

    op = "cast"

    def __init__(self, dtype):
        super().__init__()
        self.to = np.dtype(dtype)

    def forward(self, a):
        self.source = a.dtype  # a setting, not an array: backward only needs its dtype
        return a.astype(self.to)

    def backward(self, g):
        return g.astype(self.source)
