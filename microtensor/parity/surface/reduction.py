"""The surface of `sum mean max`: numpy's axis=/keepdims= or torch's dim=/keepdim= (not both),
every dims form torch takes (parity/dims.py), torch's dtypes (an integer sum is int64; mean
refuses integers), and torch's two maxima: `x.max()` of every element, whose NaN maximum the
NaN entries share, and `max(dim=)`, the named tuple (values, indices)."""
import collections

import numpy as np

from ...ops.maximum import Max
from ...tensor import Tensor, apply
from .. import dims


def install(Tensor):
    plain_sum, plain_mean, plain_max = Tensor.sum, Tensor.mean, Tensor.max

    def sum_method(self, axis=None, keepdims=None, *, dim=None, keepdim=None):
        axes = dims.dims(dims.pick(axis, dim, "sum"), self.ndim, "sum")
        keep = dims.pick_keepdim(keepdims, keepdim, "sum")
        if self.dtype.kind in "biu" and self.dtype != np.int64:  # as torch: int64 sums
            self = Tensor._make(self.data.astype(np.int64))
        return plain_sum(self, axes, keep)

    def mean_method(self, axis=None, keepdims=None, *, dim=None, keepdim=None):
        axes = dims.dims(dims.pick(axis, dim, "mean"), self.ndim, "mean")
        keep = dims.pick_keepdim(keepdims, keepdim, "mean")
        if self.dtype.kind not in "f":
            raise TypeError(f"mean: needs a floating-point tensor (as PyTorch); got dtype "
                            f"{self.dtype}: cast it first, or take sum()")
        with np.errstate(invalid="ignore", divide="ignore"):  # mean of nothing is NaN, as torch
            return plain_mean(self, axes, keep)

    def max_method(self, axis=None, keepdims=None, *, dim=None, keepdim=None):
        """max(axis=) (numpy's name): the largest values, torch's amax (ties share the
        gradient). max(dim=) (torch's name): torch's named tuple (values, indices) of
        `torch.max(x, dim)`, so that torch code `v, i = x.max(dim=1)` means the same here."""
        keep = dims.pick_keepdim(keepdims, keepdim, "max")
        if dim is not None:
            dims.pick(axis, dim, "max")  # TypeError for both
            return _max_with_indices(self, dim, keep)
        axes = dims.dims(axis, self.ndim, "max")
        if any(self.shape[i] == 0 for i in axes):  # an empty kept axis is fine
            raise ValueError(f"max: cannot reduce over an axis of size 0 (shape {self.shape}, "
                             f"axes {axes}): a maximum of nothing has no value")
        if axis is None and not keep:
            return apply(MaxAll(axes), self)
        return plain_max(self, axes, keep)

    Tensor.sum, Tensor.mean, Tensor.max = sum_method, mean_method, max_method


class MaxAll(Max):
    """z = max of every element (torch's x.max());   ∂L/∂a = g / (number of maxima) at each

    As torch, a NaN maximum is shared by the NaN entries, and g reaches the maxima alone,
    even a NaN g (torch's index_put).
    """

    def forward(self, a):
        z = super().forward(a)
        if np.isnan(z).any():
            is_max = self.saved.get("is_max", a == z) | np.isnan(a)
            self.save(is_max=is_max, count=is_max.sum(axis=self.axes, keepdims=True))
        return z

    def backward(self, g):
        is_max, count = self.saved["is_max"], self.saved["count"]
        return np.where(is_max, g / count, 0).astype(g.dtype)


MaxResult = collections.namedtuple("max", ["values", "indices"])  # torch.return_types.max


def _max_with_indices(x, dim, keepdim):
    """torch.max(x, dim): (values, int64 indices of the first largest entry along dim).

    The values are the entries at the indices, picked by indexing, so the gradient goes to
    that one entry (as torch), not shared between ties as amax's. A NaN is the largest.
    """
    if isinstance(dim, bool) or not isinstance(dim, (int, np.integer)):
        raise TypeError(f"max(dim=): dim must be one int (torch's max(dim) returns values and "
                        f"indices); got {dim!r}; for several axes use max(axis=...)")
    axis = dims.dim(dim, x.ndim, "max(dim=)")
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
