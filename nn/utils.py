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
    total = math.sqrt(sum(float(np.vdot(g, g)) for g in grads))  # vdot: g·g over all elements
    scale = max_norm / (total + 1e-6)
    if scale < 1:
        for g in grads:
            g *= scale
    return total


def grad_norms_by_module(module):
    """{top-level module path: ‖∂L/∂θ‖ over its parameters' gradients}, e.g. {"wte": 1.9,
    "blocks.0": 0.41, ..., "ln_f": 0.05}, in `named_parameters()` order.

    A list index stays with its list ("blocks.0.attn.q_proj.weight" counts for "blocks.0"),
    so each Transformer block gets one number. Parameters without a gradient are left out;
    a module none of whose parameters has one is absent.
    """
    squares = {}
    for name, p in module.named_parameters():
        if p.grad is None:
            continue
        parts = name.split(".")
        unit = ".".join(parts[:2]) if len(parts) > 2 and parts[1].isdigit() else parts[0]
        flat = p.grad.reshape(-1).astype(np.float64)
        squares[unit] = squares.get(unit, 0.0) + float(np.dot(flat, flat))
    return {unit: float(np.sqrt(total)) for unit, total in squares.items()}
