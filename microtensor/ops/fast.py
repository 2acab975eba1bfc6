"""Speed: the few kernels the op files call where numpy's plain form is slow. Each computes
exactly what the comment beside its call says, and each is called from one op file.

- `matmul(a, b)`: a @ b. For a stack a [..., M, K] times one matrix b [K, N] (nn.Linear on
  [B, T, D]) numpy runs one small product per stacked matrix; folding the stack into rows
  runs one large product, 2–3× faster.
- `matmul_t(a, g, b_shape)`: aᵀ g, summed over a's stack when b was one matrix: the sum over
  the stack of the products AᵀG is one product of all rows, [K, (…·M)] @ [(…·M), N].
- `scatter(ga, index, g)`: ga[index] += g. np.add.at (an unbuffered +=, needed where an
  integer array reads a position twice) is ~10× slower than assignment, which suffices where
  each position is read once (ints and slices).
- `sum_rows_by_id(ids, g, shape)`: gw[i] = Σ g[n] where ids[n] = i, the sum np.add.at takes
  one row at a time (~6× slower): sort the positions by id and sum each run at once.
- `fill(x, mask, value)`: np.where(mask, value, x) (x grows to the mask's shape where the mask
  is larger), as copy-then-write, ~2× faster.
"""
import math

import numpy as np


def _rows(x):
    """x [..., K] as one matrix [N, K]; N is spelled out, as -1 is ambiguous when K = 0."""
    return x.reshape(math.prod(x.shape[:-1]), x.shape[-1])


def matmul(a, b):
    if b.ndim == 2 and a.ndim > 2:
        return (_rows(a) @ b).reshape(*a.shape[:-1], b.shape[-1])
    return a @ b


def matmul_t(a, g, b_shape):
    if len(b_shape) == 2 and a.ndim > 2:
        return _rows(a).T @ _rows(g)
    return np.swapaxes(a, -1, -2) @ g


def _is_basic(p):
    return isinstance(p, (int, np.integer, slice)) or p is None or p is Ellipsis


def scatter(ga, index, g):
    if all(map(_is_basic, index if isinstance(index, tuple) else (index,))):
        ga[index] = g
    else:
        np.add.at(ga, index, g)
    return ga


def sum_rows_by_id(ids, g, shape):
    ids, rows = ids.reshape(-1), g.reshape(ids.size, *shape[1:])  # [N], [N, D]
    gw = np.zeros(shape, dtype=rows.dtype)
    if ids.size == 0:
        return gw
    order = np.argsort(ids, kind="stable")
    sorted_ids = ids[order]
    starts = np.flatnonzero(np.r_[True, sorted_ids[1:] != sorted_ids[:-1]])
    gw[sorted_ids[starts]] = np.add.reduceat(rows[order], starts, axis=0)
    return gw


def fill(x, mask, value):
    if mask.ndim > x.ndim or mask.shape != x.shape[x.ndim - mask.ndim:]:  # the mask grows x
        x = np.broadcast_to(x, np.broadcast_shapes(x.shape, mask.shape))  # as np.where's
    out = np.array(x)  # a copy, and an array even for a 0-d x
    np.copyto(out, value, where=mask, casting="unsafe")  # value in x's dtype, as torch
    return out
