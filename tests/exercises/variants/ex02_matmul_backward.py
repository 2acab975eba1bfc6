"""Exercise 2, another right answer: einsum over the batch axes."""
import numpy as np


def matmul_backward(a, b, g):
    return np.einsum("...ij,...kj->...ik", g, b), np.einsum("...ji,...jk->...ik", a, g)
