"""Exercise 9, another right answer: the two sublayers written as one helper."""


def pre_norm_block(block, x):
    def sub(x, norm, fn):
        return x + fn(norm(x))

    x = sub(x, block.ln_1, lambda h: block.attn(h, is_causal=True))
    return sub(x, block.ln_2, block.mlp)
