"""Softmax along one axis, numerically stable: the row maximum is subtracted first, which leaves
the result unchanged (notes 3.1–3.3; its backward in 3.8).

Backward in closed form:   ds = a ⊙ (da − Σ a ⊙ da),
with da = ∂L/∂a arriving from above, ds = ∂L/∂s, and Σ along `axis`: the product of the
Jacobian ∂aᵢ/∂sⱼ = aᵢ(δᵢⱼ − aⱼ) with da, without forming it:
dsⱼ = Σᵢ daᵢ·aᵢ(δᵢⱼ − aⱼ) = aⱼ·daⱼ − aⱼ·Σᵢ aᵢdaᵢ = aⱼ(daⱼ − Σᵢ aᵢdaᵢ).
"""
import numpy as np

from ..autograd import Function
from ..parity.low_precision import computed_in_float32
from ..tensor import Tensor, apply
from .rows import row_dot, row_max, row_sum


@computed_in_float32  # float16 as torch: computed in float32, rounded once
class Softmax(Function):
    """a = exp(s) / Σ exp(s) along `axis`;   ds = a ⊙ (da − Σ a ⊙ da)

    An all −inf row (every key blocked) gets zero weights: notes 3.3 asks for such rows to be
    handled explicitly, where PyTorch gives NaN (docs/conformance.md).
    """

    op = "softmax"

    def __init__(self, axis=-1):
        self.axis = axis

    def forward(self, s):
        m = row_max(s, self.axis)  # max s along the axis (kept as size 1, to broadcast)
        m[np.isneginf(m)] = 0  # an all −inf row: −inf − (−inf) would be NaN
        with np.errstate(invalid="ignore"):  # inf − inf is NaN, as PyTorch's softmax of [inf, inf]
            e = s - m
        np.exp(e, out=e)  # exp(s − max), in place
        total = row_sum(e, self.axis)  # Σ exp(s − max), kept as size 1 (as row_max, row_dot)
        total[total == 0] = 1  # an all −inf row has e = 0: 0/1 gives zero weights, not 0/0
        e /= total  # a = e / Σ e, in place: the exp buffer is this op's own
        self.save(a=e)
        return e

    def backward(self, da):
        a = self.saved["a"]
        ds = da - row_dot(a, da, self.axis)  # da − Σ a ⊙ da (the sum kept as size 1)
        ds *= a
        return ds


Tensor.softmax = lambda s, axis=-1: apply(Softmax(axis), s)
