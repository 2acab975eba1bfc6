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

Hint: without the bias correction the first steps are ~10× too small (m = 0.1·g at t = 1); with
it, the first step moves every parameter by about lr·sign(g). The decay multiplies p by
(1 − lr·λ): it is not added to g (that would be Adam with L2, which the moments rescale).
ε goes outside the square root.

Reference (read it after): nn/optim/adamw.py, `AdamW.step`.
"""
import numpy as np  # noqa: F401  (you will need it)


def adamw_step(p, g, m, v, t, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01):
    """One AdamW step at step number t (1-based); returns (p, m, v), new arrays."""
    raise NotImplementedError("exercise 11: write adamw_step(p, g, m, v, t, ...) in "
                              "exercises/ex11_adamw.py")
