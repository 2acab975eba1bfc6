"""Exercise 7 · notes 3.1–3.4 · scaled dot-product attention, forward.

    Z = softmax(QKᵀ/√d_k + M) V          (Vaswani et al. 2017, §3.2.1)

in this order (3.2, 3.3): the scores QKᵀ, then the scale 1/√d_k, then the mask, then softmax
along the key axis (each query row becomes a distribution over the keys), then times V.
M_ij = −∞ where key j is blocked: here a boolean `mask`, True where blocked, applied with
`masked_fill(mask, -inf)` *before* softmax, so the visible keys are renormalised (3.3).

Shapes: q [..., T_q, d_k], k [..., T_k, d_k], v [..., T_k, d_v] (microtensor Tensors; the
leading dims are e.g. [B, H]); mask None or a boolean numpy array broadcasting to
[..., T_q, T_k] -> (z [..., T_q, d_v], a [..., T_q, T_k]) as Tensors.

A query whose keys are *all* blocked (a padding mask can do that) has nothing to attend to:
its row of A is all zeros and its row of Z is zeros, never NaN (as the project's and
PyTorch's attention give; the grader tests it). The textbook formula exp(s)/Σexp(s) is 0/0 =
NaN on a row of −∞; the engine's `Tensor.softmax` already gives zeros there, so the hint's
ops need nothing more.

Hint: use the Tensor ops, so that backward comes for free: `q @ k.transpose(-2, -1)`,
`* (1 / math.sqrt(d_k))`, `.masked_fill(mask, -math.inf)`, `.softmax(axis=-1)`, `@ v`.
√d_k, not d_k (3.2: the variance of q·k is d_k, so its standard deviation is √d_k). Softmax
over the last axis (keys), never over the queries. Check yourself with the notes' 3.4 example:
Q = [[2,1],[1,2]], K = [[1,2],[1,1]], V = [[2,−1],[1,0]] gives A ≈ [[.6698,.3302],
[.8044,.1956]] and, causal, Z ≈ [[2,−1],[1.8044,−.8044]].

Reference (read it after): nn/attention.py, `scaled_dot_product_attention`.
"""
import math  # noqa: F401  (you will need it)


def scaled_dot_product_attention(q, k, v, mask=None):
    """(Z, A): attention of the queries q over the keys k and values v (Tensors)."""
    raise NotImplementedError("exercise 7: write scaled_dot_product_attention(q, k, v, mask) in "
                              "exercises/ex07_attention.py")
