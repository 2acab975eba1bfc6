"""Reductions `sum mean max` over one axis, several axes, or all of them.

The backward of a reduction spreads g back over the reduced axes: every input
element of a sum gets g, of a mean g/n, and of a max only the arg-max element(s).
"""
import numpy as np

from ..autograd import Function


def normalize_axes(axis, ndim, op):
    """`axis` (None, int or tuple, negatives allowed) as a sorted tuple of axes."""
    if axis is None:
        return tuple(range(ndim))
    axes = (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis)
    for a in axes:  # max(ndim, 1): a 0-d tensor accepts axis 0 or −1, as PyTorch's dim
        if not -ndim <= a < max(ndim, 1):
            raise ValueError(f"{op}: axis {a} is out of range for a tensor with {ndim} dims")
    return tuple(sorted(a % max(ndim, 1) for a in axes))


class _Reduce(Function):
    """Base of the reductions: `axes` is fixed in forward, once the input's ndim is known."""

    def __init__(self, axis=None, keepdims=False):
        super().__init__()
        self.axis, self.keepdims = axis, keepdims

    def _spread(self, g):
        """g with the reduced axes put back as size 1, so that it broadcasts over the input."""
        return g if self.keepdims else np.expand_dims(g, self.axes)


class Sum(_Reduce):
    """z = Σ a over axes;   ∂L/∂a = g broadcast back over the summed axes"""

    op = "sum"

    def forward(self, a):
        self.axes = normalize_axes(self.axis, a.ndim, self.op)
        return a.sum(axis=self.axes, keepdims=self.keepdims)

    def backward(self, g):
        return np.broadcast_to(self._spread(g), self.input_shapes[0])


class Mean(_Reduce):
    """z = (1/n) Σ a over axes;   ∂L/∂a = g / n broadcast back"""

    op = "mean"

    def forward(self, a):
        self.axes = normalize_axes(self.axis, a.ndim, self.op)
        self.count = int(np.prod([a.shape[i] for i in self.axes]))
        return a.mean(axis=self.axes, keepdims=self.keepdims)

    def backward(self, g):
        return np.broadcast_to(self._spread(g) / self.count, self.input_shapes[0])


class Max(_Reduce):
    """z = max a over axes;   ∂L/∂a = g ⊙ [a = z] / (number of tied maxima)

    With ties the gradient is shared equally, so it still sums to g (as torch.amax).
    """

    op = "max"

    def forward(self, a):
        self.axes = normalize_axes(self.axis, a.ndim, self.op)
        if a.size == 0:
            raise ValueError(f"max: cannot reduce an empty tensor of shape {a.shape}")
        z = a.max(axis=self.axes, keepdims=True)
        is_max = a == z
        self.save(is_max=is_max, count=is_max.sum(axis=self.axes, keepdims=True))
        return z if self.keepdims else np.squeeze(z, axis=self.axes)

    def backward(self, g):
        is_max, count = self.saved["is_max"], self.saved["count"]
        return is_max * (self._spread(g) / count).astype(g.dtype)
