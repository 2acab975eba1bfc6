"""`masked_fill`: write a constant where a boolean mask is True (blocked), the masking step of attention.

Convention (CONTRACT, PyTorch): True means *blocked*. The filled entries are constants,
so no gradient flows to them:   ∂L/∂x = g ⊙ [not mask]   (notes 3.3, 3.8).
"""
import numpy as np

from ..autograd import Function


def as_mask(mask, name="mask"):
    """A boolean numpy array from a Tensor or array; TypeError for any other dtype."""
    from ..tensor import Tensor  # late import: tensor.py imports this module

    mask = np.asarray(mask.data if isinstance(mask, Tensor) else mask)
    if mask.dtype != np.bool_:
        raise TypeError(f"{name} must be boolean (True = blocked); got dtype {mask.dtype}. "
                        "For an additive float mask add it to the scores instead")
    return mask


class MaskedFill(Function):
    """z = value where mask else x;   ∂L/∂x = g where not mask, else 0"""

    op = "masked_fill"

    def __init__(self, mask, value):
        super().__init__()
        self.mask, self.value = as_mask(mask), float(value)

    def forward(self, x):
        if np.broadcast_shapes(x.shape, self.mask.shape) != x.shape:
            raise ValueError(f"masked_fill: mask of shape {self.mask.shape} must broadcast to "
                             f"x's shape {x.shape} without growing it")
        self.save(mask=self.mask)
        return np.where(self.mask, np.asarray(self.value, dtype=x.dtype), x)

    def backward(self, g):
        return np.where(self.saved["mask"], np.zeros((), dtype=g.dtype), g)
