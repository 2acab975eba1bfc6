"""Cross-entropy of logits against integer class targets, fused with a stable log-softmax
(notes 3.7: the loss of next-token prediction).

loss_n = −log p_n[t_n], p_n = softmax(z_n);   ∂loss_n/∂z_n = p_n − onehot(t_n),
zero for targets equal to `ignore_index`.

With label smoothing ε over C classes (Szegedy et al. 2016, "Rethinking the Inception
Architecture", §7; Vaswani et al. 2017, "Attention Is All You Need", §5.4 uses ε = 0.1)
the target distribution is q = (1 − ε)·onehot(t) + ε/C instead, and, as in PyTorch,
loss_n = −Σ_c q_c log p_n[c] = (1 − ε)(−log p_n[t_n]) + (ε/C)·Σ_c(−log p_n[c]);
∂loss_n/∂z_n = p_n − q_n (ε = 0 gives the plain loss above).
"""
import numpy as np

from ..autograd import Function
from ..parity.arguments import floating_only, ids, tensor
from ..parity.low_precision import computed_in_float32
from ..tensor import apply
from .rows import row_sum


@computed_in_float32  # float16 as torch: in float32, rounded once
class CrossEntropy(Function):
    """Logits [N, C] and targets [N] (callers flatten [B, T, C] / [B, T] first)."""

    op = "cross_entropy"

    def __init__(self, targets, ignore_index=-100, reduction="mean", label_smoothing=0.0):
        super().__init__()
        if reduction not in ("mean", "sum", "none"):
            raise ValueError(f"cross_entropy: reduction must be 'mean', 'sum' or 'none'; "
                             f"got {reduction!r}")
        if not 0.0 <= label_smoothing <= 1.0:
            raise ValueError(f"cross_entropy: label_smoothing must be in [0, 1]; "
                             f"got {label_smoothing!r}")
        self.targets, self.ignore_index, self.reduction = targets, ignore_index, reduction
        self.label_smoothing = label_smoothing

    def forward(self, z):
        t, n_classes, eps = self.targets, z.shape[-1], self.label_smoothing
        valid = t != self.ignore_index
        bad = valid & ((t < 0) | (t >= n_classes))
        if bad.any():
            raise ValueError(f"cross_entropy: target {t[bad][0]} is outside [0, {n_classes}) "
                             f"(and is not ignore_index={self.ignore_index})")
        safe_t = np.where(valid, t, 0)
        # log p = (z − max) − log Σ exp(z − max). Shifting first keeps the target's logit
        # next to the log-sum: at z = [1e8, 1e8] in float32, log(2) + 1e8 − 1e8 would be 0.
        shifted = z - z.max(axis=-1, keepdims=True)
        log_probs = shifted - np.log(row_sum(np.exp(shifted)))
        losses = -log_probs[np.arange(len(t)), safe_t]     # −log p[t], the plain loss
        if eps:  # label smoothing
            losses = (1 - eps) * losses - (eps / n_classes) * log_probs.sum(axis=-1)
        losses = np.where(valid, losses, 0).astype(z.dtype, copy=False)
        self.save(probs=np.exp(log_probs), safe_t=safe_t, valid=valid)
        self.n_valid = int(valid.sum())
        if self.reduction == "none":
            return losses
        total_loss = losses.sum(dtype=z.dtype)
        if self.reduction == "sum":
            return total_loss
        if self.n_valid == 0:  # every target ignored: a mean over nothing is 0/0, as PyTorch
            return np.array(np.nan, dtype=z.dtype)
        return total_loss / self.n_valid

    def backward(self, g):
        probs, safe_t, valid = self.saved["probs"], self.saved["safe_t"], self.saved["valid"]
        eps, n_classes = self.label_smoothing, probs.shape[-1]
        # p − onehot(t) for the plain loss (ε = 0); smoothed, p − q, q = (1 − ε)·onehot(t) + ε/C
        dz = probs - eps / n_classes
        dz[np.arange(len(safe_t)), safe_t] -= 1 - eps  # ignored rows too (class 0): zeroed below
        if self.reduction == "mean":
            g = g / max(self.n_valid, 1)  # no valid row: every weight below is 0 anyway
        # Each row's weight, 0 where ignored: np.where, not g·valid, so that an ignored row
        # gets exactly 0 even when its upstream gradient is inf or NaN (0·inf is NaN).
        # As PyTorch, NaN logits still give NaN there (NaN·0): a NaN in the input shows.
        weight = np.where(valid, g, 0).astype(probs.dtype, copy=False)
        dz *= weight[:, None]  # in place: dz is this op's own array
        return dz


# ---- the functional form ----------------------------------------------------------------------

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
    if logits.ndim < 1 or targets.shape != logits.shape[:-1]:
        raise ValueError(f"cross_entropy: logits {logits.shape} need targets of shape "
                         f"{logits.shape[:-1]}; got {targets.shape}")
    # one row [C] with a 0-d target, as torch's unbatched input; [B, T, C] as rows [B·T, C]
    flat = logits.reshape(-1, logits.shape[-1]) if logits.ndim != 2 else logits
    op = CrossEntropy(targets.reshape(-1), ignore_index, reduction, label_smoothing)
    out = apply(op, flat)
    return out.reshape(targets.shape) if reduction == "none" and targets.ndim != 1 else out
