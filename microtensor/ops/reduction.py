"""Reductions `sum mean max` over one axis, several axes, or all of them (notes 3.8: their
backward; the means of LayerNorm 3.6 and the loss 3.7 are built on them).

The backward of a reduction spreads g back over the reduced axes: every input
element of a sum gets g, of a mean g/n, and of a max only the arg-max element(s).
"""
import numpy as np

from ..autograd import Function


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
        # bool and integer sums are int64, as PyTorch (numpy would keep uint8, say)
        dtype = np.int64 if a.dtype.kind in "biu" else None
        return a.sum(axis=self.axes, keepdims=self.keepdims, dtype=dtype)

    def backward(self, g):
        return np.broadcast_to(self._spread(g), self.input_shapes[0])


class Mean(_Reduce):
    """z = (1/n) Σ a over axes;   ∂L/∂a = g / n broadcast back"""

    op = "mean"

    def forward(self, a):
        self.axes = normalize_axes(self.axis, a.ndim, self.op)
        if a.dtype.kind not in "f":
            raise TypeError(f"mean: needs a floating-point tensor (as PyTorch); got dtype "
                            f"{a.dtype}: cast it first, or take sum()")
        self.count = int(np.prod([a.shape[i] for i in self.axes]))
        with np.errstate(invalid="ignore", divide="ignore"):  # mean of nothing is NaN, as torch
            total = a.sum(axis=self.axes, keepdims=self.keepdims)
            return np.divide(total, self.count, dtype=a.dtype)

    def backward(self, g):
        return np.broadcast_to(self._spread(g) / max(self.count, 1), self.input_shapes[0])


class Max(_Reduce):
    """z = max a over axes;   ∂L/∂a = g ⊙ [a = z] / (number of tied maxima)

    With ties the gradient is shared equally, so it still sums to g (as torch.amax).
    """

    op = "max"

    def forward(self, a):
        self.axes = normalize_axes(self.axis, a.ndim, self.op)
        if any(a.shape[i] == 0 for i in self.axes):  # an empty kept axis is fine
            raise ValueError(f"max: cannot reduce over an axis of size 0 (shape {a.shape}, "
                             f"axes {self.axes}): a maximum of nothing has no value")
        z = a.max(axis=self.axes, keepdims=True)
        is_max = a == z
        self.save(is_max=is_max, count=is_max.sum(axis=self.axes, keepdims=True))
        return z if self.keepdims else np.squeeze(z, axis=self.axes)

    def backward(self, g):
        is_max, count = self.saved["is_max"], self.saved["count"]
        return is_max * (self._spread(g) / count).astype(g.dtype)


def normalize_axes(axis, ndim, op):
    """`axis` (None, int or tuple, negatives allowed) as a sorted tuple of axes.

    As PyTorch's dim: an empty tuple means every axis, a 0-d tensor takes axis 0 or −1;
    IndexError for an axis out of range, TypeError for one that is not an int, ValueError
    for one given twice.
    """
    if axis is None or axis == ():
        return tuple(range(ndim))
    axes = (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis)
    for a in axes:
        if not isinstance(a, (int, np.integer)) or isinstance(a, bool):
            raise TypeError(f"{op}: axis must be an int or a tuple of ints; got {axis!r}")
        if not -max(ndim, 1) <= a < max(ndim, 1):
            raise IndexError(f"{op}: axis {a} is out of range for a tensor with {ndim} dims "
                             f"(expected {-max(ndim, 1)} to {max(ndim, 1) - 1})")
    normalized = tuple(sorted(int(a) % max(ndim, 1) for a in axes))
    if len(set(normalized)) != len(normalized):
        raise ValueError(f"{op}: axis {axis!r} names an axis twice")
    return normalized if ndim else ()
