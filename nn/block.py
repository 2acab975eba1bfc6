"""The decoder-only Transformer block: attention and FFN sublayers (notes 3.6).

Causal self-attention and a feed-forward network, each inside a residual connection with
LayerNorm.

Pre-norm (GPT-2, nanoGPT):    x = x + Attn(LN₁(x));   x = x + FFN(LN₂(x))
Post-norm (Vaswani et al. 2017): x = LN₁(x + Attn(x));   x = LN₂(x + FFN(x))
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


class TransformerBlock(Module):
    """x [B, T, D] -> [B, T, D]: causal self-attention, then the FFN (pre- or post-norm).

    `norm_first=True` is pre-norm, False the 2017 post-norm. Sub-modules, named as nanoGPT's:
    ln_1, attn (MultiHeadAttention), ln_2, mlp (FeedForward, d_ff wide; GELU by default, as
    GPT-2, where the 2017 paper and notes 3.6 use ReLU). The final LayerNorm of the stack
    (notes 3.6) belongs to the model, not the block. `forward` also takes a
    `key_padding_mask` [B, T] (True = padding) and a `kv_cache` (nn.KVCache) for generation,
    both handed to the attention, and `last_only`: return the last position alone [B, 1, D]
    (attention still reads every position's keys and values; the rest of the block works
    row by row, so the other rows would only be thrown away).
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
        def attend(h):
            return self.attn(h, key_padding_mask=key_padding_mask, is_causal=True,
                             kv_cache=kv_cache, last_only=last_only)

        skip = x[:, -1:] if last_only else x                # the rows the block returns
        if self.norm_first:
            x = residual(skip, attend(self.ln_1(x)))
            return residual(x, self.mlp(self.ln_2(x)))
        x = self.ln_1(residual(skip, attend(x)))
        return self.ln_2(residual(x, self.mlp(x)))

    def extra_repr(self):
        return f"norm_first={self.norm_first}"
