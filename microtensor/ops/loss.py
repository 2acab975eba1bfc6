"""Cross-entropy of logits against integer class targets, fused with a stable log-softmax.

loss_n = −log softmax(z_n)[t_n] = logsumexp(z_n) − z_n[t_n];
∂loss_n/∂z_n = softmax(z_n) − onehot(t_n), zero for targets equal to `ignore_index`.
"""
import numpy as np

from ..autograd import Function


class CrossEntropy(Function):
    """Logits [N, C] and targets [N] (callers flatten [B, T, C] / [B, T] first)."""

    op = "cross_entropy"

    def __init__(self, targets, ignore_index=-100, reduction="mean"):
        super().__init__()
        if reduction not in ("mean", "sum", "none"):
            raise ValueError(f"cross_entropy: reduction must be 'mean', 'sum' or 'none'; "
                             f"got {reduction!r}")
        self.targets, self.ignore_index, self.reduction = targets, ignore_index, reduction

    def forward(self, z):
        t, n_classes = self.targets, z.shape[-1]
        valid = t != self.ignore_index
        bad = valid & ((t < 0) | (t >= n_classes))
        if bad.any():
            raise ValueError(f"cross_entropy: target {t[bad][0]} is outside [0, {n_classes}) "
                             f"(and is not ignore_index={self.ignore_index})")
        safe_t = np.where(valid, t, 0)
        m = z.max(axis=-1, keepdims=True)
        e = np.exp(z - m)
        total = e.sum(axis=-1, keepdims=True)
        rows = np.arange(len(t))
        losses = (np.log(total[:, 0]) + m[:, 0] - z[rows, safe_t]) * valid
        self.save(probs=e / total, safe_t=safe_t, valid=valid)
        self.n_valid = int(valid.sum())
        if self.reduction == "none":
            return losses
        total_loss = losses.sum(dtype=z.dtype)
        return total_loss / self.n_valid if self.reduction == "mean" else total_loss

    def backward(self, g):
        probs, safe_t, valid = self.saved["probs"], self.saved["safe_t"], self.saved["valid"]
        dz = probs.copy()
        dz[np.arange(len(safe_t)), safe_t] -= 1  # ignored rows too (at class 0): zeroed below
        if self.reduction == "none":
            scale = (g * valid)[:, None]
        elif self.reduction == "mean":
            scale = (g / self.n_valid) * valid[:, None]
        else:
            scale = g * valid[:, None]
        return (dz * scale).astype(probs.dtype, copy=False)
