"""The Transformer block: attention and FFN sub-layers, each inside a residual connection with
LayerNorm (notes 3.6). `sublayer` holds the two orders, for this block and for the 2017
encoder and decoder layers (nn/transformer.py) alike:

    pre-norm (GPT-2, nanoGPT):       x = x + F(LN(x))
    post-norm (Vaswani et al. 2017): x = LN(x + F(x))
"""
from .attention import MultiHeadAttention
from .feedforward import FeedForward
from .layers import LayerNorm
from .module import Module
from .roles import named


def residual(skip, branch):
    """skip + branch: ∂L/∂skip = g (the identity of I + ∂F/∂x), ∂L/∂branch = g. Named
    "residual" (input 0 the skip path) for the pictures: nn/roles.py."""
    return named(skip + branch, "residual")


def sublayer(x, norm, fn, norm_first, skip=None):
    """x + fn(norm(x)) (pre-norm) or norm(x + fn(x)) (post-norm), fn the sub-layer F (attention
    or the FFN) taking x [B, T, D] to [B, T_out, D], norm a LayerNorm; skip: x's rows that fn
    returns, [B, T_out, D] (x itself when T_out = T)."""
    skip = x if skip is None else skip
    if norm_first:
        return residual(skip, fn(norm(x)))
    return norm(residual(skip, fn(x)))


class TransformerBlock(Module):
    """x [B, T, D] -> [B, T, D] ([B, 1, D] with last_only): causal self-attention, then the FFN,
    pre- or post-norm (nn.TransformerEncoderLayer's maths with is_causal=True, but dropout
    where nanoGPT has it: none after the activation). ln_1, attn, ln_2, mlp (d_ff wide; exact
    GELU as nanoGPT, where GPT-2 took its tanh form; ReLU in 2017 and 3.6): nanoGPT's block
    names (its checkpoints load through models/interop/names.py)."""

    def __init__(self, d_model, n_heads, d_ff, dropout=0.0, norm_first=True, activation="gelu",
                 bias=True):
        super().__init__()
        self.norm_first = norm_first
        self.ln_1 = LayerNorm(d_model, bias=bias)
        self.attn = MultiHeadAttention(d_model, n_heads, dropout=dropout, bias=bias)
        self.ln_2 = LayerNorm(d_model, bias=bias)
        self.mlp = FeedForward(d_model, d_ff, activation=activation, dropout=dropout, bias=bias)

    def forward(self, x, key_padding_mask=None, kv_cache=None, last_only=False):
        """x [B, T, D] -> [B, T, D]; key_padding_mask [B, T] True at padding; kv_cache:
        nn.KVCache. last_only (a first reading can take it as False): the last row alone,
        [B, 1, D], what generate's sliding window samples; a speed-up that training and the
        KV cache never use."""
        def self_attention(h):                              # h [B, T, D] -> [B, T or 1, D]
            query, context = h, None                        # causal self-attention over h
            if last_only:  # one query, the last row, over K, V from all T rows of h (what
                query, context = h[:, -1:], h  # follows works row by row); M blocks none
            return self.attn(query, context=context, key_padding_mask=key_padding_mask,
                             is_causal=True, kv_cache=kv_cache, causal_alignment="bottom_right")

        skip = x[:, -1:] if last_only else x                # [B, T or 1, D]: rows attention returns
        x = sublayer(x, self.ln_1, self_attention, self.norm_first, skip)
        return sublayer(x, self.ln_2, self.mlp, self.norm_first)  # [B, T or 1, D]
