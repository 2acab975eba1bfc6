"""The two layers of the 2017 encoder-decoder Transformer: an encoder layer (bidirectional
self-attention, FFN) and a decoder layer (causal self-attention, cross-attention over the
encoder output, FFN).

References: Vaswani et al. 2017, "Attention Is All You Need", §3.1 (the two stacks), §3.2.3
(the three uses of attention), §5.4 (dropout on every sub-layer); course notes 3.6 (the
decoder-only GPT is not the whole original Transformer). Names and arguments follow
torch.nn.TransformerEncoderLayer / TransformerDecoderLayer; tensors are always batch-first
[B, T, D], as torch's with batch_first=True.

Post-norm, the paper's order (the default):  x = LN(x + Sublayer(x))
Pre-norm (norm_first=True):                  x = x + Sublayer(LN(x))
Both orders are `nn.sublayer` (nn/block.py), the one the GPT's block uses: an encoder
layer is a TransformerBlock without the causal mask, under torch.nn's names.
"""
from .attention import MultiHeadAttention
from .block import sublayer
from .feedforward import FeedForward
from .layers import LayerNorm
from .module import Module


def _require_batch_first(layer, batch_first):
    """batch_first sits where torch has it, so that torch's positional arguments mean the same
    here (the 7th is not norm_first); tensors here are always [B, T, D]."""
    if batch_first is not True:
        raise ValueError(f"{layer}: batch_first must be True: tensors here are [B, T, D] "
                         f"(torch's layout [T, B, D] is not supported); got {batch_first!r}")


class TransformerEncoderLayer(Module):
    """src [B, T_src, D] -> [B, T_src, D]: self-attention over the whole source, then the FFN.

    Every source position attends to every other one, before and after it (no causal mask):
    the encoder reads the whole sentence at once. Sub-modules: self_attn
    (MultiHeadAttention), norm1, ff (FeedForward D → dim_feedforward → D; torch's linear1 is
    ff.fc, its linear2 is ff.proj), norm2. Dropout `dropout` sits on the attention weights
    and on each sub-layer's output (§5.4).
    Differences from torch: Linear weights are [in, out] (the transpose of torch's), the
    Q, K, V projections are three Linear layers (torch fuses them into in_proj_weight).
    """

    def __init__(self, d_model, nhead, dim_feedforward=2048, dropout=0.1, activation="relu",
                 layer_norm_eps=1e-5, batch_first=True, norm_first=False, bias=True):
        super().__init__()
        _require_batch_first(type(self).__name__, batch_first)
        self.norm_first = norm_first
        self.self_attn = MultiHeadAttention(d_model, nhead, dropout=dropout, bias=bias)
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias)
        self.ff = FeedForward(d_model, dim_feedforward, activation=activation, dropout=dropout,
                              bias=bias)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias)

    def forward(self, src, src_mask=None, src_key_padding_mask=None, is_causal=False):
        """src [B, T_src, D] -> [B, T_src, D].

        src_mask: bool (True = blocked) or float (added) mask broadcasting to [T_src, T_src];
        src_key_padding_mask: bool [B, T_src], True at padding (no position reads a pad);
        is_causal: block later positions (not used by the 2017 encoder; here for torch's
        signature). Raises ValueError for masks of the wrong shape or dtype.
        """
        def self_attention(h):
            return self.self_attn(h, attn_mask=src_mask, key_padding_mask=src_key_padding_mask,
                                  is_causal=is_causal)

        x = sublayer(src, self.norm1, self_attention, self.norm_first)   # [B, T_src, D]
        return sublayer(x, self.norm2, self.ff, self.norm_first)         # [B, T_src, D]

    def extra_repr(self):
        return f"norm_first={self.norm_first}"


class TransformerDecoderLayer(Module):
    """tgt [B, T_tgt, D], memory [B, T_src, D] -> [B, T_tgt, D]: self-, cross-attention, FFN.

    The self-attention sees only earlier target positions (teacher forcing, notes 3.7); the
    cross-attention takes its queries from the decoder and its keys and values from
    `memory`, the encoder output, so it is the one place where the source reaches the
    decoder. Sub-modules: self_attn, norm1, multihead_attn (the cross-attention; torch's
    name), norm2, ff (FeedForward), norm3.
    Differences from torch: besides the weight layout (see TransformerEncoderLayer), the
    self-attention is causal by default (tgt_is_causal=True applies the mask; torch's
    tgt_is_causal is only a hint and the mask must come in tgt_mask).
    """

    def __init__(self, d_model, nhead, dim_feedforward=2048, dropout=0.1, activation="relu",
                 layer_norm_eps=1e-5, batch_first=True, norm_first=False, bias=True):
        super().__init__()
        _require_batch_first(type(self).__name__, batch_first)
        self.norm_first = norm_first
        self.self_attn = MultiHeadAttention(d_model, nhead, dropout=dropout, bias=bias)
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias)
        self.multihead_attn = MultiHeadAttention(d_model, nhead, dropout=dropout, bias=bias)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias)
        self.ff = FeedForward(d_model, dim_feedforward, activation=activation, dropout=dropout,
                              bias=bias)
        self.norm3 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias)

    def forward(self, tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,
                memory_key_padding_mask=None, tgt_is_causal=True, self_attn_cache=None,
                cross_attn_cache=None):
        """tgt [B, T_tgt, D], memory [B, T_src, D] -> [B, T_tgt, D].

        tgt_mask / memory_mask: extra bool or float masks for the self- / cross-attention
        scores ([T_tgt, T_tgt] / [T_tgt, T_src]); tgt_key_padding_mask: bool [B, T_tgt],
        memory_key_padding_mask: bool [B, T_src], True at padding (a padded source position
        gets zero cross-attention weight); tgt_is_causal: block later target positions.
        For greedy decoding one step at a time: self_attn_cache, an nn.KVCache of the target
        positions so far, and cross_attn_cache, an nn.KVCache that holds memory's keys and
        values after the first step (memory is projected once per source).
        """
        def self_attention(h):
            return self.self_attn(h, attn_mask=tgt_mask, key_padding_mask=tgt_key_padding_mask,
                                  is_causal=tgt_is_causal, kv_cache=self_attn_cache)

        def cross_attention(h):
            return self.multihead_attn(h, context=memory, attn_mask=memory_mask,
                                       key_padding_mask=memory_key_padding_mask,
                                       kv_cache=cross_attn_cache)

        x = sublayer(tgt, self.norm1, self_attention, self.norm_first)   # [B, T_tgt, D]
        x = sublayer(x, self.norm2, cross_attention, self.norm_first)    # [B, T_tgt, D]
        return sublayer(x, self.norm3, self.ff, self.norm_first)         # [B, T_tgt, D]

    def extra_repr(self):
        return f"norm_first={self.norm_first}"
