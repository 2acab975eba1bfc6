"""Exercise 5 · notes 3.7 (and 3.3's loss mask) · the backward pass of cross-entropy.

Teacher forcing (3.7) scores every position at once: logits z [N, C] (N = B·T positions, C
classes), targets t [N]. A position whose target is `ignore_index` (padding: the loss mask of
3.3) does not count. With p = softmax(z) per row and n the number of counted rows:
    L = (1/n) Σ_{counted i} −log p_i[t_i]
    ∂L/∂z_i = (p_i − onehot(t_i)) / n    for a counted row,    0 for an ignored row.

Shapes: logits [N, C] float, targets [N] integer -> ∂L/∂logits [N, C], logits' dtype.

Hint: p − onehot, not onehot − p (L falls as p[t] grows). The mean is over the *counted* rows,
so divide by n, not by N; ignored rows get exactly 0, and when no row counts (n = 0) the
whole gradient is 0. Index the onehot on the counted rows only: an ignored target (−100) is
not a class. Compute softmax stably: subtract *each row's own* max first, always. A model's
logits come in rows of very different scale, and in float32, whose exp overflows above 88.7
(float64's above 709): a max over the whole array, or a shift only when the logits exceed
700, gives NaN there (both are tested).

Reference (read it after): microtensor/ops/loss.py, `CrossEntropy.backward` (which also
handles label smoothing and the other reductions).
"""
import numpy as np


def cross_entropy_backward(logits, targets, ignore_index=-100):
    z = np.asarray(logits)
    t = np.asarray(targets)
    # p = exp(z - logsumexp(z)) per row
    m = z.max(axis=1, keepdims=True)
    lse = m + np.log(np.exp(z - m).sum(axis=1, keepdims=True))
    p = np.exp(z - lse)
    keep = t != ignore_index
    n = int(keep.sum())
    out = np.zeros_like(z)
    if n == 0:
        return out
    rows = np.flatnonzero(keep)
    out[rows] = p[rows]
    out[rows, t[rows]] -= 1
    out /= z.dtype.type(n)
    return out
