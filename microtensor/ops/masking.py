"""`masked_fill`: write a constant where a boolean mask is True (blocked), the masking step of
attention.

Convention (the project's contract, as PyTorch): True means *blocked*. The filled entries
are constants, so no gradient flows to them:   ∂L/∂x = g ⊙ [not mask]   (notes 3.3, 3.8).
"""
import numpy as np

from ..autograd import Function


class MaskedFill(Function):
    """z = value where mask else x;   ∂L/∂x = g where not mask, else 0"""

    op = "masked_fill"

    def __init__(self, mask, value):
        """mask: a boolean numpy array (Tensor.masked_fill checks and converts it)."""
        super().__init__()
        self.mask, self.value = mask, value

    def forward(self, x):
        if np.broadcast_shapes(x.shape, self.mask.shape) != x.shape:
            raise ValueError(f"masked_fill: mask of shape {self.mask.shape} must broadcast to "
                             f"x's shape {x.shape} without growing it")
        return _fill(x, self.mask, self.value)

    def backward(self, g):
        return _fill(g, self.mask, 0)


def _fill(x, mask, value):
    """A copy of x with `value` where mask; copy-then-write is ~2x faster than np.where here."""
    out = np.array(x)  # a copy, and an array even for a 0-d x
    np.copyto(out, value, where=mask, casting="unsafe")  # value in x's dtype, as torch
    return out
