"""The check MultiHeadAttention runs on its inputs, kept out of nn/attention.py so the formulas
read first (the masks' checks are in nn/masks.py, the caches' in nn/kv_cache.py).

It raises a one-line TypeError or ValueError naming the argument, what it got and what it
expected.
"""
from .kv_cache import KVCache


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
