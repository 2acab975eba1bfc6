"""The two layers of the 2017 encoder-decoder (Vaswani et al. 2017 §3.1, §3.2.3, §5.4; notes
3.6): an encoder layer (self-attention over the whole source, FFN) and a decoder layer (causal
self-attention, cross-attention over the encoder output, FFN), post-norm LN(x + F(x)) or
pre-norm by nn/block.py's `sublayer`. torch.nn's names and defaults: nhead = H,
dim_feedforward = d_ff, batch_first=False ([T, B, D]; models/ pass batch_first=True, [B, T, D]).
Differences from torch: docs/conformance.md.
"""
from .attention import MultiHeadAttention
from .block import sublayer
from .feedforward import FeedForward
from .layer_checks import check_causal_hint
from .layers import LayerNorm
from .module import Module


def _batch_major(x, batch_first):
    """[T, B, D] <-> [B, T, D] (a view) unless batch_first: the attention works batch-first."""
    return x if batch_first else x.transpose(0, 1)


class TransformerEncoderLayer(Module):
    """Self-attention over the whole source (no causal mask), then the FFN: self_attn, norm1,
    ff (torch's linear1 is ff.fc, linear2 ff.proj), norm2. Dropout after each sub-layer (§5.4)
    and, as torch, on the attention weights A and after the FFN's activation."""

    def __init__(self, d_model, nhead, dim_feedforward=2048, dropout=0.1, activation="relu",
                 layer_norm_eps=1e-5, batch_first=False, norm_first=False, bias=True):
        super().__init__()
        self.batch_first, self.norm_first = batch_first, norm_first
        self.self_attn = MultiHeadAttention(d_model, nhead, dropout=dropout, bias=bias)
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias)
        self.ff = FeedForward(d_model, dim_feedforward, activation=activation, dropout=dropout,
                              bias=bias, activation_dropout=dropout)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias)

    def forward(self, src, src_mask=None, src_key_padding_mask=None, is_causal=False):
        """src [T_src, B, D] ([B, T_src, D] if batch_first) -> the same shape. src_mask: bool
        (True: blocked) or float (added), to [T_src, T_src]; src_key_padding_mask: bool
        [B, T_src], True at padding; is_causal: M. ValueError: bad masks (masks.py)."""
        def self_attention(h):
            return self.self_attn(h, attn_mask=src_mask, key_padding_mask=src_key_padding_mask,
                                  is_causal=is_causal)

        x = _batch_major(src, self.batch_first)                           # [B, T_src, D]
        x = sublayer(x, self.norm1, self_attention, self.norm_first)      # [B, T_src, D]
        x = sublayer(x, self.norm2, self.ff, self.norm_first)            # [B, T_src, D]
        return _batch_major(x, self.batch_first)


class TransformerDecoderLayer(Module):
    """Self-attention (causal with tgt_is_causal: M of notes 3.3), cross-attention (queries from the
    decoder, keys and values from `memory`, the encoder output: where the source reaches the
    decoder), FFN: self_attn, norm1, multihead_attn (the cross-attention), norm2, ff, norm3."""

    def __init__(self, d_model, nhead, dim_feedforward=2048, dropout=0.1, activation="relu",
                 layer_norm_eps=1e-5, batch_first=False, norm_first=False, bias=True):
        super().__init__()
        self.batch_first, self.norm_first = batch_first, norm_first
        self.self_attn = MultiHeadAttention(d_model, nhead, dropout=dropout, bias=bias)
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias)
        self.multihead_attn = MultiHeadAttention(d_model, nhead, dropout=dropout, bias=bias)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias)
        self.ff = FeedForward(d_model, dim_feedforward, activation=activation, dropout=dropout,
                              bias=bias, activation_dropout=dropout)
        self.norm3 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias)

    def forward(self, tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,
                memory_key_padding_mask=None, tgt_is_causal=False, memory_is_causal=False,
                self_attn_cache=None, cross_attn_cache=None):
        """tgt [T_tgt, B, D], memory [T_src, B, D] -> tgt's shape ([B, T, D] if batch_first).
        Masks as the encoder's, tgt_* over the target [T_tgt, T_tgt], memory_* over the source
        [T_tgt, T_src]; memory_is_causal: unused, torch's hint. self_attn_cache, cross_attn_cache:
        nn.KVCache, step by step. ValueError: bad masks, a tgt_mask that is not M (layer_checks)."""
        # with tgt_is_causal, a tgt_mask must equal M: dropped, the attention builds M itself
        tgt_mask, tgt_is_causal = check_causal_hint(tgt_mask, tgt_is_causal)
        x, memory = (_batch_major(t, self.batch_first) for t in (tgt, memory))  # [B, T, D]

        def self_attention(h):
            return self.self_attn(h, attn_mask=tgt_mask, key_padding_mask=tgt_key_padding_mask,
                                  is_causal=tgt_is_causal, kv_cache=self_attn_cache)

        def cross_attention(h):
            return self.multihead_attn(h, context=memory, attn_mask=memory_mask,
                                       key_padding_mask=memory_key_padding_mask,
                                       kv_cache=cross_attn_cache)

        x = sublayer(x, self.norm1, self_attention, self.norm_first)     # [B, T_tgt, D]
        x = sublayer(x, self.norm2, cross_attention, self.norm_first)    # [B, T_tgt, D]
        x = sublayer(x, self.norm3, self.ff, self.norm_first)            # [B, T_tgt, D]
        return _batch_major(x, self.batch_first)
