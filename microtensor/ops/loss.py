"""Cross-entropy of logits against integer class targets, fused with a stable log-softmax
(the loss of next-token prediction, scored at every position at once: notes 3.7).

loss_n = −log p_n[t_n], p_n = softmax(z_n);   ∂loss_n/∂z_n = p_n − onehot(t_n),
zero for targets equal to `ignore_index`. Why: −log p[t] = −z[t] + log Σ_c exp z[c], and
∂/∂z[c] of log Σ exp z is exp z[c] / Σ exp z = p[c]. The GPT's case, enough on a first
reading: nothing ignored, the mean over N rows, so ∂L/∂z = (p − onehot(t)) / N.

Beyond it (`translate`'s): label smoothing ε over C classes (Szegedy et al. 2016 §7; Vaswani
et al. 2017 §5.4: ε = 0.1), the target q = (1 − ε)·onehot(t) + ε/C: loss_n = −Σ_c q_c log
p_n[c], ∂loss_n/∂z_n = p_n − q_n. Applied by F.cross_entropy
(parity/surface/nn_functional.py), which the GPT's forward calls with its targets.
"""
import numpy as np

from ..autograd import Function
from ..parity.low_precision import computed_in_float32
from .rows import row_sum


@computed_in_float32  # float16 as torch: computed in float32, rounded once
class CrossEntropy(Function):
    """Logits [N, C] and targets [N] -> the loss, reduced by "mean" (over the targets not
    ignored), "sum" or "none". The GPT's [B, T, V] and [B, T] arrive as [B·T, V] and [B·T]
    (reshaped by F.cross_entropy: parity/surface/nn_functional.py)."""

    op = "cross_entropy"

    def __init__(self, targets, ignore_index=-100, reduction="mean", label_smoothing=0.0):
        self.targets, self.ignore_index, self.reduction = targets, ignore_index, reduction
        self.label_smoothing = label_smoothing

    def forward(self, z):
        eps, n_classes = self.label_smoothing, z.shape[-1]
        valid = self.targets != self.ignore_index
        t = np.where(valid, self.targets, 0)  # an ignored row reads class 0, zeroed below
        # log p = (z − max) − log Σ exp(z − max): exp cannot overflow (as softmax)
        shifted = z - z.max(axis=-1, keepdims=True)
        log_probs = shifted - np.log(row_sum(np.exp(shifted)))
        losses = -log_probs[np.arange(len(t)), t]  # −log p[t]
        if eps:  # label smoothing: (1 − ε)(−log p[t]) + (ε/C)·Σ_c(−log p[c])
            losses = (1 - eps) * losses - (eps / n_classes) * log_probs.sum(axis=-1)
        losses = np.where(valid, losses, 0).astype(z.dtype, copy=False)
        self.save(probs=np.exp(log_probs), t=t, valid=valid)
        self.n_valid = int(valid.sum())
        if self.reduction == "none":
            return losses
        total = losses.sum(dtype=z.dtype)
        if self.reduction == "sum":
            return total
        return total / self.n_valid if self.n_valid else np.array(np.nan, z.dtype)  # 0/0

    def backward(self, g):
        probs, t, valid = self.saved["probs"], self.saved["t"], self.saved["valid"]
        eps, n_classes = self.label_smoothing, probs.shape[-1]
        dz = probs - eps / n_classes  # p − q: q = (1 − ε)·onehot(t) + ε/C, onehot(t) for ε = 0
        dz[np.arange(len(t)), t] -= 1 - eps
        if self.reduction == "mean":
            g = g / max(self.n_valid, 1)
        # g: one number ("mean", "sum") or one per row [N] ("none"); ignored rows get 0
        dz *= np.where(valid, g, 0).astype(probs.dtype, copy=False)[:, None]
        return dz
