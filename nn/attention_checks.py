"""The checks attention runs on its inputs, kept out of nn/attention.py so the formulas read
first: masks that do not fit the scores, the causal alignment, and the KV caches a model is given.

Each raises a one-line TypeError or ValueError naming the argument, what it got and what it
expected (masks follow the contract: boolean True = blocked, float added to the scores).
"""
import numpy as np

from microtensor import Tensor

from .kv_cache import KVCache


def mask_array(mask):
    """A mask given as a Tensor or as an array, as a numpy array."""
    return np.asarray(mask.data if isinstance(mask, Tensor) else mask)


def causal_offset(t_q, t_k, alignment):
    """The causal mask's offset for an alignment: 0 top-left, T_k − T_q bottom-right."""
    if alignment not in ("top_left", "bottom_right"):
        raise ValueError(f"causal_alignment must be 'top_left' or 'bottom_right'; got "
                         f"{alignment!r}")
    return 0 if alignment == "top_left" else t_k - t_q


def attn_mask_array(attn_mask):
    """attn_mask as a numpy array; TypeError unless it is boolean or floating, as in PyTorch
    (an integer mask of 0s and 1s would otherwise be added to the scores, blocking nothing)."""
    mask = mask_array(attn_mask)
    if mask.dtype.kind not in "bf":
        raise TypeError(f"attn_mask must be boolean (True = blocked) or floating (added to the "
                        f"scores); got dtype {mask.dtype}")
    return mask


def check_mask_fits(mask, shape, name):
    """ValueError unless `mask` broadcasts to the scores' `shape` without growing it: a mask
    with extra or mismatched dims would otherwise reshape the attention, or align a batch
    dim with the heads, without a word."""
    if mask.shape == tuple(shape)[max(len(shape) - mask.ndim, 0):]:
        return  # the scores' own trailing dims (a causal [T_q, T_k]): fits, no broadcast to try
    try:
        fits = np.broadcast_shapes(mask.shape, shape) == tuple(shape)
    except ValueError:
        fits = False
    if not fits:
        raise ValueError(f"{name} of shape {mask.shape} does not broadcast to the scores "
                         f"{tuple(shape)} = [..., T_q, T_k]")


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


def causal_alignment_for(t_q, t_k, causal_alignment, cached):
    """MultiHeadAttention's causal alignment: the one given, else bottom-right (the last query
    sees every key, as in cached decoding). ValueError when T_q != T_k without a KV cache and
    none is given: the function's default is top-left, so a silent choice would differ from it."""
    if causal_alignment is not None:
        return causal_alignment
    if t_q != t_k and not cached:
        raise ValueError(f"MultiHeadAttention: is_causal with T_q={t_q} != T_k={t_k} "
                         "needs causal_alignment='top_left' or 'bottom_right'")
    return "bottom_right"


def check_kv_caches(caches, n_layers, who, pairs=False):
    """The caches a caller passes to a model: a list with one nn.KVCache per layer (a pair
    (self, cross) per decoder layer if `pairs`), none shared between layers, the
    self-attention ones holding the same number of positions. TypeError or ValueError in
    one line naming `who` otherwise (a shared cache would mix two layers' keys)."""
    if not isinstance(caches, (list, tuple)):
        raise TypeError(f"{who}: caches must be a list with one entry per layer; got "
                        f"{type(caches).__name__}")
    if len(caches) != n_layers:
        raise ValueError(f"{who}: got {len(caches)} caches; expected one per layer, {n_layers}")
    flat = []
    for i, entry in enumerate(caches):
        if pairs and not (isinstance(entry, (list, tuple)) and len(entry) == 2):
            raise TypeError(f"{who}: cache {i} must be a (self-attention, cross-attention) "
                            f"pair of nn.KVCache; got {entry!r:.60}")
        for cache in (entry if pairs else (entry,)):
            if not isinstance(cache, KVCache):
                raise TypeError(f"{who}: cache {i} must be an nn.KVCache; got "
                                f"{type(cache).__name__}")
            if any(cache is seen for seen in flat):
                raise ValueError(f"{who}: cache {i} is an nn.KVCache already passed for "
                                 "another layer; each layer needs its own")
            flat.append(cache)
    lengths = {len(entry[0] if pairs else entry) for entry in caches}
    if len(lengths) > 1:
        raise ValueError(f"{who}: the caches hold different numbers of positions "
                         f"{sorted(lengths)}; they must come from the same decoding run")
