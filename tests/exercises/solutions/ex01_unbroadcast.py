"""Exercise 1 · notes 3.1 and 3.8 · un-broadcasting a gradient.

Where it is used: a bias b [d_k] added to X W_Q [T, d_k] is copied to every row (numpy
broadcasting), and so is any tensor whose shape numpy stretches to the other operand's. The
backward pass receives G = ∂L/∂Y in the *output's* shape and must hand back ∂L/∂b in b's shape.

Formula: every copy of b contributed to L, so ∂L/∂b is the sum of G over the copies:
    ∂L/∂b = Σ G over the axes that broadcasting added (leading axes) or stretched (size 1 in b).

Shapes: grad [..., *] (the output's shape) -> `shape` (the input's shape), e.g.
    [B, T, D] -> [D]       sum over axes 0 and 1
    [B, T, D] -> [T, 1]    sum over axis 0, and over axis 2 keeping it as size 1
    [B, T, D] -> [B, T, D] unchanged;  [3, 4] -> ()  the sum of everything.

Hint: first sum away the extra leading axes (grad.ndim − len(shape) of them), then, for each axis
where `shape` has 1 and grad does not, sum with keepdims=True. np.sum, never np.mean: each copy
adds its whole gradient. A zero-size axis sums to 0, which is right.

Reference (read it after): microtensor/autograd.py, `unbroadcast`; the engine calls it after
every op's backward.
"""
import numpy as np  # noqa: F401  (you will need it)


def unbroadcast(grad, shape):
    """Sum `grad` (numpy array) back to `shape` (tuple of ints); returns an array of that shape."""
    while grad.ndim > len(shape):
        grad = grad.sum(axis=0)
    for axis, n in enumerate(shape):
        if n == 1:
            grad = grad.sum(axis=axis, keepdims=True)
    return grad
