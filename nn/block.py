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


def residual(skip, branch):
    """skip + branch: ∂L/∂skip = g (the identity of I + ∂F/∂x), ∂L/∂branch = g. Its graph node
    gets the role "residual" (input 0 the skip path), so pictures tell the two edges apart."""
    out = skip + branch
    if out.grad_fn is not None:
        out.grad_fn.role = "residual"
    return out


def sublayer(x, norm, fn, norm_first, skip=None):
    """x + fn(norm(x)) (pre-norm) or norm(x + fn(x)) (post-norm), fn the sub-layer F (attention
    or the FFN) taking x [B, T, D] to [B, T_out, D], norm a LayerNorm; skip: x's rows that fn
    returns, [B, T_out, D] (x itself when T_out = T)."""
    skip = x if skip is None else skip
    if norm_first:
        return residual(skip, fn(norm(x)))
    return norm(residual(skip, fn(x)))


class TransformerBlock(Module):
    """x [B, T, D] -> [B, T, D]: causal self-attention, then the FFN, pre- or post-norm.

    ln_1, attn (MultiHeadAttention), ln_2, mlp (FeedForward, d_ff wide; GELU as GPT-2, where
    the 2017 paper and notes 3.6 use ReLU): nanoGPT's names, for its checkpoints. The stack's
    final LayerNorm belongs to the model. The maths is nn.TransformerEncoderLayer's with
    is_causal=True, whose names are torch.nn's.
    """

    def __init__(self, d_model, n_heads, d_ff, dropout=0.0, norm_first=True, activation="gelu",
                 bias=True):
        super().__init__()
        self.norm_first = norm_first
        self.ln_1 = LayerNorm(d_model, bias=bias)
        self.attn = MultiHeadAttention(d_model, n_heads, dropout=dropout, bias=bias)
        self.ln_2 = LayerNorm(d_model, bias=bias)
        self.mlp = FeedForward(d_model, d_ff, activation=activation, dropout=dropout, bias=bias)

    def forward(self, x, key_padding_mask=None, kv_cache=None, last_only=False):
        """x [B, T, D] -> [B, T, D]; key_padding_mask [B, T] True at padding; kv_cache an
        nn.KVCache (generation). last_only: the last row alone [B, 1, D], its query over
        every position (generation samples from it; the rows after attention are each their own)."""
        # last_only: still self-attention, the last row's query alone; its keys and values come
        # from all of h, so h goes in as `context` (with a cache, a prefill: the cache is empty,
        # and its cross branch projects and stores h's K, V as the self branch would)
        def attend(h):                                      # [B, T, D] -> [B, T or 1, D]
            return self.attn(h[:, -1:] if last_only else h, context=h if last_only else None,
                             key_padding_mask=key_padding_mask, is_causal=True,
                             kv_cache=kv_cache, causal_alignment="bottom_right")

        x = sublayer(x, self.ln_1, attend, self.norm_first, x[:, -1:] if last_only else x)
        return sublayer(x, self.ln_2, self.mlp, self.norm_first)  # [B, T or 1, D]
