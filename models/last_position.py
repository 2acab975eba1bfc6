"""Speed for generation: a GPT's last-position logits alone, with less work.

Generation samples from the last position only (nanoGPT runs its head on x[:, [-1]]). Every
block but the last still needs every position, whose keys and values the next block attends
over; in the last block only the last query is asked for, and everything after attention
works row by row, so it sees one row: 22% fewer FLOPs on the baby model's [1, 64] window.
Called by GPT.generate alone, at each step that recomputes a whole window.
"""
import numpy as np

import nn


def last_position_logits(gpt, idx, kv_caches=None):
    """gpt(idx, kv_caches=kv_caches)[0][:, -1:], up to rounding: logits [B, 1, vocab_size].

    idx: int ids [B, T], T <= block_size; kv_caches: None, or one empty nn.KVCache per block,
    filled here with every position's keys and values (a prefill). ValueError if one is not
    empty.
    """
    if kv_caches is not None and any(len(cache) for cache in kv_caches):
        raise ValueError("last_position_logits: the caches must start empty (a prefill)")
    *blocks, last = gpt.blocks
    *caches, last_cache = kv_caches or [None] * len(gpt.blocks)
    x = gpt.drop(gpt.wte(idx) + gpt.wpe(np.arange(idx.shape[1])))  # [B, T, D]
    for block, cache in zip(blocks, caches):
        x = block(x, kv_cache=cache)                                # [B, T, D]
    # the last block, as TransformerBlock.forward, for its last row: that query attends
    # over every position (cross-attention to the sequence, whose last key is itself, so
    # no mask is needed), then the FFN sub-layer sees that row alone
    row = x[:, -1:]                                                 # [B, 1, D]
    if last.norm_first:  # row + attn(LN(x)): x normalized once, the query its last row
        h = last.ln_1(x)                                            # [B, T, D]
        x = nn.residual(row, last.attn(h[:, -1:], context=h, kv_cache=last_cache))
    else:                # LN(row + attn(x))
        x = last.ln_1(nn.residual(row, last.attn(row, context=x, kv_cache=last_cache)))
    x = nn.sublayer(x, last.ln_2, last.mlp, last.norm_first)        # [B, 1, D]
    return gpt.ln_f(x) @ gpt.wte.weight.T                           # [B, 1, V]  tied LM head
