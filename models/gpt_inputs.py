"""GPT.forward's input checks (models/gpt.py): each ValueError names the argument, what it got and
what it expected.
"""
import numpy as np

import nn
from microtensor import Tensor


def check_forward(model, idx, kv_caches, last_only):
    """(idx as an array [B, T], start: the position of its first token, len(kv_caches) or 0).

    ValueError for idx not 2-D, positions past block_size, last_only on a cache that holds
    positions; kv_caches: nn.check_kv_caches.
    """
    idx = np.asarray(idx.data if isinstance(idx, Tensor) else idx)
    if idx.ndim != 2:
        raise ValueError(f"GPT: idx must be [B, T] token ids; got shape {idx.shape}")
    if kv_caches is not None:
        nn.check_kv_caches(kv_caches, len(model.blocks), "GPT: kv_caches")
    start = len(kv_caches[0]) if kv_caches else 0
    end, block_size = start + idx.shape[1], model.config.block_size
    if end > block_size:
        raise ValueError(f"GPT: sequence length {end} exceeds block_size {block_size}; "
                         f"crop idx to its last {block_size} tokens")
    if last_only and start:
        raise ValueError("GPT: last_only needs empty kv_caches (a prefill)")
    return idx, start
