"""Exercise 1 · notes 3.6 and 3.8 · un-broadcasting a gradient.

Where it is used: the FFN's bias b₁ [d_ff] (3.6: W₁x + b₁) is added to every position of
X W₁ [B, T, d_ff], copied along B and T by numpy broadcasting; so is any tensor whose shape numpy
stretches to the other operand's. The backward pass (3.8) receives G = ∂L/∂Y in the *output's*
shape and must hand back ∂L/∂b in b's shape.

Formula: every copy of b contributed to L, so ∂L/∂b is the sum of G over the copies:
    ∂L/∂b = Σ G over the axes that broadcasting added (leading axes) or stretched (size 1 in b).

Shapes: grad [..., *] (the output's shape) -> `shape` (the input's shape), grad's dtype, e.g.
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
    raise NotImplementedError("exercise 1: write unbroadcast(grad, shape) in "
                              "exercises/ex01_unbroadcast.py")
