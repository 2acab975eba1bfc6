"""Grader of exercise 11, AdamW's step (Loshchilov & Hutter 2019; PyTorch's rule): the first
step moves each parameter by about lr·sign(g) (what bias correction is for), five steps with
weight decay, other betas and float32 against the reference optimizer, and a few hundred
steps minimizing a quadratic."""
import numpy as np

from .. import reference
from ..grading import (
    ExerciseFailure,
    Mistake,
    as_array,
    call,
    call_watching,
    compare,
    inputs_rng,
    student_function,
)

HINT = ("p ← p − lr·λ·p; m ← β₁m + (1 − β₁)g; v ← β₂v + (1 − β₂)g²; "
        "p ← p − lr·(m/(1 − β₁ᵗ)) / (√(v/(1 − β₂ᵗ)) + ε)")


def _adam(p, g, m, v, t, lr, betas, eps):
    b1, b2 = betas
    m = b1 * m + (1 - b1) * g
    v = b2 * v + (1 - b2) * g * g
    return m, v, lr * (m / (1 - b1 ** t)) / (np.sqrt(v / (1 - b2 ** t)) + eps)


def _no_bias_correction(p, g, m, v, t, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01):
    b1, b2 = betas
    p = p * (1 - lr * weight_decay)
    m = b1 * m + (1 - b1) * g
    v = b2 * v + (1 - b2) * g * g
    return p - lr * m / (np.sqrt(v) + eps), m, v


def _one_corrected(correct_m, correct_v):
    def step(p, g, m, v, t, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01):
        b1, b2 = betas
        p = p * (1 - lr * weight_decay)
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        m_hat = m / (1 - b1 ** t) if correct_m else m
        v_hat = v / (1 - b2 ** t) if correct_v else v
        return p - lr * m_hat / (np.sqrt(v_hat) + eps), m, v
    return step


def _l2(p, g, m, v, t, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01):
    m, v, step = _adam(p, g + weight_decay * p, m, v, t, lr, betas, eps)
    return p - step, m, v


def _decay_without_lr(p, g, m, v, t, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01):
    m, v, step = _adam(p, g, m, v, t, lr, betas, eps)
    return p * (1 - weight_decay) - step, m, v


def _decay_after(p, g, m, v, t, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01):
    m, v, step = _adam(p, g, m, v, t, lr, betas, eps)
    return (p - step) * (1 - lr * weight_decay), m, v


def _eps_inside(p, g, m, v, t, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01):
    b1, b2 = betas
    p = p * (1 - lr * weight_decay)
    m = b1 * m + (1 - b1) * g
    v = b2 * v + (1 - b2) * g * g
    return p - lr * (m / (1 - b1 ** t)) / np.sqrt(v / (1 - b2 ** t) + eps), m, v


def _eps_fixed(p, g, m, v, t, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01):
    return reference.adamw_step(p, g, m, v, t, lr, betas, 1e-8, weight_decay)


def _in_place(p, g, m, v, t, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01):
    new = reference.adamw_step(p, g, m, v, t, lr, betas, eps, weight_decay)
    for old, value in zip((p, m, v), new):
        old[...] = value
    return p, m, v


def _t_from_zero(p, g, m, v, t, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01):
    return reference.adamw_step(p, g, m, v, t + 1, lr, betas, eps, weight_decay)


MISTAKES = [
    Mistake("no bias correction", "divide m by (1 − β₁ᵗ) and v by (1 − β₂ᵗ): both start at 0, "
            "and v's deficit (1 − β₂ᵗ = 0.001 at t = 1, under the square root) outweighs m's, "
            "so without the correction the first step is ≈ 3.16× too large (lr·0.1/√0.001 "
            "with a constant gradient), ≈ 6.5× at t = 10", _no_bias_correction),
    Mistake("m not corrected", "m̂ = m / (1 − β₁ᵗ): you corrected v but not m, so the "
            "first step is (1 − β₁) = 0.1× too small at t = 1 (m starts at 0 and holds only "
            "(1 − β₁)·g); divide m by (1 − β₁ᵗ) as you did v by (1 − β₂ᵗ)",
            _one_corrected(False, True)),
    Mistake("v not corrected", "v̂ = v / (1 − β₂ᵗ): you corrected m but not v, so at t = 1 the "
            "step is √(1 − β₂) ≈ 0.032× too small (v holds only (1 − β₂)·g²); divide v by "
            "(1 − β₂ᵗ) as you did m by (1 − β₁ᵗ)", _one_corrected(True, False)),
    Mistake("L2", "AdamW decays the weight itself, p ← p − lr·λ·p; adding λp to the gradient "
            "is Adam with L2, which the moments rescale", _l2),
    Mistake("decay without lr", "the decay is multiplied by the learning rate: p ← p·(1 − lr·λ)",
            _decay_without_lr),
    Mistake("decay after the update", "decay p *first*, p ← p·(1 − lr·λ), then take the Adam "
            "step from the decayed p; decaying after the step also shrinks the step (by lr·λ, "
            "a small but real difference)", _decay_after),
    Mistake("eps inside", "ε goes outside the square root: √v̂ + ε", _eps_inside),
    Mistake("eps fixed", "use the `eps` you are given: a model may set it (1e-6, 1e-3), and "
            "√v̂ + ε changes with it", _eps_fixed),
    Mistake("in place", "return new arrays and leave the caller's p, g, m, v as they were: the "
            "optimizer's caller (and this grader) still holds them", _in_place),
    Mistake("t off by one", "t is the number of this step, 1 at the first: use β₁ᵗ as given",
            _t_from_zero),
]


