"""Exercise 4 · notes 3.6 · the backward pass of layer normalization.

Notes 3.6 places the norm in the block (pre-norm y = x + F(LN(x))) and leaves its derivation to
chapter 04; the formula you need is below.

Forward (given), over the last axis of x [..., D] (one row per position):
    μ = mean(x),  σ² = mean((x − μ)²)  (biased: divide by D),  r = 1/√(σ² + ε),
    x̂ = (x − μ)·r,   y = x̂ ⊙ w + b.

Backward, with g = ∂L/∂y and ĝ = g ⊙ w, means over the row (the last axis, keepdims=True):
    ∂L/∂x = r · (ĝ − mean(ĝ) − x̂ ⊙ mean(ĝ ⊙ x̂))
    ∂L/∂w = Σ g ⊙ x̂        ∂L/∂b = Σ g        (Σ over every row: all leading axes)

Shapes: g, xhat [..., D]; rstd [..., 1] (r per row, kept as a column); weight [D]
-> (∂L/∂x [..., D], ∂L/∂w [D], ∂L/∂b [D]), the inputs' dtype (float32 stays float32).

Hint: μ and σ depend on every x of the row, so moving one x also shifts the mean (the
−mean(ĝ) term) and rescales the spread (the −x̂·mean(ĝx̂) term). Forget the mean term and the
rows of ∂L/∂x no longer sum to 0; forget the x̂ term and they still do (each row of x̂ sums to
0), but the values are wrong: the row sums catch one mistake, not both. w and b are shared by
all rows: sum their gradient over all leading axes (reshape to [-1, D] first), as exercise 1
does.

Reference (read it after): microtensor/ops/layer_norm.py, `LayerNorm.backward`.
"""
import numpy as np


def layer_norm_forward(x, weight, bias, eps=1e-5):
    """The forward, given: returns (y, xhat, rstd) for x [..., D], weight and bias [D]."""
    mu = x.mean(axis=-1, keepdims=True)
    rstd = 1 / np.sqrt(((x - mu) ** 2).mean(axis=-1, keepdims=True) + eps)
    xhat = (x - mu) * rstd
    return xhat * weight + bias, xhat, rstd


def layer_norm_backward(g, xhat, rstd, weight):
    """(∂L/∂x, ∂L/∂w, ∂L/∂b) from g = ∂L/∂y and what the forward kept (numpy arrays)."""
    raise NotImplementedError("exercise 4: write layer_norm_backward(g, xhat, rstd, weight) in "
                              "exercises/ex04_layer_norm_backward.py")
