"""Gradient utilities: clipping by the global norm (Pascanu et al. 2013)."""
import math
import numbers

import numpy as np

from microtensor import Tensor


def clip_grad_norm_(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False):
    """Scale all gradients together so that their joint norm is at most `max_norm` (as torch).

    parameters: one Tensor or an iterable of them (a generator too); those without a
    gradient are skipped. The norm is taken over every gradient at once, not per
    parameter, so the update keeps its direction: the `norm_type` norm of the per-tensor
    norms, each computed in float64, so float32 gradients near 1e19 do not overflow (torch
    takes the same norm of norms). norm_type is any real p, as torch.linalg.vector_norm's
    ord, or a string float() reads ("inf", "-inf", "2"), as torch's float(norm_type): 0
    counts the non-zero entries, ±inf takes the largest/smallest |g|. Every gradient
    is multiplied by min(1, max_norm / (total + 1e-6)); a non-finite total makes the
    gradients NaN (inf·0), as torch, unless `error_if_nonfinite`, which raises RuntimeError
    instead. Returns the total norm before clipping (a float).
    Raises ValueError for a max_norm that is not a number >= 0 (inf: measure only, as
    torch's idiom), TypeError for an entry that is not a Tensor.
    """
    if isinstance(max_norm, bool) or not isinstance(max_norm, numbers.Real) or not (
            max_norm >= 0):  # a negative one would flip the update; inf only measures, as torch
        raise ValueError(f"clip_grad_norm_: max_norm must be a number >= 0 (inf to measure "
                         f"only); got {max_norm!r}")
    if isinstance(norm_type, str):  # torch takes float(norm_type): "inf", "-inf", "2", "nan"
        try:
            norm_type = float(norm_type)
        except ValueError:
            raise ValueError(f"clip_grad_norm_: norm_type must be a number or inf; got "
                             f"{norm_type!r}") from None
    if isinstance(norm_type, bool) or not isinstance(norm_type, numbers.Real):
        raise ValueError(f"clip_grad_norm_: norm_type must be a number or inf; got {norm_type!r}")
    params = [parameters] if isinstance(parameters, Tensor) else list(parameters)
    for i, p in enumerate(params):
        if not isinstance(p, Tensor):
            raise TypeError(f"clip_grad_norm_: parameters must be Tensors; entry {i} is a "
                            f"{type(p).__name__}")
    grads = [p.grad for p in params if p.grad is not None]
    if not grads:
        return 0.0
    for g in grads:
        if g.dtype.kind != "f":
            raise TypeError(f"clip_grad_norm_: gradients must be floating-point; got {g.dtype}")
    total = _norm(np.array([_norm(g, norm_type) for g in grads]), norm_type)
    if error_if_nonfinite and not math.isfinite(total):
        raise RuntimeError(f"clip_grad_norm_: the total norm of the gradients is {total}; "
                           "pass error_if_nonfinite=False to clip anyway")
    scale = min(max_norm / (total + 1e-6), 1.0) if not math.isnan(total) else math.nan
    if scale != 1.0:  # torch multiplies by 1.0 too: skipping it changes no bit
        with np.errstate(invalid="ignore"):  # inf·0 is NaN on purpose (see above)
            for g in grads:
                g *= scale
    return total


def _norm(g, p):
    """‖g‖_p as torch.linalg.vector_norm, without overflow or underflow (float32 squares past
    3.4e38 would give inf). p = 0 counts the non-zeros and ±inf take max/min |g|: neither is
    homogeneous in g's scale, so only p > 0 is computed on g scaled by its largest |g|."""
    if p == 2:  # the common case, fast: one dot product in g's dtype when nothing overflows
        squares = np.vdot(g, g)
        if np.isfinite(squares) and squares > 1e-30:
            return math.sqrt(float(squares))
    g = np.abs(np.asarray(g).reshape(-1).astype(np.float64))
    if g.size == 0:
        return 0.0
    if p == 0:  # ‖g‖₀: how many entries are not 0 (NaN counts, as torch's g != 0)
        return float(np.count_nonzero(g))
    if p == math.inf or p == -math.inf:
        return float(g.max() if p > 0 else g.min())  # a NaN propagates through both
    if p < 0:  # (Σ|g|ᵖ)^(1/p): ruled by the smallest entries, 0 gives 0, inf adds 0
        with np.errstate(divide="ignore", over="ignore"):
            return float(np.sum(g ** p) ** (1 / p))
    s = g.max()
    if s == 0 or not np.isfinite(s):  # all zeros, or an inf or NaN: the norm is that
        return float(s)
    return float(s * np.sum((g / s) ** p) ** (1 / p))  # scaled by the largest: no overflow


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
