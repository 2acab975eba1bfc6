"""Exercise 9 · notes 3.6 · the pre-norm Transformer block.

Two sublayers, each inside a residual connection y = x + F(·) (3.6: the derivative keeps an
identity term I + ∂F/∂x). Pre-norm (GPT-2, nanoGPT) normalizes the *input of the branch*, so
the residual path x → y passes no norm:
    x = x + Attn(LN₁(x))       causal self-attention
    x = x + FFN(LN₂(x))
(Post-norm, the 2017 paper's: x = LN₁(x + Attn(x)); x = LN₂(x + FFN(x)). Not this one.)

Shapes: x [B, T, D] (a microtensor Tensor) -> [B, T, D]. `block` is an nn.TransformerBlock:
use its sub-modules block.ln_1, block.attn, block.ln_2, block.mlp, each of which returns
one Tensor [B, T, D]; call the attention as block.attn(h, is_causal=True) (unlike
nn.scaled_dot_product_attention, it returns no weights).

Hint: keep the un-normalized x for the skip path: x + F(LN(x)), not LN(x) + F(LN(x)).
The FFN reads the output of the attention sublayer, not the block's input.

Reference (read it after): nn/block.py, `TransformerBlock.forward`.
"""


def pre_norm_block(block, x):
    """The pre-norm block's forward: x [B, T, D] -> [B, T, D], with block's sub-modules."""
    raise NotImplementedError("exercise 9: write pre_norm_block(block, x) in "
                              "exercises/ex09_pre_norm_block.py")
