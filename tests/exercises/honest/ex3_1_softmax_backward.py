"""Exercise 3 · notes 3.2 and 3.8 · the backward pass of softmax.

Forward (given): each row of the scores s becomes a distribution a = softmax(s), along `axis`
(the key axis j in attention):  a_i = exp(s_i) / Σ_j exp(s_j).

Its derivative (notes 3.2): ∂a_i/∂s_j = a_i (δ_ij − a_j). Multiplying that Jacobian by the
upstream gradient da = ∂L/∂a, without ever building it (notes 3.8):
    ds = a ⊙ (da − Σ(a ⊙ da))        Σ along `axis`, one number per row.

Shapes: a [..., T_k] and da [..., T_k] (any leading dims, e.g. [B, H, T_q]) -> ds, the same
shape and dtype; `axis` is the softmax's axis (default −1).

Hint: the Σ is a weighted sum per row: (a * da).sum(axis=axis, keepdims=True), so that it
broadcasts back over the row. Without the subtraction you would get the gradient of exp, not
of softmax. The right ds has rows that sum to 0 (adding a constant to a row of s changes
nothing); a ⊙ da alone does not.
A blocked key has a = 0, so it gets ds = 0 for free (notes 3.8).

Reference (read it after): microtensor/ops/softmax.py, `Softmax.backward`.
"""
import numpy as np


def softmax(s, axis=-1):
    e = np.exp(s - s.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def softmax_backward(a, da, axis=-1):
    # explicit Jacobian J[..., i, j] = a_i (delta_ij - a_j), contracted with einsum
    a_m = np.moveaxis(a, axis, -1)
    da_m = np.moveaxis(da, axis, -1)
    n = a_m.shape[-1]
    J = a_m[..., :, None] * (np.eye(n, dtype=a.dtype) - a_m[..., None, :])
    ds = np.einsum("...ij,...i->...j", J, da_m)   # J is symmetric; ds_j = sum_i da_i J_ij
    return np.moveaxis(ds, -1, axis).astype(a.dtype, copy=False)
