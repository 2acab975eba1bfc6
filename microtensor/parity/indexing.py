"""PyTorch's indexing rules where numpy's differ: the order in which ints and arrays apply, a list
of sequences read as a tuple of indices, and a 0-d integer tensor read as an int.
"""
import numpy as np

from ..tensor import Tensor
from .promotion import category


def plain_index(index):
    """index with each Tensor in it (ids, a bool mask) as its array, for numpy.

    A 0-d integer Tensor is an int. A list holding sequences, slices, None or ... is a
    tuple of indices, as in PyTorch
    (t[[[0, 1], [1, 0]]] is t[[0, 1], [1, 0]]); numpy would read it as one array index.
    """
    def plain(p):
        if isinstance(p, Tensor):  # a 0-d integer tensor is an int, as torch's: numpy
            # would read a 0-d array as an array index and move its dims first
            return int(p.data) if p.ndim == 0 and category(p.dtype) == 1 else p.data.copy()
        return p.copy() if isinstance(p, np.ndarray) else p  # kept for backward: a copy
    if isinstance(index, list) and any(
            isinstance(p, (list, tuple, slice, Tensor, np.ndarray)) or p is None
            or p is Ellipsis for p in index):
        index = tuple(index)
    # a tuple index stays a tuple and a single one stays single, as the caller wrote it
    return tuple(map(plain, index)) if isinstance(index, tuple) else plain(index)


def is_basic(p):
    return isinstance(p, (int, np.integer, slice)) or p is None or p is Ellipsis


def torch_steps(index):
    """`index` as (basic, advanced): a[index] in PyTorch is a[basic][advanced].

    PyTorch applies ints, slices, None and ... first, then the arrays; numpy counts an int
    next to an array as an array, which moves the dims: for x [4, 3, 5], x[0, :, [3, 1]] is
    [3, 2] in torch and [2, 3] in numpy. One step (basic = ()) unless both kinds are present.
    """
    parts = index if isinstance(index, tuple) else (index,)
    if all(map(is_basic, parts)) or not any(
            isinstance(p, (int, np.integer)) and not isinstance(p, bool) for p in parts):
        return (), index
    basic, advanced = [], []
    for p in parts:
        if isinstance(p, (int, np.integer)) and not isinstance(p, bool):
            basic.append(p)  # its dim is gone after the first step
        elif p is Ellipsis:
            basic.append(p)
            advanced.append(p)
        elif is_basic(p):  # a slice or None: applied first, kept whole in the second
            basic.append(p)
            advanced.append(slice(None))
        else:  # an array; a bool mask spans as many dims as it has
            array = np.asarray(p)
            basic += [slice(None)] * (array.ndim if array.dtype == np.bool_ else 1)
            advanced.append(p)
    return tuple(basic), tuple(advanced)
