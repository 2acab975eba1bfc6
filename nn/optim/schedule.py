"""Learning-rate schedule: linear warmup, then cosine decay to a floor.

As nanoGPT trains; the cosine is Loshchilov & Hutter 2017 (SGDR), without restarts.
"""
import math


def warmup_cosine_lr(it, lr, min_lr, warmup_iters, decay_iters):
    """The learning rate for iteration `it` (0-based).

    Rises linearly to `lr` over `warmup_iters`, falls along half a cosine to `min_lr` at
    `decay_iters`, then stays at `min_lr`.
    """
    if it < warmup_iters:
        return lr * (it + 1) / (warmup_iters + 1)
    if it >= decay_iters:
        return min_lr
    progress = (it - warmup_iters) / max(1, decay_iters - warmup_iters)
    return min_lr + 0.5 * (1 + math.cos(math.pi * progress)) * (lr - min_lr)
