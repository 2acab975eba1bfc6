"""Gradient utilities: clipping by the global norm (Pascanu et al. 2013)."""
import math

import numpy as np


def clip_grad_norm_(params, max_norm):
    """Scale all gradients together so that their joint L2 norm is at most `max_norm`.

    The norm is taken over every gradient at once, √(Σ‖g‖²), not per parameter, so the
    update keeps its direction. Returns the total norm before clipping (a float).
    Raises ValueError for a max_norm that is not a finite number >= 0.
    """
    if not (math.isfinite(max_norm) and max_norm >= 0):  # a negative one would flip the update
        raise ValueError(f"clip_grad_norm_: max_norm must be a finite number >= 0; got {max_norm}")
    grads = [p.grad for p in params if p.grad is not None]
    total = float(np.sqrt(sum(float(np.dot(g.reshape(-1), g.reshape(-1))) for g in grads)))
    scale = max_norm / (total + 1e-6)
    if scale < 1:
        for g in grads:
            g *= scale
    return total
