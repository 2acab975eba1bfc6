"""The decoder-only Transformer block: attention and FFN sublayers (notes 3.6).

Causal self-attention and a feed-forward network, each inside a residual connection with
LayerNorm. One sub-layer function, `sublayer`, holds the two orders, for this block and for
the 2017 encoder and decoder layers (nn/transformer.py) alike:

Pre-norm (GPT-2, nanoGPT):       x = x + F(LN(x))
Post-norm (Vaswani et al. 2017): x = LN(x + F(x))
"""
from .attention import MultiHeadAttention
from .feedforward import FeedForward
from .layers import LayerNorm
from .module import Module


def residual(skip, branch):
    """skip + branch, a residual connection: input 0 is the skip path, input 1 the branch F.

    ∂L/∂skip = g (the identity term of I + ∂F/∂x), ∂L/∂branch = g (then on through F).
    The add's graph node gets the role "residual", so pictures can tell the two edges apart.
    """
    out = skip + branch
    if out.grad_fn is not None:
        out.grad_fn.role = "residual"
    return out


def sublayer(x, norm, fn, norm_first):
    """One residual sub-layer: x + fn(norm(x)) (pre-norm) or norm(x + fn(x)) (post-norm).

    x [B, T, D]; fn a function [B, T, D] -> [B, T, D] (attention or the FFN); norm a LayerNorm.
    """
    if norm_first:
        return residual(x, fn(norm(x)))
    return norm(residual(x, fn(x)))


class TransformerBlock(Module):
    """x [B, T, D] -> [B, T, D]: causal self-attention, then the FFN (pre- or post-norm).

    `norm_first=True` is pre-norm, False the 2017 post-norm. Sub-modules, named as nanoGPT's:
    ln_1, attn (MultiHeadAttention), ln_2, mlp (FeedForward, d_ff wide; GELU by default, as
    GPT-2, where the 2017 paper and notes 3.6 use ReLU). The final LayerNorm of the stack
    (notes 3.6) belongs to the model, not the block. `forward` also takes a
    `key_padding_mask` [B, T] (True = padding) and a `kv_cache` (nn.KVCache) for generation,
    both handed to the attention.

    The maths is nn.TransformerEncoderLayer's with is_causal=True (both are two `sublayer`s);
    the names differ because each class keeps its reference's: nanoGPT's and GPT-2's here
    (checkpoints, `focus="blocks.0.attn"`, export without renaming), torch.nn's there.
    """

    def __init__(self, d_model, n_heads, d_ff, dropout=0.0, norm_first=True, activation="gelu",
                 bias=True):
        super().__init__()
        self.norm_first = norm_first
        self.ln_1 = LayerNorm(d_model, bias=bias)
        self.attn = MultiHeadAttention(d_model, n_heads, dropout=dropout, bias=bias)
        self.ln_2 = LayerNorm(d_model, bias=bias)
        self.mlp = FeedForward(d_model, d_ff, activation=activation, dropout=dropout, bias=bias)

    def forward(self, x, key_padding_mask=None, kv_cache=None):
        def attend(h):                                      # [B, T, D] -> [B, T, D]
            return self.attn(h, key_padding_mask=key_padding_mask, is_causal=True,
                             kv_cache=kv_cache)

        x = sublayer(x, self.ln_1, attend, self.norm_first)     # [B, T, D]
        return sublayer(x, self.ln_2, self.mlp, self.norm_first)  # [B, T, D]

    def extra_repr(self):
        return f"norm_first={self.norm_first}"
