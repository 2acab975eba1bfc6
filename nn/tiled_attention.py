"""Attention in tiles with an online softmax, as one graph node: the same Z as ordinary attention
without its T_q×T_k weights (notes 3.8; Dao et al. 2022, "FlashAttention"; the op and its
formulas are in microtensor/ops/tiled_attention.py).

    z = tiled_attention(q, k, v, is_causal=True)      # Z = softmax(QKᵀ/√d_k + M) V

Ordinary attention (nn/attention.py) builds S and A from primitive ops, so that a picture
shows each step, and keeps A [..., T_q, T_k] for backward; this one keeps Z and a log-sum-exp
per row, O(T) in place of O(T²), and makes each tile's scores again in backward.
"""
import numbers

import numpy as np

from microtensor import Tensor, random
from microtensor.ops.tiled_attention import TiledAttention
from microtensor.tensor import apply

from .keep_attention import attention_layers
from .masks import attention_mask, attn_mask_array, check_mask_fits
from .roles import named

ATTENTIONS = ("ordinary", "tiled")  # what GPTConfig(attention=...) and the CLI's --attention take
# queries and keys per tile: 64 and 128 were the fastest of 32–256 at T = 1024 here
# (docs/tiled-attention.md); a [B·H, 64, 64] float32 tile of the baby model (786 kB) fits L2
TILE_SIZE = 64


def check_attention(attention, where):
    """ValueError naming `where` unless `attention` is "ordinary" or "tiled"."""
    if attention not in ATTENTIONS:
        raise ValueError(f"{where}: attention must be 'ordinary' or 'tiled'; got {attention!r}")


def tiled_attention(q, k, v, attn_mask=None, is_causal=False, dropout_p=0.0, causal_offset=0,
                    tile_size=None):
    """Z = softmax(QKᵀ/√d_k + M) V in tiles of `tile_size` queries × `tile_size` keys
    (default: TILE_SIZE, read at each call).

    Shapes: q [..., T_q, d_k], k [..., T_k, d_k], v [..., T_k, d_v] -> Z [..., T_q, d_v];
    float32 or float64, as q. attn_mask: boolean (True = blocked) or floating (added to the
    scaled scores), a Tensor or numpy array broadcasting against [..., T_q, T_k];
    is_causal: block key j for query i when j > i + causal_offset (0, the default, is
    PyTorch's top-left alignment, as nn.scaled_dot_product_attention; T_k − T_q aligns the
    last query with the last key, as nn.MultiHeadAttention does), and skip the tiles wholly
    above that diagonal. A query whose keys are all blocked gets a zero output, never NaN.
    dropout_p: dropout on the attention weights (each tile's mask drawn again in backward,
    so it is not the mask ordinary attention would draw from the same seed).
    Values and gradients equal ordinary attention's to rounding (tests/nn/test_tiled_attention.py).
    Raises ValueError when the shapes do not fit, dropout_p is outside [0, 1), tile_size
    is not a positive int or attn_mask requires grad (a learned bias: use ordinary attention);
    TypeError for integer q, k, v or a mask that is neither boolean nor floating.
    """
    d_k = q.shape[-1]
    if min(q.ndim, k.ndim, v.ndim) < 2 or k.shape[-1] != d_k or k.shape[-2] != v.shape[-2]:
        raise ValueError(f"tiled_attention: q {q.shape}, k {k.shape}, v {v.shape} do not fit: "
                         "need q [..., T_q, d_k], k [..., T_k, d_k], v [..., T_k, d_v]")
    if any(t.dtype.kind != "f" for t in (q, k, v)):
        raise TypeError(f"tiled_attention: q, k, v must be floating-point; got "
                        f"{q.dtype}, {k.dtype}, {v.dtype}")
    if not isinstance(dropout_p, numbers.Real) or not 0 <= dropout_p < 1:
        raise ValueError(f"tiled_attention: dropout_p must be in [0, 1); got {dropout_p!r}")
    tile_size = TILE_SIZE if tile_size is None else tile_size
    if not isinstance(tile_size, (int, np.integer)) or isinstance(tile_size, bool) or tile_size < 1:
        raise ValueError(f"tiled_attention: tile_size must be a positive int; got {tile_size!r}")
    if isinstance(attn_mask, Tensor) and attn_mask.requires_grad:
        raise ValueError("tiled_attention: attn_mask requires grad (a learned bias), which tiled "
                         "attention does not differentiate; use attention='ordinary'")
    mask = None
    if attn_mask is not None:
        mask = attn_mask_array(attn_mask)
        # as ordinary attention and torch: a mask may broadcast over the scores, never grow them
        check_mask_fits(mask, np.broadcast_shapes(q.shape[:-2], k.shape[:-2])
                        + (q.shape[-2], k.shape[-2]), "attn_mask")
        mask = mask.reshape((1,) * (2 - mask.ndim) + mask.shape)  # a [T_k] mask as [1, T_k]
    seed = int(random.generator().integers(2**63)) if dropout_p > 0 else None
    op = TiledAttention(mask, causal_offset if is_causal else None, float(dropout_p), seed,
                        int(tile_size), int(tile_size))
    z = apply(op, q, k, v)                                 # [..., T_q, d_v]
    return named(z, "Z (tiled)")  # the pictures' one node for all of attention


def multi_head_tiled(mha, q, k, v, attn_mask, key_padding_mask, causal_offset, dropout_p):
    """MultiHeadAttention's Z [B, H, T_q, d_k] with attention="tiled": its masks joined (the
    causal one as a rule, not a mask: tiles past it are skipped); no weights to keep."""
    b, h, t_q, t_k = q.shape[0], q.shape[1], q.shape[2], k.shape[2]
    mask = attention_mask((b, h, t_q, t_k), attn_mask, key_padding_mask)
    mha.last_attention = None
    return tiled_attention(q, k, v, mask, causal_offset is not None, dropout_p,
                           causal_offset or 0)


def use_attention(module, attention):
    """Make every nn.MultiHeadAttention inside `module` compute with `attention` ("ordinary" or
    "tiled"); the models call it with their config's choice. Returns `module`."""
    check_attention(attention, "use_attention")
    for m in attention_layers(module):
        m.attention = attention
    return module
