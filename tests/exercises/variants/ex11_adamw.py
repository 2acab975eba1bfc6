"""Exercise 11, another right answer: Kingma & Ba's folded form, the bias corrections moved
into the step size and ε scaled to match (PyTorch's arithmetic, rearranged)."""
import math

import numpy as np


def adamw_step(p, g, m, v, t, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01):
    b1, b2 = betas
    p = p * (1 - lr * weight_decay)
    m = b1 * m + (1 - b1) * g
    v = b2 * v + (1 - b2) * g * g
    c1, c2 = 1 - b1 ** t, math.sqrt(1 - b2 ** t)
    step = lr * c2 / c1
    return p - step * m / (np.sqrt(v) + eps * c2), m, v
