"""Issue 33: a helper of the student's own named `sublayer`, and `isinstance(block,
nn.TransformerBlock)` (refused before, by name, as the project's pieces)."""
import nn


def sublayer(x, norm, fn):
    return x + fn(norm(x))


def pre_norm_block(block, x):
    if not isinstance(block, nn.TransformerBlock):
        raise TypeError(f"expected a TransformerBlock, got {type(block).__name__}")
    x = sublayer(x, block.ln_1, lambda h: block.attn(h, is_causal=True))
    return sublayer(x, block.ln_2, block.mlp)
