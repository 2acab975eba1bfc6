"""Functional forms of the ops (`import microtensor.functional as F`), as `torch.nn.functional`.

Each function checks its arguments, then runs its primitive op from `microtensor/ops/`
(cross_entropy also reshapes [B, T, C] to [B·T, C] around it). Forward and backward
formulas are in each op's docstring there.
"""
import numbers

import numpy as np

from . import random
from .ops import dropout as _dropout
from .ops import embedding as _embedding
from .ops import layer_norm as _layer_norm
from .ops import loss as _loss
from .ops import pointwise
from .tensor import Tensor, apply


def _tensor(x, name):
    if isinstance(x, Tensor):
        return x
    if isinstance(x, (np.ndarray, numbers.Number, list)):
        return Tensor(x)
    raise TypeError(f"{name} must be a Tensor, numpy array, number or list; "
                    f"got {type(x).__name__}")


def _constant(value, dtype):
    """A 0-d constant Tensor, wrapped without the copy and checks of Tensor(...)."""
    return Tensor._make(np.array(value, dtype))


def _ids(ids, name):
    """An integer numpy array from a Tensor, array or list (token ids, targets, indices)."""
    # a copy: an op keeps the ids for backward, and the caller may refill its array first
    ids = np.array(ids.data if isinstance(ids, Tensor) else ids)
    if ids.dtype.kind not in "iu":  # signed or unsigned integers
        raise TypeError(f"{name} must hold integers; got dtype {ids.dtype}")
    return ids


def relu(x):
    """max(x, 0) elementwise; TypeError for a bool x (as torch)."""
    return _tensor(x, "x").relu()


def gelu(x, approximate="none"):
    """x·Φ(x) elementwise, Φ the standard normal CDF (Hendrycks & Gimpel 2016);
    approximate="tanh" for GPT-2's form. ValueError for any other `approximate`."""
    return apply(pointwise.GELU(approximate), _tensor(x, "x")._float_only("gelu"))


def softmax(x, axis=-1, *, dim=None):
    """exp(x)/Σexp(x) along `axis` (or torch's dim=); an all −inf row gives zeros (notes
    3.1–3.3). TypeError for a bool or integer x, IndexError for an axis out of range."""
    return _tensor(x, "x").softmax(axis, dim=dim)


def log_softmax(x, axis=-1, *, dim=None):
    """x − logsumexp(x) along `axis` (or torch's dim=), computed stably."""
    return _tensor(x, "x").log_softmax(axis, dim=dim)


def normalized_shape_tuple(normalized_shape, who):
    """normalized_shape (an int or a sequence of ints) as a tuple; ValueError naming `who`
    for an empty one, a negative size or one that is not an int (2.5, True); a size 0 is
    allowed, as torch (an empty row)."""
    if type(normalized_shape) is tuple and normalized_shape and all(
            type(n) is int and n >= 0 for n in normalized_shape):
        return normalized_shape  # already what is asked for (nn.LayerNorm's, checked once)
    shape = (normalized_shape,) if isinstance(normalized_shape, (int, np.integer)) \
        else normalized_shape
    try:
        shape = tuple(shape)
    except TypeError:
        shape = None
    if not shape or not all(isinstance(n, (int, np.integer)) and not isinstance(n, bool)
                            and n >= 0 for n in shape):
        raise ValueError(f"{who}: normalized_shape must be an int >= 0 or a non-empty tuple "
                         f"of them; got {normalized_shape!r}")
    return tuple(int(n) for n in shape)


def check_probability(p, who):
    """p as a float in [0, 1]; ValueError naming `who` otherwise (bools and strings too)."""
    if type(p) is float and 0 <= p <= 1:  # the usual case, without numbers.Real's ABC check
        return p
    if isinstance(p, bool) or not isinstance(p, numbers.Real) or not 0 <= p <= 1:
        raise ValueError(f"{who}: p must be a probability in [0, 1]; got {p!r}")
    return float(p)


def masked_fill(x, mask, value):
    """`value` where the boolean `mask` is True (blocked), x elsewhere; mask broadcasts."""
    return _tensor(x, "x").masked_fill(mask, value)


