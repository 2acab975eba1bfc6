"""Exercise 3, another right answer: the explicit Jacobian diag(a) − a aᵀ of each row."""
import numpy as np


def softmax_backward(a, da, axis=-1):
    a_last, da_last = np.moveaxis(a, axis, -1), np.moveaxis(da, axis, -1)
    n = a_last.shape[-1]
    outer = a_last[..., :, None] * a_last[..., None, :]
    jacobian = a_last[..., :, None] * np.eye(n, dtype=a.dtype) - outer
    ds = np.einsum("...ij,...j->...i", jacobian, da_last)
    return np.moveaxis(ds, -1, axis)
