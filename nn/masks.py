"""Attention's masks beyond the notes' M (nn/attention.py draws that, 3.3): the causal alignment,
M cached per shape, the checks a mask must pass, and a caller's mask and padding joined to M.

Masks follow the contract: a boolean mask is True where a key is *blocked* (as `masked_fill`
and torch's `nn.MultiheadAttention`); a float mask is *added* to the scaled scores.
"""
import functools

import numpy as np

from microtensor import Tensor

from .roles import named


def causal_offset(t_q, t_k, alignment):
    """The causal mask's offset for an alignment: 0 top-left (torch's
    F.scaled_dot_product_attention), T_k − T_q bottom-right (the last query sees every key,
    as after a KV cache). ValueError for another alignment."""
    if alignment not in ("top_left", "bottom_right"):
        raise ValueError(f"causal_alignment must be 'top_left' or 'bottom_right'; got "
                         f"{alignment!r}")
    return 0 if alignment == "top_left" else t_k - t_q


def module_alignment(t_q, t_k, is_causal, causal_alignment, cached):
    """MultiHeadAttention's causal alignment: the one given, else "bottom_right" (the last
    query sees every key, as in cached decoding). ValueError when is_causal with T_q != T_k,
    without a KV cache and no alignment given: the function's default is top-left, so a
    silent choice would differ from it (another alignment: causal_offset's ValueError, where
    the attention takes the offset)."""
    if is_causal and causal_alignment is None and t_q != t_k and not cached:
        raise ValueError(f"MultiHeadAttention: is_causal with T_q={t_q} != T_k={t_k} "
                         "needs causal_alignment='top_left' or 'bottom_right'")
    return causal_alignment or "bottom_right"


def built_once_per_shape(causal_mask):
    """Speed: `causal_mask` (nn.attention's, passed in: that file imports this one) as a
    function of (t_q, t_k, offset) built once per shape and shared read-only; None where it
    blocks no key (offset ≥ t_k − 1: one query after a KV cache). Every attention layer of
    every step asks for the same few shapes, and np.triu builds a 64 × 64 mask in about the
    time of a small op. Used by `scaled_dot_product_attention` alone."""
    @functools.lru_cache(maxsize=16)  # few shapes recur: a small bound keeps the memory small
    def cached_causal_mask(t_q, t_k, offset):
        if offset >= t_k - 1:
            return None
        mask = causal_mask(t_q, t_k, offset)
        mask.flags.writeable = False
        return mask
    return cached_causal_mask


def mask_array(mask):
    """A mask given as a Tensor or as an array, as a numpy array."""
    return np.asarray(mask.data if isinstance(mask, Tensor) else mask)


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
    dim with the heads, without a word (torch refuses it too)."""
    if mask.shape == tuple(shape)[max(len(shape) - mask.ndim, 0):]:
        return  # the scores' own trailing dims (a causal [T_q, T_k]): fits, no broadcast to try
    try:
        fits = np.broadcast_shapes(mask.shape, shape) == tuple(shape)
    except ValueError:
        fits = False
    if not fits:
        raise ValueError(f"{name} of shape {mask.shape} does not broadcast to the scores "
                         f"{tuple(shape)} = [..., T_q, T_k]")


def add_attn_mask(s, attn_mask, blocked):
    """scaled_dot_product_attention's attn_mask joined to the causal mask `blocked` (bool or
    None): a boolean one ORed into it, a float one added to the scores S [..., T_q, T_k] (on
    the graph when it requires grad: a learned bias). Returns (S, blocked). TypeError or
    ValueError for a mask that is neither boolean nor floating, or does not fit S."""
    if attn_mask is None:
        return s, blocked
    mask = attn_mask_array(attn_mask)
    check_mask_fits(mask, s.shape, "attn_mask")
    if mask.dtype == np.bool_:
        return s, (mask if blocked is None else blocked | mask)
    learned = isinstance(attn_mask, Tensor) and attn_mask.requires_grad
    s = s + (attn_mask if learned else mask.astype(s.dtype))  # QKᵀ/√d_k + M
    return named(s, "S + M"), blocked


def attention_mask(scores_shape, attn_mask=None, key_padding_mask=None):
    """One mask for the scores [B, H, T_q, T_k] from a key_padding_mask (bool [B, T_k], True
    at padding) and attn_mask (bool, or float added to the scores); the causal M is joined
    later, by the attention itself. Boolean, or float when attn_mask is float; a float
    attn_mask that requires grad (a learned bias) stays a Tensor on the graph, blocked keys
    adding −inf to it. None when nothing is blocked. ValueError for a mask that does not fit
    the scores."""
    b, _, t_q, t_k = scores_shape
    blocked = None
    if key_padding_mask is not None:
        pad = mask_array(key_padding_mask)
        if pad.dtype != np.bool_ or pad.shape != (b, t_k):
            raise ValueError(f"key_padding_mask must be boolean [B, T_k] = [{b}, {t_k}] "
                             f"(True at padding); got {pad.dtype} {pad.shape}")
        pad = pad[:, None, None, :]                                   # [B, 1, 1, T_k]
        blocked = pad
    if attn_mask is None:
        return blocked
    mask = attn_mask_array(attn_mask)
    check_mask_fits(mask, scores_shape, "attn_mask")
    if mask.dtype == np.bool_:
        return mask if blocked is None else blocked | mask
    if isinstance(attn_mask, Tensor) and attn_mask.requires_grad:
        mask = attn_mask  # learned: on the graph
    if blocked is None:
        return mask
    return mask + np.where(blocked, -np.inf, 0.0).astype(mask.dtype)
