"""Exercise 1, another right answer: a loop that sums one axis at a time."""
import numpy as np


def unbroadcast(grad, shape):
    while grad.ndim > len(shape):
        grad = np.add.reduce(grad, axis=0)
    for axis, size in enumerate(shape):
        if size == 1 and grad.shape[axis] != 1:
            grad = np.add.reduce(grad, axis=axis, keepdims=True)
    return grad
