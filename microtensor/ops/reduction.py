"""Reductions `sum mean max` over one axis, several axes, or all of them (notes 3.8: their
backward; the means of LayerNorm 3.6 and the loss 3.7 are built on them).

The backward of a reduction spreads g back over the reduced axes: every input
element of a sum gets g, of a mean g/n, and of a max only the arg-max element(s).
"""
import collections

import numpy as np

from ..autograd import Function
from ..parity import dims as _dims
from ..parity.summation import sum_as_torch
from ..tensor import Tensor, apply, tensor_method


class _Reduce(Function):
    """Base of the reductions: `axes` is fixed in forward, once the input's ndim is known."""

    def __init__(self, axis=None, keepdims=False):
        super().__init__()
        self.axis, self.keepdims = axis, keepdims

    def _axes(self, a):
        # the reduced axes as a sorted tuple of non-negative ints, every axis for None
        # (parity/dims.py turns each form torch accepts, int, list, negative, into this)
        self.axes = _dims.dims(self.axis, a.ndim, self.op)
        return self.axes

    def _spread(self, g):
        """g with the reduced axes put back as size 1, so that it broadcasts over the input."""
        return g if self.keepdims else np.expand_dims(g, self.axes)


class Sum(_Reduce):
    """z = Σ a over axes;   ∂L/∂a = g broadcast back over the summed axes"""

    op = "sum"

    def forward(self, a):
        self._axes(a)
        # bool and integer sums are int64, as PyTorch (numpy would keep uint8, say)
        if a.dtype.kind in "biu":
            return a.sum(axis=self.axes, keepdims=self.keepdims, dtype=np.int64)
        return sum_as_torch(a, self.axes, self.keepdims)  # float16 in float32, long axes blocked

    def backward(self, g):
        return np.broadcast_to(self._spread(g), self.input_shapes[0])


class Mean(_Reduce):
    """z = (1/n) Σ a over axes;   ∂L/∂a = g / n broadcast back"""

    op = "mean"

    def forward(self, a):
        self._axes(a)
        if a.dtype.kind not in "f":
            raise TypeError(f"mean: needs a floating-point tensor (as PyTorch); got dtype "
                            f"{a.dtype}: cast it first, or take sum()")
        self.count = int(np.prod([a.shape[i] for i in self.axes]))
        with np.errstate(invalid="ignore", divide="ignore"):  # mean of nothing is NaN, as torch
            total = sum_as_torch(a, self.axes, self.keepdims, dtype=np.float32 if
                                 a.dtype.itemsize < 4 else None)  # float16: /n before rounding
            return np.divide(total, self.count).astype(a.dtype, copy=False)

    def backward(self, g):
        return np.broadcast_to(self._spread(g) / max(self.count, 1), self.input_shapes[0])


class Max(_Reduce):
    """z = max a over axes;   ∂L/∂a = g ⊙ [a = z] / (number of tied maxima)

    With ties the gradient is shared equally, so it still sums to g (as torch.amax). Over
    every dim with no dim given (torch's `x.max()`), a NaN maximum is shared by the NaN
    entries, as torch; with dims given (torch's amax) a row with a NaN gets NaN gradients.
    """

    op = "max"

    def forward(self, a):
        self._axes(a)
        if any(a.shape[i] == 0 for i in self.axes):  # an empty kept axis is fine
            raise ValueError(f"max: cannot reduce over an axis of size 0 (shape {a.shape}, "
                             f"axes {self.axes}): a maximum of nothing has no value")
        z = a.max(axis=self.axes, keepdims=True)
        is_max = a == z
        if self.axis is None and not self.keepdims and np.isnan(z).any():  # torch's x.max()
            is_max |= np.isnan(a)
        self.save(is_max=is_max, count=is_max.sum(axis=self.axes, keepdims=True))
        return z if self.keepdims else np.squeeze(z, axis=self.axes)

    def backward(self, g):
        is_max, count = self.saved["is_max"], self.saved["count"]
        if self.axis is None and not self.keepdims:  # torch's x.max(): g only where is_max,
            return np.where(is_max, g / count, 0).astype(g.dtype)  # even a NaN g (index_put)
        with np.errstate(divide="ignore", invalid="ignore"):  # a NaN row: NaN, as torch.amax
            return is_max * (self._spread(g) / count).astype(g.dtype)


# ---- the Tensor methods: numpy's axis=/keepdims= or torch's dim=/keepdim= (not both) ----------

@tensor_method("sum")
def sum_method(self, axis=None, keepdims=None, *, dim=None, keepdim=None):
    return apply(Sum(_dims.pick(axis, dim, "sum"), _dims.pick_keepdim(keepdims, keepdim, "sum")),
                 self)


@tensor_method("mean")
def mean_method(self, axis=None, keepdims=None, *, dim=None, keepdim=None):
    return apply(Mean(_dims.pick(axis, dim, "mean"),
                      _dims.pick_keepdim(keepdims, keepdim, "mean")), self)


@tensor_method("max")
def max_method(self, axis=None, keepdims=None, *, dim=None, keepdim=None):
    """max(axis=) (numpy's name): the largest values, torch's amax (ties share the
    gradient). max(dim=) (torch's name): torch's named tuple (values, indices) of
    `torch.max(x, dim)`, so that torch code `v, i = x.max(dim=1)` means the same here."""
    keep = _dims.pick_keepdim(keepdims, keepdim, "max")
    if dim is not None:
        _dims.pick(axis, dim, "max")  # TypeError for both
        return _max_with_indices(self, dim, keep)
    return apply(Max(axis, keep), self)


MaxResult = collections.namedtuple("max", ["values", "indices"])  # torch.return_types.max


def _max_with_indices(x, dim, keepdim):
    """torch.max(x, dim): (values, int64 indices of the first largest entry along dim).

    The values are the entries at the indices, picked by indexing, so the gradient goes to
    that one entry (as torch), not shared between ties as amax's. A NaN is the largest.
    """
    if isinstance(dim, bool) or not isinstance(dim, (int, np.integer)):
        raise TypeError(f"max(dim=): dim must be one int (torch's max(dim) returns values and "
                        f"indices); got {dim!r}; for several axes use max(axis=...)")
    axis = _dims.dim(dim, x.ndim, "max(dim=)")
    if x.ndim == 0:
        return MaxResult(x.reshape(()), Tensor(np.array(0)))
    if x.shape[axis] == 0:
        raise IndexError(f"max(dim={dim}): the dim has size 0, it has no largest entry "
                         f"(shape {x.shape})")
    idx = x.data.argmax(axis=axis, keepdims=True)                # first largest, as torch
    where = list(np.indices(idx.shape, sparse=True))
    where[axis] = idx
    values = x[tuple(where)]                                     # keepdim shape
    if not keepdim:
        values = values.reshape(values.shape[:axis] + values.shape[axis + 1:])
        idx = idx.squeeze(axis)
    return MaxResult(values, Tensor(idx.astype(np.int64)))
