"""The gradient of masked_fill's value when it is a 0-d Tensor that requires grad, as torch's:
∂L/∂value = Σ g over the entries the mask filled.

ops/masking.py keeps `MaskedFill` the textbook op (x in, a number filled in); when the value is a
tensor that requires grad, `masked_fill` (parity/surface/masking.py) follows it with this op, which
passes z through unchanged and routes the filled entries' gradient to the value.
"""
import numpy as np

from ..autograd import Function
from .summation import sum_as_torch


class MaskedFillValue(Function):
    """(z, value) -> z;   ∂L/∂z = g,   ∂L/∂value = Σ g where mask"""

    op = "masked_fill"

    def __init__(self, mask):
        super().__init__()
        self.mask = mask

    def forward(self, z, value):
        self.save(mask=self.mask)  # freed by backward, as MaskedFill's
        return z.copy()  # an array of its own: z stays the graph's

    def backward(self, g):
        mask = np.broadcast_to(self.mask, g.shape)
        return g, sum_as_torch(np.where(mask, g, 0), tuple(range(g.ndim)))
