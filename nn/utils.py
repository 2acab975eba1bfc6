"""Gradient utilities: clipping by the global norm (Pascanu et al. 2013)."""
import numpy as np


def clip_grad_norm_(params, max_norm):
    """Scale all gradients together so that their joint L2 norm is at most `max_norm`.

    The norm is taken over every gradient at once, √(Σ‖g‖²), not per parameter, so the
    update keeps its direction. Returns the total norm before clipping (a float).
    """
    grads = [p.grad for p in params if p.grad is not None]
    total = float(np.sqrt(sum(float(np.dot(g.reshape(-1), g.reshape(-1))) for g in grads)))
    scale = max_norm / (total + 1e-6)
    if scale < 1:
        for g in grads:
            g *= scale
    return total
