"""Grader of exercise 4, layer norm backward (notes 3.6): random rows against the reference
(all three gradients, float32, no rows), the claim that each row of ∂L/∂x sums to 0, then the
student's backward inside the engine's LayerNorm against finite differences."""
import numpy as np

import microtensor.functional as F
from microtensor import Tensor

from .. import reference
from ..grading import (
    ExerciseFailure,
    Mistake,
    check_gradients,
    compare,
    expect_close,
    inputs_rng,
    plugged,
    shape_text,
    student_function,
)
from ..parts import op

LayerNorm = op("LayerNorm")  # the engine's op, wherever its file is

HINT = ("with ĝ = g ⊙ w: ∂L/∂x = r·(ĝ − mean(ĝ) − x̂ ⊙ mean(ĝ ⊙ x̂)), means over the last axis "
        "with keepdims=True; "
        "∂L/∂w = Σ g ⊙ x̂ and ∂L/∂b = Σ g over every leading axis")
NAMES = ("∂L/∂x", "∂L/∂w", "∂L/∂b")


def _rows(a):
    return a.reshape(-1, a.shape[-1])


def _right_wb(g, xhat):
    return _rows(g * xhat).sum(axis=0), _rows(g).sum(axis=0)


def _no_mean(g, xhat, rstd, weight):
    gh = g * weight
    return (rstd * (gh - xhat * (gh * xhat).mean(-1, keepdims=True)), *_right_wb(g, xhat))


def _no_xhat_term(g, xhat, rstd, weight):
    gh = g * weight
    return (rstd * (gh - gh.mean(-1, keepdims=True)), *_right_wb(g, xhat))


def _no_rstd(g, xhat, rstd, weight):
    gh = g * weight
    dx = gh - gh.mean(-1, keepdims=True) - xhat * (gh * xhat).mean(-1, keepdims=True)
    return (dx, *_right_wb(g, xhat))


def _g_not_ghat(g, xhat, rstd, weight):
    dx = rstd * (g - g.mean(-1, keepdims=True) - xhat * (g * xhat).mean(-1, keepdims=True))
    return (dx, *_right_wb(g, xhat))


def _no_keepdims(g, xhat, rstd, weight):  # mean(ĝ) of shape [...] against [..., D]
    gh = g * weight
    dx = rstd * (gh - gh.mean(-1) - xhat * (gh * xhat).mean(-1, keepdims=True))
    return (dx, *_right_wb(g, xhat))


def _wb_not_summed(g, xhat, rstd, weight):
    return reference.layer_norm_backward(g, xhat, rstd, weight)[0], g * xhat, g


def _first_axis_only(g, xhat, rstd, weight):
    return reference.layer_norm_backward(g, xhat, rstd, weight)[0], (g * xhat).sum(0), g.sum(0)


MISTAKES = [
    Mistake("no mean term", "moving one x shifts the row's mean μ: subtract mean(ĝ) "
            "(the −mean(ĝ) term)", _no_mean),
    Mistake("no x̂ term", "moving one x also changes σ: subtract x̂ ⊙ mean(ĝ ⊙ x̂)",
            _no_xhat_term),
    Mistake("no r", "x̂ = (x − μ)·r, so the chain rule multiplies by r = rstd", _no_rstd),
    Mistake("no keepdims", "take the row means with keepdims=True ([..., 1]), so that they "
            "broadcast along the row; mean(-1) alone has shape [...] and lines up with the "
            "wrong axis", _no_keepdims),
    Mistake("g, not ĝ", "y = x̂ ⊙ w: the gradient reaching x̂ is ĝ = g ⊙ w, not g", _g_not_ghat),
    Mistake("not summed", "w and b are shared by every row: sum g ⊙ x̂ and g over all the "
            "leading axes, to shape [D]", _wb_not_summed),
    Mistake("axis 0 only", "sum over *every* leading axis ([B, T, D] -> [D]), not only axis 0: "
            "e.g. (g * xhat).reshape(-1, D).sum(axis=0)", _first_axis_only),
]


def _pick(out, i):
    if not isinstance(out, (tuple, list)) or len(out) != 3:
        raise ExerciseFailure("layer_norm_backward must return three arrays "
                              "(∂L/∂x, ∂L/∂w, ∂L/∂b)")
    return out[i]


def _inputs(shape, dtype, seed):
    rng = inputs_rng(seed)
    x = rng.normal(size=shape) * 2 + 1
    mu = x.mean(-1, keepdims=True)
    rstd = 1 / np.sqrt(((x - mu) ** 2).mean(-1, keepdims=True) + 1e-5)
    weight = rng.uniform(0.5, 1.5, size=shape[-1:])
    g = rng.normal(size=shape)
    return tuple(a.astype(dtype) for a in (g, (x - mu) * rstd, rstd, weight))


def check_rows_against_the_reference(student):
    """[B, T, D] and [N, D], float64 and float32, and no rows at all ([0, D])."""
    fn = student_function(student, "layer_norm_backward")
    for seed, (shape, dtype) in enumerate([((2, 3, 5), np.float64), ((4, 6), np.float32),
                                           ((0, 4), np.float64)]):
        args = _inputs(shape, dtype, seed)
        expected = reference.layer_norm_backward(*args)
        for i, name in enumerate(NAMES):
            compare(fn, args, expected[i], name, hint=HINT, mistakes=MISTAKES,
                    pick=lambda out, i=i: _pick(out, i), dtype=dtype, atol=1e-5,
                    context=f"{shape_text(('x', args[1]))}, {np.dtype(dtype)}")


def check_each_row_of_dx_sums_to_zero(student):
    """Adding a constant to a row of x leaves y unchanged (the mean is subtracted), so Σ_j
    ∂L/∂x_j = 0 in every row."""
    fn = student_function(student, "layer_norm_backward")
    args = _inputs((3, 6), np.float64, 9)
    dx = compare(fn, args, reference.layer_norm_backward(*args)[0], "∂L/∂x", hint=HINT,
                 mistakes=MISTAKES, pick=lambda out: _pick(out, 0), context="x [3, 6]")[0]
    expect_close(np.asarray(dx).sum(-1), np.zeros(3), "Σ_j ∂L/∂x_j (each row)", hint=HINT,
                 atol=1e-9, context="x [3, 6]")


def check_gradcheck_in_the_engine(student):
    """Your backward inside the engine's LayerNorm: y = LN(x) ⊙ w + b on [2, 3, 4];
    ∂L/∂x, ∂L/∂w, ∂L/∂b against finite differences."""
    fn = student_function(student, "layer_norm_backward")
    original = LayerNorm.backward

    def backward(self, g):
        saved = self.saved
        rstd = saved.get("rstd")
        if rstd is None:
            return original(self, g)
        return tuple(fn(g, saved["xhat"], rstd, saved["weight"]))

    rng = inputs_rng(10)
    x = Tensor(rng.normal(size=(2, 3, 4)), requires_grad=True)
    w = Tensor(rng.uniform(0.5, 1.5, size=4), requires_grad=True)
    b = Tensor(rng.normal(size=4), requires_grad=True)
    with plugged(LayerNorm, "backward", backward):
        check_gradients(lambda x, w, b: F.layer_norm(x, 4, w, b), [x, w, b], ["x", "w", "b"],
                        hint=HINT, context="LN over the last axis of [2, 3, 4]")


CHECKS = [check_rows_against_the_reference, check_each_row_of_dx_sums_to_zero,
          check_gradcheck_in_the_engine]
