"""`masked_fill`: write a constant where a boolean mask is True (blocked, as PyTorch), the masking
step of attention (notes 3.3; its backward 3.8). The filled entries are constants, so no
gradient flows to them:   ∂L/∂x = g ⊙ [not mask].
"""
from ..autograd import Function
from ..tensor import Tensor, apply
from .fast import fill


class MaskedFill(Function):
    """z = value where mask else x;   ∂L/∂x = g where not mask, else 0"""

    op = "masked_fill"

    def __init__(self, mask, value):
        self.mask, self.value = mask, value  # a bool numpy array, broadcast against x

    def forward(self, x):
        self.save(mask=self.mask)  # only so that a 2nd backward is refused as torch's
        return fill(x, self.mask, self.value)  # np.where(mask, value, x) (ops/fast.py: faster)

    def backward(self, g):
        return fill(g, self.mask, 0)  # np.where(mask, 0, g)


Tensor.masked_fill = lambda x, mask, value: apply(MaskedFill(mask, value), x)
