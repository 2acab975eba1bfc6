"""Reductions along one axis for softmax, layer norm and cross-entropy, fast on the last axis:
sum, dot, max.

Along the last axis numpy's own sum handles each short contiguous row (64 to 512 numbers
here) with a setup of its own: over [3072, 64] float32, `x.sum(axis=-1)` is ~5x slower than
the same sums as one matrix-vector product with a vector of ones, which BLAS runs at full
speed. The dot product of two rows is `np.vecdot`: one pass, without the temporary that
`(x * y).sum(-1)` writes. `x.max(axis=-1)` is ~2.5x faster when given `initial=-inf`.
Every result keeps the reduced axis (keepdims), to broadcast back.
"""
import numpy as np

from ..parity.summation import LONG, sum_as_torch


def _is_last(x, axis):
    return axis in (-1, x.ndim - 1)


def row_sum(x, axis=-1):
    """Σ x along `axis`, keeping the axis."""
    if not _is_last(x, axis) or x.shape[-1] > LONG or x.dtype.itemsize < 4:  # as torch adds
        return sum_as_torch(x, (axis % x.ndim,), keepdims=True)
    return (x @ np.ones(x.shape[-1], dtype=x.dtype))[..., None]


def vecdot_numpy1(x, y):
    """Σ x ⊙ y over the last axis, in one pass as np.vecdot, for numpy 1.x (which lacks it)."""
    return np.einsum("...i,...i->...", x, y)


# np.vecdot is numpy >= 2.0; on numpy 1.x the einsum above computes the same sums
_vecdot = getattr(np, "vecdot", vecdot_numpy1)


def row_dot(x, y, axis=-1):
    """Σ x ⊙ y along `axis`, keeping the axis."""
    if not _is_last(x, axis) or x.shape[-1] > LONG or x.dtype.itemsize < 4:  # as torch adds
        return sum_as_torch(x * y, (axis % x.ndim,), keepdims=True)
    return _vecdot(x, y)[..., None]


def row_max(x, axis=-1):
    """max x along `axis`, keeping the axis (NaN if the row holds one, as np.max)."""
    # initial=−inf: an empty axis is allowed, and numpy then runs its faster reduction loop
    return x.max(axis=axis, keepdims=True, initial=-np.inf)
