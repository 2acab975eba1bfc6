"""Reductions along one axis for softmax and layer norm, fast on the last axis: sum, dot, max.

Along the last axis numpy's own reductions handle each short contiguous row (64 to 512
numbers here) with a setup of its own: over [3072, 64] float32, `x.sum(axis=-1)` is ~8x
slower than the same sums as one matrix-vector product with a vector of ones, which BLAS
runs at full speed, and `x.max(axis=-1)` ~2x slower than halving the rows with elementwise
maxima. The dot product of two rows is `np.vecdot`: one pass, without the temporary that
`(x * y).sum(-1)` writes. Every result keeps the reduced axis (keepdims), to broadcast back.
"""
import numpy as np


def _is_last(x, axis):
    return axis in (-1, x.ndim - 1)


def row_sum(x, axis=-1):
    """Σ x along `axis`, keeping the axis."""
    if not _is_last(x, axis):
        return x.sum(axis=axis, keepdims=True)
    return (x @ np.ones(x.shape[-1], dtype=x.dtype))[..., None]


def row_dot(x, y, axis=-1):
    """Σ x ⊙ y along `axis`, keeping the axis."""
    if not _is_last(x, axis):
        return (x * y).sum(axis=axis, keepdims=True)
    return np.vecdot(x, y)[..., None]


def row_max(x, axis=-1):
    """max x along `axis`, keeping the axis (NaN if the row holds one, as np.max)."""
    if not _is_last(x, axis) or x.shape[-1] == 0:
        return x.max(axis=axis, keepdims=True, initial=-np.inf)  # initial: an empty axis is allowed
    m, n = x, x.shape[-1]
    while n > 1:  # the max of the first and the last half (they overlap by one if n is odd)
        half = (n + 1) // 2
        m, n = np.maximum(m[..., :half], m[..., n - half:n]), half
    return m if m is not x else x.copy()  # a row of one: its own max, in a new array