def layer_norm(x, normalized_shape, weight=None, bias=None, eps=1e-5):
    """Normalize x over its last dims `normalized_shape` (int or tuple), then scale and shift:
    y = (x − mean)/√(var + eps) ⊙ weight + bias, var the biased variance (notes 3.6).

    Shapes: x [..., *normalized_shape]; weight and bias [*normalized_shape] or None.
    Raises ValueError if x's trailing dims are not `normalized_shape`.
    """
    x = _tensor(x, "x")._float_only("layer_norm")
    shape = normalized_shape_tuple(normalized_shape, "layer_norm")
    if x.ndim < len(shape) or x.shape[x.ndim - len(shape):] != shape:
        raise ValueError(f"layer_norm: normalized_shape {shape} does not match the last dims "
                         f"of x, shape {x.shape}")
    # a missing weight is the constant 1 and a missing bias the constant 0 (scalars broadcast)
    weight = _tensor(weight, "weight") if weight is not None else _constant(1, x.dtype)
    bias = _tensor(bias, "bias") if bias is not None else _constant(0, x.dtype)
    for name, given in (("weight", weight), ("bias", bias)):
        if given.ndim and given.shape != shape:  # as torch: no broadcasting of either
            raise ValueError(f"layer_norm: {name} has shape {given.shape}; expected "
                             f"normalized_shape {shape}")
    return apply(_layer_norm.LayerNorm(len(shape), eps), x, weight, bias)


def cross_entropy(logits, targets, ignore_index=-100, reduction="mean", label_smoothing=0.0):
    """Cross-entropy loss of `logits` against integer class `targets` (as torch's).

    Shapes: logits [N, C] with targets [N], [B, T, C] with [B, T] (the class dim last, where
    torch puts it second: the CONTRACT's layout), or one row [C] with a 0-d target.
    reduction: "mean" over non-ignored targets (NaN if every target is ignored, as torch),
    "sum", or "none" (shape of targets; 0 at ignored targets).
    label_smoothing ε in [0, 1]: the target is (1 − ε)·onehot + ε/C (Szegedy et al. 2016;
    "Attention Is All You Need" §5.4 uses 0.1); see microtensor/ops/loss.py for the formula.
    Raises ValueError on mismatched shapes, a target outside [0, C) or ε outside [0, 1].
    """
    logits, targets = _tensor(logits, "logits")._float_only("cross_entropy"), \
        _ids(targets, "targets")
    if isinstance(ignore_index, bool) or not isinstance(ignore_index, (int, np.integer)):
        raise TypeError(f"cross_entropy: ignore_index must be an int; got "
                        f"{type(ignore_index).__name__} (torch's third argument is weight=; "
                        "class weights are not supported here)")
    if logits.ndim < 1 or targets.shape != logits.shape[:-1]:
        raise ValueError(f"cross_entropy: logits {logits.shape} need targets of shape "
                         f"{logits.shape[:-1]}; got {targets.shape}")
    # one row [C] with a 0-d target, as torch's unbatched input; [B, T, C] as rows [B·T, C]
    flat = logits.reshape(-1, logits.shape[-1]) if logits.ndim != 2 else logits
    op = _loss.CrossEntropy(targets.reshape(-1), ignore_index, reduction, label_smoothing)
    out = apply(op, flat)
    return out.reshape(targets.shape) if reduction == "none" and targets.ndim != 1 else out


def embedding(indices, weight):
    """Rows of `weight` [V, D] picked by integer `indices` [...] -> [..., D]."""
    return apply(_embedding.Embedding(_ids(indices, "indices")), _tensor(weight, "weight"))


def dropout(x, p, training=True):
    """Zero each element with probability p and scale the rest by 1/(1−p), so the expected
    value is unchanged ("inverted" dropout: nothing to rescale at eval); identity if not
    training or p == 0, zeros if p == 1 (as torch). ValueError unless 0 ≤ p ≤ 1."""
    p = check_probability(p, "dropout")
    x = _tensor(x, "x")
    if not training or p == 0:
        return x
    if p == 1:  # every element dropped: zeros of x's dtype, and a zero gradient
        return x * Tensor(np.zeros((), x.dtype))
    return apply(_dropout.Dropout(p, random.generator()), x)
