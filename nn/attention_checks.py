"""The checks attention runs on its arguments and inputs, kept out of nn/attention.py so the
formulas read first (the masks' checks are in nn/masks.py, the caches' in nn/kv_cache.py).

It raises a one-line TypeError or ValueError naming the argument, what it got and what it
expected.
"""
import numbers

import numpy as np

from .kv_cache import KVCache
from .tiled_attention import check_attention


def check_qkv(q, k, v):
    """scaled_dot_product_attention's q [..., T_q, d_k], k [..., T_k, d_k], v [..., T_k, d_v]:
    ValueError when they do not fit, TypeError unless floating-point."""
    if min(q.ndim, k.ndim, v.ndim) < 2 or k.shape[-1] != q.shape[-1] \
            or k.shape[-2] != v.shape[-2]:
        raise ValueError(f"attention: q {q.shape}, k {k.shape}, v {v.shape} do not fit: need "
                         "q [..., T_q, d_k], k [..., T_k, d_k], v [..., T_k, d_v]")
    if any(t.dtype.kind != "f" for t in (q, k, v)):  # int scores would quietly be float64
        raise TypeError(f"attention: q, k, v must be floating-point; got "
                        f"{q.dtype}, {k.dtype}, {v.dtype}")


def check_mha_arguments(d_model, n_heads, dropout, attention):
    """MultiHeadAttention's arguments: ValueError unless d_model and n_heads are positive ints,
    n_heads divides d_model, dropout is in [0, 1) and attention is "ordinary" or "tiled"."""
    for name, value in (("d_model", d_model), ("n_heads", n_heads)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
            raise ValueError(f"MultiHeadAttention: {name} must be a positive int; got {value!r}")
    if d_model % n_heads:
        raise ValueError(f"MultiHeadAttention: d_model={d_model} is not divisible by "
                         f"n_heads={n_heads}")
    if not isinstance(dropout, numbers.Real) or not 0 <= dropout < 1:
        raise ValueError(f"MultiHeadAttention: dropout must be a number in [0, 1); "
                         f"got {dropout!r}")
    check_attention(attention, "MultiHeadAttention")


def check_attention_inputs(d_model, x, context, kv_cache):
    """MultiHeadAttention.forward's inputs: x [B, T_q, D], context [B, T_k, D] with x's B (or
    None), kv_cache an nn.KVCache (or None). Checked before anything is projected or cached."""
    if kv_cache is not None and not isinstance(kv_cache, KVCache):
        raise TypeError(f"MultiHeadAttention: kv_cache must be an nn.KVCache; got "
                        f"{type(kv_cache).__name__}")
    if x.ndim != 3 or x.shape[-1] != d_model:
        raise ValueError(f"MultiHeadAttention: x must be [B, T, {d_model}]; got {x.shape}")
    if context is not None and (context.ndim != 3 or context.shape[0] != x.shape[0]
                                or context.shape[-1] != d_model):
        # a context of batch 1 would broadcast against every row of x without a word
        raise ValueError(f"MultiHeadAttention: context must be [B, T_k, {d_model}] "
                         f"with x's B = {x.shape[0]}; got {context.shape}")
