"""Attention as notes 3.1–3.5 draw it: the causal mask M, Z = softmax(QKᵀ/√d_k + M) V, and H
heads (Vaswani et al. 2017, "Attention Is All You Need", §3.2). Sizes: B batch rows, T
positions, D = d_model, H = n_heads, d_k = head_dim = D / H (the notes' d). A boolean mask is
True where a key is blocked (M_ij = −inf), False where it is seen (M_ij = 0); a float mask is
M. Beside this file: masks.py, kv_cache.py (3.7), tiled_attention.py (FlashAttention's idea,
which 3.8 names), keep_attention.py
(A for a picture), attention_checks.py (bad input), roles.py (the pictures' step names).
"""
import math

import numpy as np

import microtensor.functional as F

from . import masks
from .attention_checks import check_attention_inputs, check_mha_arguments, check_qkv
from .keep_attention import keep_weights
from .layers import Linear
from .module import Module
from .roles import name_steps
from .tiled_attention import multi_head_tiled


def causal_mask(t_q, t_k, offset=0):
    """M of notes 3.3 as booleans [t_q, t_k]: True (M_ij = −inf) where key j lies in query i's
    future, j > i + offset; False (M_ij = 0) elsewhere. offset = t_k − t_q puts the queries
    at the end of the keys (after a KV cache: the last query sees every key)."""
    return np.triu(np.ones((t_q, t_k), dtype=bool), k=offset + 1)


# speed: causal_mask(t_q, t_k, offset) built once per shape (read-only), None where it blocks
# no key (one query after a KV cache): every layer of every step asks for the same few shapes
cached_causal_mask = masks.built_once_per_shape(causal_mask)


def scaled_dot_product_attention(q, k, v, attn_mask=None, is_causal=False, dropout_p=0.0,
                                 causal_alignment="top_left"):
    """Z = softmax(QKᵀ/√d_k + M) V (notes 3.2–3.4), returning (Z, A). A boolean attn_mask is
    True where a key is blocked, unlike torch.nn.functional.scaled_dot_product_attention,
    where True means may attend. Errors: attention_checks.py, masks.py.

    q [..., T_q, d_k], k [..., T_k, d_k], v [..., T_k, d_v] -> Z [..., T_q, d_v] and
    A [..., T_q, T_k] (before dropout; a row whose keys are all blocked is 0, never NaN).
    A float attn_mask is added (a learned one gets its gradient). is_causal: causal_mask at
    offset 0 ("top_left", torch's) or T_k − T_q ("bottom_right"): the same when T_q = T_k.
    """
    check_qkv(q, k, v)
    d_k, t_q, t_k = q.shape[-1], q.shape[-2], k.shape[-2]
    k_t = k.transpose(-2, -1)                              # Kᵀ [..., d_k, T_k]
    qk = q @ k_t                                           # QKᵀ [..., T_q, T_k]
    s = qk * (1 / math.sqrt(d_k) if d_k else 1.0)          # S = QKᵀ/√d_k (d_k = 0: S = 0)
    # M's offset: 0 top-left (torch's default; in training T_q = T_k, where both agree), or
    # T_k − T_q bottom-right (queries at the keys' end, as after a KV cache: masks.py)
    blocked = (cached_causal_mask(t_q, t_k, masks.causal_offset(t_q, t_k, causal_alignment))
               if is_causal else None)                     # M [T_q, T_k]  True: M_ij = −inf
    # a bool attn_mask (padding) is ORed into `blocked`; a float one is added: S + M. With no
    # attn_mask (the GPT's case) it returns (s, blocked) unchanged
    s_m, blocked = masks.add_attn_mask(s, attn_mask, blocked)
    if blocked is not None:
        s_m = s_m.masked_fill(blocked, -math.inf)          # S + M: exp(−inf) = 0
    a = s_m.softmax(axis=-1)                               # A [..., T_q, T_k]  rows sum to 1 (or 0)
    z = (F.dropout(a, dropout_p) if dropout_p > 0 else a) @ v  # Z [..., T_q, d_v]
    name_steps({"Q": q, "K": k, "V": v, "Kᵀ": k_t, "QKᵀ": qk, "S": s, "A": a, "Z": z,
                "S (masked)": s_m if blocked is not None else None})  # the pictures' names
    return z, a


