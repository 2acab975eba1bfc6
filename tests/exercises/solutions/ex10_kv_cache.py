"""Exercise 10 · notes 3.7 · decoding with a KV cache.

Generating is step by step (3.7): the new token's query attends over the keys and values of
every position so far. Those of the earlier positions do not change, so they are kept (the KV
cache) instead of being recomputed: each call appends its new keys and values, then attends.
The cache knows nothing of the future: it only holds what was already computed.

A call may bring several new positions at once (the prompt, "prefill", is known and runs in
parallel); they sit at the *end* of the keys, so new query i (0-based among the T_new) may see
key j only if j ≤ T_past + i: a causal mask aligned bottom-right, offset T_past.

Shapes: q, k, v [B, H, T_new, d] (microtensor Tensors) for the new positions;
cache a dict {"k": None or [B, H, T_past, d], "v": the same}, which you update to hold
[B, H, T_past + T_new, d] -> the attention output [B, H, T_new, d].

Hint: append along the positions axis, −2: `microtensor.cat([cache["k"], k], axis=-2)`.
`nn.causal_mask(t_q, t_k, offset)` is True where key j > i + offset (blocked);
`nn.scaled_dot_product_attention(q, keys, values, attn_mask=mask)` returns (out, weights).
With one new query the mask blocks nothing, but a prefill needs it, offset = T_past.

Reference (read it after): nn/kv_cache.py, `KVCache.append`; nn/attention.py,
`MultiHeadAttention.forward` (its causal mask, aligned with the last key).
"""
import microtensor
import nn


def attend_with_cache(cache, q, k, v):
    """Append k, v to the cache, then attend q over every cached position (causal)."""
    if cache["k"] is not None:
        k = microtensor.cat([cache["k"], k], axis=-2)
        v = microtensor.cat([cache["v"], v], axis=-2)
    cache["k"], cache["v"] = k, v
    mask = nn.causal_mask(q.shape[-2], k.shape[-2], offset=k.shape[-2] - q.shape[-2])
    return nn.scaled_dot_product_attention(q, k, v, attn_mask=mask)[0]
