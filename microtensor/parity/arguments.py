"""The forms a user may pass where an op takes a Tensor (numbers, lists, numpy arrays, ids), turned
into what the ops take, with one clear error naming the argument otherwise."""
import numbers

import numpy as np

from ..tensor import Tensor
from .promotion import category


def tensor(x, name):
    """x as a Tensor: a Tensor as it is, an array, number or list wrapped (copied)."""
    if isinstance(x, Tensor):
        return x
    if isinstance(x, (np.ndarray, numbers.Number, list)):
        return Tensor(x)
    raise TypeError(f"{name} must be a Tensor, numpy array, number or list; "
                    f"got {type(x).__name__}")


def constant(value, dtype):
    """A 0-d constant Tensor, wrapped without the copy and checks of Tensor(...)."""
    return Tensor._make(np.array(value, dtype))


def ids(x, name):
    """An integer numpy array from a Tensor, array or list (token ids, targets, indices)."""
    # a copy: an op keeps the ids for backward, and the caller may refill its array first
    x = np.array(x.data if isinstance(x, Tensor) else x)
    if x.dtype.kind not in "iu":  # signed or unsigned integers
        raise TypeError(f"{name} must hold integers; got dtype {x.dtype}")
    return x


def floating_only(x, op):
    """x, or TypeError for a bool or integer tensor (PyTorch refuses them in softmax,
    log_softmax, gelu, layer_norm and cross_entropy: their results are not of the input's kind)."""
    if category(x.dtype) < 2:
        raise TypeError(f"{op}: needs a floating-point tensor; got dtype {x.dtype}")
    return x


def check_probability(p, who):
    """p as a float in [0, 1]; ValueError naming `who` otherwise (bools and strings too)."""
    if type(p) is float and 0 <= p <= 1:  # the usual case, without numbers.Real's ABC check
        return p
    if isinstance(p, bool) or not isinstance(p, numbers.Real) or not 0 <= p <= 1:
        raise ValueError(f"{who}: p must be a probability in [0, 1]; got {p!r}")
    return float(p)

