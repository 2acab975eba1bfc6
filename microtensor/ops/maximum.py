"""`max` over a tuple of axes, a reduction as ops/reduction.py's, whose gradient reaches only the
largest element(s); torch's forms and max(dim=)'s indices are in parity/surface/reduction.py.
"""
import numpy as np

from ..tensor import Tensor, apply
from .reduction import Reduction


class Max(Reduction):
    """z = max a over axes;   ∂L/∂a = g ⊙ [a = z] / (number of tied maxima)

    With ties the gradient is shared equally, so it still sums to g (as torch.amax); a row
    holding a NaN has the maximum NaN and NaN gradients.
    """

    op = "max"

    def forward(self, a):
        z = a.max(axis=self.axes, keepdims=True)
        is_max = a == z
        self.save(is_max=is_max, count=is_max.sum(axis=self.axes, keepdims=True))
        return z if self.keepdims else np.squeeze(z, axis=self.axes)

    def backward(self, g):
        is_max, count = self.saved["is_max"], self.saved["count"]
        with np.errstate(divide="ignore", invalid="ignore"):  # a NaN row: count 0, NaN
            return is_max * (self._spread(g) / count).astype(g.dtype)


Tensor.max = lambda x, axes, keepdims=False: apply(Max(axes, keepdims), x)
