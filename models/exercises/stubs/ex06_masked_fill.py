"""Exercise 6 · notes 3.3 (and 3.8) · masked fill, forward and backward.

The causal mask (3.3) sets M_ij = −∞ for a future key j > i. In code the mask is a boolean
array, True where a position is *blocked* (the same sense as PyTorch's masked_fill), and
    forward:   z = value where mask, x elsewhere            (value = −∞ for attention)
    backward:  ∂L/∂x = g where not mask, 0 where mask       (a filled entry is a constant)
so that after softmax a blocked key has weight exp(−∞) = 0 and no gradient reaches it (3.8).

Shapes: x [..., T_q, T_k] float; mask bool, broadcasting to x's shape (e.g. [T_q, T_k] for
every batch and head, or a padding mask [B, 1, 1, T_k] for scores [B, H, T_q, T_k], both
tested); value a float -> z, x's shape and dtype. g: z's shape -> ∂L/∂x.

Hint: np.where(mask, value, x) picks per element and broadcasts the mask (indexing,
z[mask] = value or z[..., mask] = value, needs a mask of the indexed axes' own shape, and a
[B, 1, 1, T_k] mask is not); keep x's dtype (a float32 x stays float32)
and never write into x or g: the caller may still need them.

Reference (read it after): microtensor/ops/masking.py, `MaskedFill`.
"""
import numpy as np  # noqa: F401  (you will need it)


def masked_fill(x, mask, value):
    """z = value where mask (True = blocked), x elsewhere (numpy arrays)."""
    raise NotImplementedError("exercise 6: write masked_fill(x, mask, value) in "
                              "exercises/ex06_masked_fill.py")


def masked_fill_backward(g, mask):
    """∂L/∂x from g = ∂L/∂z."""
    raise NotImplementedError("exercise 6: write masked_fill_backward(g, mask) in "
                              "exercises/ex06_masked_fill.py")
