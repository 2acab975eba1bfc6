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


def _ids(ids, name):
    """An integer numpy array from a Tensor, array or list (token ids, targets, indices)."""
    ids = np.asarray(ids.data if isinstance(ids, Tensor) else ids)
    if not np.issubdtype(ids.dtype, np.integer):
        raise TypeError(f"{name} must hold integers; got dtype {ids.dtype}")
    return ids


def relu(x):
    """max(x, 0) elementwise."""
    return apply(pointwise.ReLU(), _tensor(x, "x"))


def gelu(x, approximate="none"):
    """x·Φ(x) elementwise, Φ the standard normal CDF (Hendrycks & Gimpel 2016);
    approximate="tanh" for GPT-2's form. ValueError for any other `approximate`."""
    return apply(pointwise.GELU(approximate), _tensor(x, "x"))


def softmax(x, axis=-1):
    """exp(x)/Σexp(x) along `axis`; an all −inf row gives zeros (notes 3.1–3.3)."""
    return _tensor(x, "x").softmax(axis)


def log_softmax(x, axis=-1):
    """x − logsumexp(x) along `axis`, computed stably."""
    return _tensor(x, "x").log_softmax(axis)


def masked_fill(x, mask, value):
    """`value` where the boolean `mask` is True (blocked), x elsewhere; mask broadcasts."""
    return _tensor(x, "x").masked_fill(mask, value)


def layer_norm(x, normalized_shape, weight=None, bias=None, eps=1e-5):
    """Normalize x over its last dims `normalized_shape` (int or tuple), then scale and shift:
    y = (x − mean)/√(var + eps) ⊙ weight + bias, var the biased variance (notes 3.6).

    Shapes: x [..., *normalized_shape]; weight and bias [*normalized_shape] or None.
    Raises ValueError if x's trailing dims are not `normalized_shape`.
    """
    x = _tensor(x, "x")
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    if x.shape[x.ndim - len(shape):] != shape:
        raise ValueError(f"layer_norm: normalized_shape {shape} does not match the last dims "
                         f"of x, shape {x.shape}")
    # a missing weight is the constant 1 and a missing bias the constant 0 (scalars broadcast)
    weight = _tensor(weight, "weight") if weight is not None else Tensor(np.ones((), x.dtype))
    bias = _tensor(bias, "bias") if bias is not None else Tensor(np.zeros((), x.dtype))
    return apply(_layer_norm.LayerNorm(len(shape), eps), x, weight, bias)


def cross_entropy(logits, targets, ignore_index=-100, reduction="mean", label_smoothing=0.0):
    """Cross-entropy loss of `logits` against integer class `targets` (as torch's).

    Shapes: logits [N, C] with targets [N], or logits [B, T, C] with targets [B, T].
    reduction: "mean" over non-ignored targets (NaN if every target is ignored, as torch),
    "sum", or "none" (shape of targets; 0 at ignored targets).
    label_smoothing ε in [0, 1]: the target is (1 − ε)·onehot + ε/C (Szegedy et al. 2016;
    "Attention Is All You Need" §5.4 uses 0.1); see microtensor/ops/loss.py for the formula.
    Raises ValueError on mismatched shapes, a target outside [0, C) or ε outside [0, 1].
    """
    logits, targets = _tensor(logits, "logits"), _ids(targets, "targets")
    if logits.ndim < 2 or targets.shape != logits.shape[:-1]:
        raise ValueError(f"cross_entropy: logits {logits.shape} need targets of shape "
                         f"{logits.shape[:-1]}; got {targets.shape}")
    flat = logits.reshape(-1, logits.shape[-1]) if logits.ndim > 2 else logits
    op = _loss.CrossEntropy(targets.reshape(-1), ignore_index, reduction, label_smoothing)
    out = apply(op, flat)
    return out.reshape(targets.shape) if reduction == "none" and targets.ndim > 1 else out


def embedding(indices, weight):
    """Rows of `weight` [V, D] picked by integer `indices` [...] -> [..., D]."""
    return apply(_embedding.Embedding(_ids(indices, "indices")), _tensor(weight, "weight"))


def dropout(x, p, training=True):
    """Zero each element with probability p and scale the rest by 1/(1−p), so the expected
    value is unchanged ("inverted" dropout: nothing to rescale at eval); identity if not
    training or p == 0. ValueError unless 0 ≤ p < 1."""
    if not 0 <= p < 1:
        raise ValueError(f"dropout: p must be in [0, 1); got {p}")
    x = _tensor(x, "x")
    if not training or p == 0:
        return x
    return apply(_dropout.Dropout(p, random.generator()), x)
