"""Exercise 6, another right answer: boolean indexing on the mask broadcast to x's shape."""
import numpy as np


def masked_fill(x, mask, value):
    z = x.copy()
    z[np.broadcast_to(mask, x.shape)] = value
    return z


def masked_fill_backward(g, mask):
    out = g.copy()
    out[np.broadcast_to(mask, g.shape)] = 0
    return out