class MultiHeadAttention(Module):
    """H heads, each attending with its own d_k columns of W_Q, W_K, W_V; W_O mixes them (3.5).

    q_proj, k_proj, v_proj, out_proj: Linear(D, D) each, 4D² weights (+4D biases) for any H.
    attention: "ordinary" (here) or "tiled" (tiled_attention.py), the same values.
    keep_attention: `last_attention` holds the last call's A [B, H, T, T_k] (keep_attention.py).
    """

    def __init__(self, d_model, n_heads, dropout=0.0, bias=True, attention="ordinary",
                 keep_attention=False):
        super().__init__()
        check_mha_arguments(d_model, n_heads, dropout, attention)
        self.d_model, self.n_heads, self.head_dim = d_model, n_heads, d_model // n_heads
        self.dropout, self.attention = dropout, attention
        self.q_proj = Linear(d_model, d_model, bias)   # W_Q [D, D]: H heads, [D, d_k] each
        self.k_proj = Linear(d_model, d_model, bias)   # W_K
        self.v_proj = Linear(d_model, d_model, bias)   # W_V
        self.out_proj = Linear(d_model, d_model, bias)  # W_O
        self.keep_attention, self.last_attention = keep_attention, None

    def forward(self, x, context=None, attn_mask=None, key_padding_mask=None, is_causal=False,
                kv_cache=None, causal_alignment=None):
        """x [B, T, D] -> [B, T, D]: queries from x, keys and values from x or, in
        cross-attention, `context` [B, T_k, D]. attn_mask: bool or float, to [B, H, T, T_k];
        key_padding_mask: bool [B, T_k], True at padding; kv_cache: nn.KVCache (3.7); is_causal:
        M, aligned as the comment at `alignment` says. Errors: attention_checks.py, masks.py."""
        check_attention_inputs(self.d_model, x, context, kv_cache)
        B, T, _ = x.shape
        source = x if context is None else context
        q = self._split_heads(self.q_proj(x))               # [B, H, T, d_k]    Q = X W_Q
        if kv_cache is None:  # source: X itself, or in cross-attention the context
            k = self._split_heads(self.k_proj(source))      # [B, H, T_k, d_k]  K = source W_K
            v = self._split_heads(self.v_proj(source))      # [B, H, T_k, d_k]  V = source W_V
        else:  # (3.7) K, V of the new rows as above, joined after the cache's past:
            # [B, H, T_past + T, d_k]; cross-attention's, of a fixed context, made once
            k, v = kv_cache.keys_values(self, source, cross=context is not None)
        T_k = k.shape[2]
        # M's alignment (masks.py): the GPT in training has T = T_k, offset 0 whichever the
        # alignment (M = np.triu(ones, k=1)); after a KV cache (T < T_k) bottom-right, unless
        # causal_alignment says, so that the last query sees every key (T = 1, T_k = 4 after 3
        # cached keys: offset 3, M blocks nothing). ValueError for is_causal with T ≠ T_k and
        # neither a cache nor an alignment
        alignment = masks.module_alignment(T, T_k, is_causal, causal_alignment,
                                           kv_cache is not None)
        dropout_p = self.dropout if self.training else 0.0
        if self.attention == "tiled":                       # the same Z in O(T) memory (3.8)
            offset = masks.causal_offset(T, T_k, alignment) if is_causal else None
            z = multi_head_tiled(self, q, k, v, attn_mask, key_padding_mask, offset, dropout_p)
        else:
            mask = None  # the GPT's case: no mask but M, which the function builds (is_causal)
            if attn_mask is not None or key_padding_mask is not None:
                # padding [B, 1, 1, T_k] OR'd with the caller's attn_mask (masks.py): bool,
                # True where blocked (float if attn_mask is)
                mask = masks.attention_mask((B, self.n_heads, T, T_k), attn_mask,
                                            key_padding_mask)
            z, a = scaled_dot_product_attention(q, k, v, mask, is_causal, dropout_p, alignment)
            keep_weights(self, a)                           # only when asked
        return self._merge_heads(z, B, T)                   # [B, T, D]

    def _split_heads(self, x):
        """x [B, T, D] -> [B, H, T, d_k]: head h's W_Q is q_proj.weight[:, h·d_k:(h+1)·d_k]."""
        b, t, _ = x.shape
        return x.reshape(b, t, self.n_heads, self.head_dim).transpose(1, 2)  # [B, H, T, d_k]

    def _merge_heads(self, z, b, t):
        """Z [B, H, T, d_k] -> [B, T, D]: heads side by side again (transpose first: a reshape
        alone would mix heads with positions), mixed by W_O, then output dropout (GPT-2's)."""
        z = z.transpose(1, 2).reshape(b, t, self.d_model)   # [B, T, D]  concat(head_1..head_H)
        return F.dropout(self.out_proj(z), self.dropout, self.training)  # [B, T, D]  · W_O
