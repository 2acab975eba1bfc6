"""The one normaliser of dims arguments, as PyTorch reads them: an int, a tuple or list of ints
(empty: every dim, for the reductions), negatives counted from the end; a 0-d tensor has dim 0
and −1. Reductions, softmax, transpose, permute, max(dim=) and cat all read their dims here.
"""
import numpy as np


def _is_int(d):
    return isinstance(d, (int, np.integer)) and not isinstance(d, bool)


def dim(d, ndim, op):
    """One dim `d` of a tensor with `ndim` dims, as a Python int in [0, max(ndim, 1)).

    TypeError for a bool or non-int; IndexError for a dim out of range."""
    if not _is_int(d):
        raise TypeError(f"{op}: axis must be an int; got {d!r}")
    n = max(ndim, 1)
    if not -n <= d < n:
        raise IndexError(f"{op}: axis {d} is out of range for a tensor with {ndim} dims "
                         f"(expected {-n} to {n - 1})")
    return int(d) % n


def dims(d, ndim, op):
    """`d` (None, an int, or a tuple or list of ints) as a sorted tuple of dims to reduce.

    None and an empty tuple or list mean every dim (as torch's sum(dim=[])); ValueError for a
    dim given twice."""
    if d is None or (isinstance(d, (tuple, list)) and len(d) == 0):
        return tuple(range(ndim))
    if _is_int(d):
        one = dim(d, ndim, op)
        return (one,) if ndim else ()
    if not isinstance(d, (tuple, list)):
        raise TypeError(f"{op}: axis must be an int or a tuple of ints; got {d!r}")
    normalized = tuple(sorted(dim(a, ndim, op) for a in d))
    if len(set(normalized)) != len(normalized):
        raise ValueError(f"{op}: axis {d!r} names an axis twice")
    return normalized if ndim else ()


def permutation(order, ndim, op):
    """`order` (a tuple or list of ints) as a permutation of the `ndim` dims."""
    if sorted(order) == list(range(ndim)) and all(type(a) is int for a in order):
        return tuple(order)  # already normal (attention permutes ~20 times a token): no checks
    normalized = tuple(dim(a, ndim, op) for a in order) if ndim else tuple(order)
    if sorted(normalized) != list(range(ndim)) and not (ndim == 0 and len(order) == 0):
        raise ValueError(f"{op}: dims {tuple(order)} are not a permutation of the {ndim} dims")
    return normalized


def pick(axis, dim_, op, default=None):
    """The dims argument given as numpy's `axis` or torch's `dim=`: TypeError for both (torch's
    "got multiple values for argument 'dim'"); `default` for neither."""
    if dim_ is not None:
        if axis is not None:
            raise TypeError(f"{op}() got multiple values for argument 'dim': give axis= or "
                            f"dim=, not both; got axis={axis!r}, dim={dim_!r}")
        return dim_
    return default if axis is None else axis


def pick_keepdim(keepdims, keepdim, op):
    """keepdims (numpy's name) or keepdim= (torch's); TypeError for both."""
    if keepdim is not None:
        if keepdims is not None:
            raise TypeError(f"{op}() got multiple values for argument 'keepdim'")
        return bool(keepdim)
    return bool(keepdims)
