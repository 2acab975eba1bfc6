"""PyTorch's dtype rules: the dtype of new data and the dtype of `a + b` (torch.result_type).

Python floats become float32, Python ints int64, numpy arrays keep their dtype; dtypes rank
in three categories, bool < integer < floating, and a scalar only decides the result's dtype
when its category is higher (PyTorch's "type promotion" documentation). `tensor.py` calls
these on arrays, so this file knows nothing of Tensor.
"""
import numbers

import numpy as np


def as_array(data, dtype):
    """`data` as a new numpy array (a copy, as `torch.tensor`), with PyTorch's default dtypes.

    data: a number, nested list or numpy array (a Tensor passes its `.data`).
    Raises TypeError for data that is not bool, integer or floating-point.
    """
    if dtype is not None:
        array = np.array(data, dtype=np.dtype(dtype))
    elif isinstance(data, (np.ndarray, np.generic)):
        array = np.array(data)
    else:
        array = np.array(data)
        if isinstance(data, (list, tuple)) and array.dtype.kind in "biuf":
            array = array.astype(nested_dtype(data), copy=False)
        elif array.dtype == np.float64:  # a Python float
            array = array.astype(np.float32)
    if array.dtype.kind not in "biuf":  # complex, strings, objects: no op defines them
        raise TypeError(f"Tensor: dtype {array.dtype} is not supported; expected bool, "
                        "integer or floating-point data")
    return array


_PYTHON = {bool: np.dtype(np.bool_), int: np.dtype(np.int64), float: np.dtype(np.float32)}


def nested_dtype(data):
    """torch.tensor's dtype for nested lists: each Python float counts as float32, int as int64,
    bool as bool, a numpy scalar or array as its dtype, all joined by torch.promote_types (the
    higher category, then the wider: [np.float16(1), 2] is float16, [np.float64(1.5), 2] float64).
    """
    dtype, stack = None, [data]
    while stack:
        items = stack.pop()
        python = {type(v) for v in items}
        for kind in python & _PYTHON.keys():  # the usual lists: a set of types, no loop
            dtype = _higher(dtype, _PYTHON[kind])
        if python <= _PYTHON.keys():
            continue
        for v in items:
            if isinstance(v, (list, tuple)):
                stack.append(v)
            elif isinstance(v, (np.ndarray, np.generic)):
                dtype = _higher(dtype, v.dtype)
    return dtype if dtype is not None else np.dtype(np.float32)  # [] is float32, as torch


def category(dtype):
    """0 bool, 1 integer, 2 floating: the categories of PyTorch's type promotion."""
    return _CATEGORY_OF_KIND.get(np.dtype(dtype).kind, 2)


_CATEGORY_OF_KIND = {"b": 0, "i": 1, "u": 1}  # numpy's dtype.kind: bool, signed, unsigned int


def _higher(first, second):
    """The dtype of the higher category; within one category, the wider (torch.promote_types)."""
    if first is None or second is None:
        return second if first is None else first
    if category(first) != category(second):
        return first if category(first) > category(second) else second
    return np.promote_types(first, second)


def result_type(*operands):
    """The dtype PyTorch gives `a + b` (torch.result_type), for arrays and scalars.

    Operands (numpy arrays, a Tensor passing its `.data`; Python or numpy scalars; nested
    lists) rank in three groups: arrays with dims, 0-dim arrays, and scalars (a float scalar
    counts as float32, an int one as int64, a bool as bool). A lower group only decides the
    dtype when its category (bool < int < float) is higher, so a scalar never truncates and
    never widens: int64 * 1.5 is float32, bool * 3 is int64, float32 * np.float64(2) is
    float32, but float32 * a float64 array is float64.
    """
    groups = {"dims": None, "zero-dim": None, "scalar": None}
    for x in operands:
        if isinstance(x, np.ndarray):
            group, dtype = ("dims" if x.ndim else "zero-dim"), x.dtype
        elif isinstance(x, (bool, np.bool_)):
            group, dtype = "scalar", np.dtype(np.bool_)
        elif isinstance(x, (numbers.Integral, np.integer)):
            group, dtype = "scalar", np.dtype(np.int64)
        elif isinstance(x, (numbers.Real, np.floating)):
            group, dtype = "scalar", np.dtype(np.float32)
        else:
            group, dtype = "dims", as_array(x, None).dtype  # a list: as Tensor(list)
        groups[group] = _higher(groups[group], dtype)
    result = None
    for dtype in groups.values():  # dims first: a later group wins only by a higher category
        if dtype is not None and (result is None or category(dtype) > category(result)):
            result = dtype
    if groups["scalar"] is not None and category(result) == 1 and (
            groups["dims"] is not None or groups["zero-dim"] is not None) and all(
            category(groups[g]) == 0 for g in ("dims", "zero-dim") if groups[g] is not None) \
            and any(type(x) is int and x >= 2**63 for x in operands):  # torch's uint64
        raise TypeError("an int >= 2**63 with a bool tensor: its dtype would be uint64, whose "
                        "promotion torch does not support (as torch, refused)")
    return np.dtype(result)
