"""`masked_fill`: write a constant where a boolean mask is True (blocked), the masking step of
attention.

Convention (CONTRACT, PyTorch): True means *blocked*. The filled entries are constants,
so no gradient flows to them:   ∂L/∂x = g ⊙ [not mask]   (notes 3.3, 3.8).
"""
import numpy as np

from ..autograd import Function


class MaskedFill(Function):
    """z = value where mask else x;   ∂L/∂x = g where not mask, else 0"""

    op = "masked_fill"

    def __init__(self, mask, value):
        """mask: a boolean numpy array (Tensor.masked_fill checks and converts it)."""
        super().__init__()
        self.mask, self.value = mask, float(value)

    def forward(self, x):
        if np.broadcast_shapes(x.shape, self.mask.shape) != x.shape:
            raise ValueError(f"masked_fill: mask of shape {self.mask.shape} must broadcast to "
                             f"x's shape {x.shape} without growing it")
        return np.where(self.mask, np.asarray(self.value, dtype=x.dtype), x)

    def backward(self, g):
        return np.where(self.mask, np.zeros((), dtype=g.dtype), g)
