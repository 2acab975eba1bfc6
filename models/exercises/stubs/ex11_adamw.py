"""Exercise 11 · training (after chapter 3) · one step of AdamW.

The optimizer that `microtensor train` uses (Loshchilov & Hutter 2019, PyTorch's rule). At
step t = 1, 2, … with gradient g, learning rate lr, betas (β₁, β₂), ε and weight decay λ:
    p ← p − lr·λ·p                          decoupled weight decay (the "W"), first
    m ← β₁m + (1 − β₁)g                      moving average of g
    v ← β₂v + (1 − β₂)g²                     moving average of g²
    m̂ = m / (1 − β₁ᵗ),   v̂ = v / (1 − β₂ᵗ)   bias correction: m and v start at 0
    p ← p − lr · m̂ / (√v̂ + ε)

Shapes: p, g, m, v numpy arrays of one shape (float); t the step number, 1 at the first step
-> (new p, new m, new v), the same shapes and dtype.

Hint: both moments start at 0, so both are too small at first: m = 0.1·g and v = 0.001·g² at
t = 1. Without the bias correction the first step is lr·0.1/√0.001 ≈ 3.16·lr, about 3× too
*large* (v's deficit, under the square root, outweighs m's), and with a constant gradient still
≈ 6.5× too large at t = 10 (the most, 6.57×, at t = 12). With it, the first step moves every
parameter by about lr·sign(g). The decay multiplies p by (1 − lr·λ): it is not added to g (that
would be Adam with L2, which the moments rescale). ε goes outside the square root, and it is
the `eps` you are given. Return new arrays in p's dtype (float32 stays float32); leave the
caller's p, g, m, v as they were (no `p -= ...`, no `m *= ...`).

Reference (read it after): nn/optim/adamw.py, `AdamW.step`.
"""
import numpy as np  # noqa: F401  (you will need it)


def adamw_step(p, g, m, v, t, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01):
    """One AdamW step at step number t (1-based); returns (p, m, v), new arrays."""
    raise NotImplementedError("exercise 11: write adamw_step(p, g, m, v, t, ...) in "
                              "exercises/ex11_adamw.py")
