"""Sums that add up as PyTorch's, whatever the axis, its length and the dtype: float16 adds in
float32, and a long or non-contiguous float32 axis adds in blocks (a cascade), not row by row.

Why: numpy's `a.sum(axis)` is pairwise (error ~log n) only along the axis it walks innermost in
memory; over any other axis it adds row after row into one accumulator of a's own dtype, with an
error that grows as n. Over 10⁶ rows of 0.1 in float32 that is 1% off (0.10096), and 4096 ones
in float16 stop at 2048 (2048 + 1 rounds back to 2048). PyTorch's CPU reductions accumulate
float16 in float32 and sum float32 in a cascade of partial sums ("SumKernel.cpp"); here the
same class of accuracy, with no copy: the axis is cut into blocks of `BLOCK` rows (a reshape,
free for any strides), each block is summed (at most BLOCK terms in a row), then the block sums
are summed the same way, recursively. The error grows as BLOCK·log_BLOCK(n) instead of n.
"""
import numpy as np

BLOCK = 16  # rows added in a row at most: 10⁶ rows of 0.1 in float32 come out 1e-7 off, as
# torch's; the passes over the block sums add 1/16 + 1/256 + ... to the one over the data


def accumulator(dtype):
    """The dtype a floating sum accumulates in: float32 for the low-precision dtypes (as
    PyTorch's acc_type), the dtype itself for float32 and float64."""
    dtype = np.dtype(dtype)
    return np.dtype(np.float32) if dtype.kind == "f" and dtype.itemsize < 4 else dtype


def sum_as_torch(a, axes, keepdims=False, dtype=None):
    """Σ a over `axes` (a tuple of non-negative ints, sorted), in `dtype` (a's by default), added
    in a's accumulator dtype with a cascade over any axis that numpy would add row by row.

    a: a floating or int64 numpy array (an int64 sum is exact in any order: Sum passes both).
    Returns a numpy array (0-d for a full reduction), keepdims as numpy's.
    """
    out_dtype = np.dtype(dtype) if dtype is not None else a.dtype
    total = _sum(a, tuple(axes), accumulator(a.dtype))
    if keepdims:
        total = np.expand_dims(total, axes)
    return np.asarray(total).astype(out_dtype, copy=False)


def mean_as_torch(a, axes, keepdims, n):
    """Σ a / n over `axes`: the sum kept in a's accumulator dtype (float16's is float32), then
    divided and rounded to a's dtype once, as torch's mean."""
    total = sum_as_torch(a, axes, keepdims, dtype=accumulator(a.dtype))
    return np.divide(total, n).astype(a.dtype, copy=False)


def _sum(a, axes, acc):
    if not axes:
        return np.array(a, dtype=acc)
    runs = _runs(axes)
    if len(runs) == 1 and a.flags.c_contiguous:  # one run of adjacent axes: merge them, free
        first, last = runs[0]
        n = int(np.prod(a.shape[first:last + 1]))
        merged = a.reshape(a.shape[:first] + (n,) + a.shape[last + 1:])
        if last == a.ndim - 1:  # the innermost axis of a contiguous array: numpy is pairwise
            return merged.sum(axis=-1, dtype=acc)
        return _cascade(merged, first, acc)
    for k in reversed(axes):  # one axis at a time, the last first (so the others keep index)
        a = _cascade(a, k, acc)
    return a


def _runs(axes):
    """Sorted axes as runs of adjacent ones: (0, 1, 3) -> [(0, 1), (3, 3)]."""
    runs = []
    for k in axes:
        if runs and runs[-1][1] == k - 1:
            runs[-1] = (runs[-1][0], k)
        else:
            runs.append((k, k))
    return runs


def _cascade(a, k, acc):
    """Σ a over axis k, in blocks of BLOCK rows, then the block sums the same way."""
    n = a.shape[k]
    if n <= BLOCK:
        return a.sum(axis=k, dtype=acc)
    whole = n - n % BLOCK
    before = (slice(None),) * k
    head = a[before + (slice(0, whole),)]
    blocks = head.reshape(a.shape[:k] + (whole // BLOCK, BLOCK) + a.shape[k + 1:])
    total = _cascade(blocks.sum(axis=k + 1, dtype=acc), k, acc)
    if whole < n:
        total += a[before + (slice(whole, None),)].sum(axis=k, dtype=acc)
    return total


def column_dot(x, y):
    """Σ_i x[i, j]·y[i, j] of two [m, n] arrays (layer norm's weight gradient): einsum's one
    pass for the usual few thousand rows, the cascade above when m is long."""
    if x.shape[0] <= LONG:
        return np.einsum("ij,ij->j", x, y)
    return sum_as_torch(x * y, (0,))


LONG = 1024  # a row_sum or column_dot longer than this takes the cascade (rows.py)