def _pick(out, i):
    if not isinstance(out, (tuple, list)) or len(out) != 3:
        raise ExerciseFailure("adamw_step must return three arrays (p, m, v)")
    return out[i]


def check_first_step_moves_by_lr(student):
    """At t = 1, m̂ = g and v̂ = g², so (λ = 0) each parameter moves by lr·g/(|g| + ε) ≈
    lr·sign(g): here exactly [−0.1, 0.1, −0.1] up to ε."""
    fn = student_function(student, "adamw_step")
    p, g = np.array([1.0, 2.0, 3.0]), np.array([0.5, -4.0, 0.001])
    expected = p - 0.1 * g / (np.abs(g) + 1e-8)
    compare(fn, (p, g, np.zeros(3), np.zeros(3), 1, 0.1, (0.9, 0.999), 1e-8, 0.0), expected,
            "p", hint=HINT, mistakes=MISTAKES, pick=lambda out: _pick(out, 0),
            context="p = [1, 2, 3], g = [0.5, −4, 0.001], lr = 0.1, λ = 0")


IN_PLACE = next(m for m in MISTAKES if m.name == "in place")


def check_eps_dtype_and_inputs_untouched(student):
    """A model's settings: float32 p, g, m, v (the result stays float32), eps = 1e-3 (not the
    default) with gradients of 1e-3, where ε matters, step t = 3; p, g, m and v are left as
    they were."""
    fn = student_function(student, "adamw_step")
    rng = inputs_rng(35)
    p = rng.normal(size=(2, 3)).astype(np.float32)
    g, m = (rng.normal(size=(2, 3)).astype(np.float32) * 1e-3 for _ in range(2))
    v = (rng.normal(size=(2, 3)) ** 2 * 1e-6).astype(np.float32)  # √v̂ ≈ 0.02: ε = 1e-3 shows
    args = (p, g, m, v, 3, 0.01, (0.9, 0.999), 1e-3, 0.1)
    expected = reference.adamw_step(*args)
    context = "p, g, m, v [2, 3] float32, t = 3, lr 0.01, eps 1e-3, λ = 0.1"
    for i, name in enumerate(("p", "m", "v")):
        compare(fn, args, expected[i], name, hint=HINT, mistakes=MISTAKES,
                pick=lambda out, i=i: _pick(out, i), dtype=np.float32, atol=1e-6, rtol=1e-4,
                context=context)
    _, wrote = call_watching(fn, *args, context=context, hint=HINT)
    for i, name in enumerate("pgmv"):
        if i in wrote:
            raise ExerciseFailure(
                f"your code wrote into the caller's {name} (its argument {name} changed during "
                f"the call; expected it unchanged) ({context}). Hint: {IN_PLACE.hint}")


def check_five_steps_against_the_reference(student):
    """Five steps with random gradients: lr 0.01, betas (0.8, 0.95), λ = 0.1, p [3, 4];
    then float32 and a zero-size p."""
    fn = student_function(student, "adamw_step")
    rng = inputs_rng(33)
    for shape, dtype in (((3, 4), np.float64), ((5,), np.float32), ((0, 2), np.float64)):
        p = rng.normal(size=shape).astype(dtype)
        m, v = np.zeros_like(p), np.zeros_like(p)
        settings = (0.01, (0.8, 0.95), 1e-8, 0.1)
        for t in range(1, 6):
            g = rng.normal(size=shape).astype(dtype)
            expected = reference.adamw_step(p, g, m, v, t, *settings)
            context = f"step {t}, p {list(shape)} {np.dtype(dtype)}, lr 0.01, betas (0.8, 0.95)"
            # float64 is held to float64's precision: decaying after the step differs by
            # lr·λ·step ≈ 1e-5, under float32's tolerance where |p| is near 1
            atol, rtol = (1e-6, 1e-4) if dtype == np.float32 else (1e-10, 1e-8)
            for i, name in enumerate(("p", "m", "v")):
                compare(fn, (p, g, m, v, t, *settings), expected[i], name, hint=HINT,
                        mistakes=MISTAKES, pick=lambda out, i=i: _pick(out, i), atol=atol,
                        rtol=rtol, context=context)
            p, m, v = expected


def check_minimizes_a_quadratic(student):
    """300 steps on L = ½‖p − c‖² (g = p − c), lr 0.05, λ = 0: p ends within 0.05 of c."""
    fn = student_function(student, "adamw_step")
    c = np.array([1.0, -2.0, 0.5])
    p, m, v = np.zeros(3), np.zeros(3), np.zeros(3)
    for t in range(1, 301):
        out = call(fn, p, p - c, m, v, t, 0.05, (0.9, 0.999), 1e-8, 0.0,
                   context=f"step {t} on ½‖p − c‖², lr 0.05", hint=HINT)
        p, m, v = (as_array(_pick(out, i), "p, m, v") for i in range(3))
    if not np.all(np.abs(p - c) < 0.05):
        raise ExerciseFailure(f"after 300 steps p = {np.round(p, 3).tolist()}, expected near "
                              f"c = {c.tolist()}. Hint: {HINT}")


CHECKS = [check_first_step_moves_by_lr, check_eps_dtype_and_inputs_untouched,
          check_five_steps_against_the_reference,
          check_minimizes_a_quadratic]
