"""The surface of torch.nn.functional's cross_entropy, embedding and dropout: each argument
checked as torch checks it (one line naming it), the forms torch takes ([B, T, C] logits, an
unbatched row, ids as a Tensor, array or list), and the cases that need no op (dropout's p = 0
and p = 1)."""
import numpy as np

from ... import random
from ...ops.dropout import Dropout
from ...ops.embedding import Embedding
from ...ops.loss import CrossEntropy
from ...tensor import Tensor, apply
from ..arguments import check_probability, floating_only, ids, tensor


def cross_entropy(logits, targets, ignore_index=-100, reduction="mean", label_smoothing=0.0):
    """Cross-entropy loss of `logits` against integer class `targets` (as torch's).

    Shapes: logits [N, C] with targets [N], [B, T, C] with [B, T] (the class dim last, the
    course's layout; torch puts it second), or one row [C] with a 0-d target.
    reduction: "mean" over non-ignored targets (NaN if every target is ignored, as torch),
    "sum", or "none" (shape of targets; 0 at ignored targets).
    label_smoothing ε in [0, 1]: the target is (1 − ε)·onehot + ε/C (Szegedy et al. 2016;
    "Attention Is All You Need" §5.4 uses 0.1); see microtensor/ops/loss.py for the formula.
    Raises ValueError on mismatched shapes, a target outside [0, C) or ε outside [0, 1];
    TypeError for targets that are not int64 or uint8 (int32 too, as torch 2.13 on CPU).
    """
    logits = floating_only(tensor(logits, "logits"), "cross_entropy")
    targets = ids(targets, "targets")
    if targets.dtype not in (np.int64, np.uint8):  # torch's kernel: "Long or Byte" only
        raise TypeError(f"cross_entropy: targets must be int64 (or uint8), as torch's; got "
                        f"{targets.dtype}: pass targets.astype(np.int64)")
    if isinstance(ignore_index, bool) or not isinstance(ignore_index, (int, np.integer)):
        raise TypeError(f"cross_entropy: ignore_index must be an int; got "
                        f"{type(ignore_index).__name__} (torch's third argument is weight=; "
                        "class weights are not supported here)")
    if reduction not in ("mean", "sum", "none"):
        raise ValueError(f"cross_entropy: reduction must be 'mean', 'sum' or 'none'; "
                         f"got {reduction!r}")
    if not 0.0 <= label_smoothing <= 1.0:
        raise ValueError(f"cross_entropy: label_smoothing must be in [0, 1]; "
                         f"got {label_smoothing!r}")
    if logits.ndim < 1 or targets.shape != logits.shape[:-1]:
        raise ValueError(f"cross_entropy: logits {logits.shape} need targets of shape "
                         f"{logits.shape[:-1]}; got {targets.shape}")
    n_classes = logits.shape[-1]
    bad = (targets != ignore_index) & ((targets < 0) | (targets >= n_classes))
    if bad.any():
        raise ValueError(f"cross_entropy: target {targets[bad][0]} is outside [0, {n_classes}) "
                         f"(and is not ignore_index={ignore_index})")
    # one row [C] with a 0-d target, as torch's unbatched input; [B, T, C] as rows [B·T, C]
    flat = logits.reshape(-1, n_classes) if logits.ndim != 2 else logits
    op = CrossEntropy(targets.reshape(-1), ignore_index, reduction, label_smoothing)
    out = apply(op, flat)
    return out.reshape(targets.shape) if reduction == "none" and targets.ndim != 1 else out


def embedding(indices, weight):
    """Rows of `weight` [V, D] picked by integer `indices` [...] -> [..., D]. IndexError for
    an id outside [0, V) (numpy would read a negative one from the end)."""
    indices, weight = ids(indices, "indices"), tensor(weight, "weight")
    if indices.size and (indices.min() < 0 or indices.max() >= weight.shape[0]):
        raise IndexError(f"embedding: ids must lie in [0, {weight.shape[0]}); got values "
                         f"from {indices.min()} to {indices.max()}")
    return apply(Embedding(indices), weight)


def dropout(x, p=0.5, training=True):
    """Zero each element with probability p and scale the rest by 1/(1−p), so the expected
    value is unchanged ("inverted" dropout: nothing to rescale at eval); p is 0.5 unless
    given (torch's default); identity if not
    training or p == 0, zeros if p == 1 (as torch). ValueError unless 0 ≤ p ≤ 1."""
    p = check_probability(p, "dropout")
    x = tensor(x, "x")
    if not training or p == 0:
        return x
    if p == 1:  # every element dropped: zeros of x's dtype, and a zero gradient
        return x * Tensor(np.zeros((), x.dtype))
    return apply(Dropout(p, random.generator()), x)
