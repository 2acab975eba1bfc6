"""Exercise 8 · notes 3.5 · multi-head attention: split into heads, merge back.

Each head attends in its own slice of the projections: with D = H·d, head h owns columns
h·d … (h+1)·d − 1 of Q = X W_Q (and of K, V). The notes' shapes (3.5):
    X [B, T, D] → projection [B, T, H·d] → reshape [B, T, H, d] → transpose [B, H, T, d]
    → scores [B, H, T, T] → context [B, H, T, d] → merge [B, T, D] (then W_O mixes the heads).
Merging is the exact inverse of splitting: merge_heads(split_heads(x, H)) == x.

Shapes: split_heads: x [B, T, D] (a microtensor Tensor), n_heads H (D divisible by H)
-> [B, H, T, d]; merge_heads: z [B, H, T, d] -> [B, T, H·d].

Hint: reshape only regroups the last axis (D = H·d → H, d) while the memory order stays
[B, T, ...]; then transpose(1, 2) brings H before T. A reshape straight to [B, H, T, d] would
mix positions and heads. To merge, transpose back *first*, then reshape. Tensor methods:
`x.reshape(b, t, h, d)`, `x.transpose(1, 2)`.

Reference (read it after): nn/attention.py, `MultiHeadAttention._split_heads` and
`MultiHeadAttention._merge_heads`.
"""


def split_heads(x, n_heads):
    """x [B, T, D] -> [B, H, T, d], d = D / H."""
    b, t, d_model = x.shape
    return x.reshape(b, t, n_heads, d_model // n_heads).transpose(1, 2)


def merge_heads(z):
    """z [B, H, T, d] -> [B, T, H·d], heads side by side per position."""
    b, h, t, d = z.shape
    return z.transpose(1, 2).reshape(b, t, h * d)
