"""Grader of exercise 6, masked fill (notes 3.3, 3.8): the 3.4 scores under the causal mask,
then softmax gives the notes' A; broadcast masks, dtypes and untouched inputs against the
reference; backward blocks the gradient; inside causal attention against finite differences,
and a filled entry passes no gradient back (3.8)."""
import math

import numpy as np

import nn
from microtensor import Tensor

from .. import reference
from ..grading import (
    ExerciseFailure,
    Mistake,
    call,
    call_watching,
    check_gradients,
    compare,
    expect_close,
    inputs_rng,
    plugged,
    student_function,
)
from ..parts import op

MaskedFill = op("MaskedFill")  # the engine's op, wherever its file is

HINT = "forward: np.where(mask, value, x) (True = blocked); backward: np.where(mask, 0, g)"


def _inverted(x, mask, value):
    return np.where(mask, x, value).astype(x.dtype)


def _multiplied(x, mask, value):
    return x * ~np.asarray(mask)


def _boolean_index(x, mask, value):  # right for a mask of x's shape, not for a broadcast one
    z = x.copy()
    z[mask] = value
    return z


def _ellipsis_index(x, mask, value):  # right for a [T_q, T_k] mask, not a [B, 1, 1, T_k] one
    z = x.copy()
    z[..., mask] = value
    return z


def _backward_unchanged(g, mask):
    return g


def _backward_inverted(g, mask):
    return np.where(mask, g, 0).astype(g.dtype)


FORWARD_MISTAKES = [
    Mistake("inverted", "True in the mask means *blocked*: fill where mask is True, keep x "
            "where it is False", _inverted),
    Mistake("multiplied", "x ⊙ (not mask) writes 0 at a blocked score, and exp(0) = 1 is not "
            "weight 0: write `value` (−∞ for attention) there", _multiplied),
    Mistake("indexing the last axes", "z[..., mask] = value works for a [T_q, T_k] mask but "
            "not for a padding mask [B, 1, 1, T_k] over scores [B, H, T_q, T_k]: indexing needs "
            "the mask's exact shape, np.where(mask, value, x) broadcasts it", _ellipsis_index),
    Mistake("boolean index", "the mask *broadcasts* (one [T_q, T_k] mask for every batch and "
            "head), but z[mask] = value needs a mask of x's whole shape: np.where(mask, value, "
            "x) broadcasts", _boolean_index),
]
BACKWARD_MISTAKES = [
    Mistake("unchanged", "a filled entry is a constant (it no longer depends on x): its "
            "gradient is 0 where mask is True", _backward_unchanged),
    Mistake("inverted", "the gradient passes where the mask is False (visible) and is 0 where "
            "it is True (blocked)", _backward_inverted),
]

S_34 = np.array([[4.0, 3.0], [5.0, 3.0]]) / math.sqrt(2)
CAUSAL = np.array([[False, True], [False, False]])


def check_hand_example_causal_mask(student):
    """The 3.4 scores S = [[4, 3], [5, 3]]/√2 with M_01 = −∞: softmax then gives the notes'
    A ≈ [[1, 0], [.8044, .1956]] (3.3: the visible keys are renormalised)."""
    fn = student_function(student, "masked_fill")
    expected = np.array([[S_34[0, 0], -np.inf], S_34[1]])
    filled = compare(fn, (S_34, CAUSAL, -math.inf), expected, "S (masked)", hint=HINT,
                     mistakes=FORWARD_MISTAKES, context="the notes' 3.4 scores, causal mask")
    filled = np.asarray(filled)
    e = np.exp(filled - filled.max(-1, keepdims=True))
    expect_close(e / e.sum(-1, keepdims=True), [[1.0, 0.0], [0.8044, 0.1956]],
                 "A = softmax(S masked)", hint=HINT, atol=5e-5)


def check_broadcast_dtypes_and_inputs_untouched(student):
    """A [T, T] mask over scores [B, H, T, T]; a padding mask [B, 1, 1, T] (a model's:
    True at the padded keys of each sequence); float32, a finite value, a zero-size x; x and g
    are left as they were."""
    fill = student_function(student, "masked_fill")
    back = student_function(student, "masked_fill_backward")
    rng = inputs_rng(14)
    causal = nn.causal_mask(4, 4)
    padding = np.zeros((2, 1, 1, 4), dtype=bool)
    padding[0, ..., 3:] = True                          # sequence 0: its last key is padding
    padding[1, ..., 2:] = True                          # sequence 1: two padded keys
    for x, mask, what, value in (
            (rng.normal(size=(2, 3, 4, 4)), causal, "[4, 4] causal", -math.inf),
            (rng.normal(size=(2, 3, 4, 4)), padding, "[2, 1, 1, 4] padding", -math.inf),
            (rng.normal(size=(2, 4, 4)).astype(np.float32), causal, "[4, 4] causal", -1e4),
            (np.zeros((0, 4, 4)), causal, "[4, 4] causal", -math.inf)):
        context = f"x {list(x.shape)} {x.dtype}, mask {what}, value {value}"
        kept = x.copy()
        compare(fill, (x, mask, value), reference.masked_fill(x, mask, value), "z", hint=HINT,
                mistakes=FORWARD_MISTAKES, dtype=x.dtype, context=context)
        _, wrote_x = call_watching(fill, x, mask, value)
        g = rng.normal(size=x.shape).astype(x.dtype)
        compare(back, (g, mask), reference.masked_fill_backward(g, mask), "∂L/∂x", hint=HINT,
                mistakes=BACKWARD_MISTAKES, dtype=x.dtype, context=context)
        _, wrote_g = call_watching(back, g, mask)
        if 0 in wrote_x or 0 in wrote_g or not np.array_equal(x, kept):
            raise ExerciseFailure(f"your code changed its input x or g in place ({context}); "
                                  "work on a copy: the caller still needs them")


def check_gradcheck_in_causal_attention(student):
    """Your forward and backward inside the engine's MaskedFill, in causal attention
    [1, 1, 3, 2]: ∂L/∂Q, ∂L/∂K, ∂L/∂V against finite differences; then a filled entry is a
    constant (3.8): ∂L/∂s = 0 wherever the mask is True."""
    fill = student_function(student, "masked_fill")
    back = student_function(student, "masked_fill_backward")

    def forward(self, x):
        return np.asarray(fill(x, self.mask, self.value))

    def backward(self, g):
        return np.asarray(back(g, self.mask))

    rng = inputs_rng(15)
    q, k, v = (Tensor(rng.normal(size=(1, 1, 3, 2)), requires_grad=True) for _ in range(3))
    with plugged(MaskedFill, "forward", forward), plugged(MaskedFill, "backward", backward):
        check_gradients(lambda q, k, v: nn.scaled_dot_product_attention(
            q, k, v, is_causal=True)[0], [q, k, v], ["Q", "K", "V"], hint=HINT,
            context="causal attention, [1, 1, 3, 2]")
        s = Tensor(rng.normal(size=(3, 3)), requires_grad=True)
        z = call(lambda: s.masked_fill(nn.causal_mask(3, 3), -1e9), what="masked_fill")
        call(lambda: (z * rng.normal(size=(3, 3))).sum().backward(),
             what="backward through masked_fill")
    blocked = np.where(nn.causal_mask(3, 3), s.grad, 0.0)
    expect_close(blocked, np.zeros((3, 3)), "∂L/∂s at a blocked entry", hint=HINT)


CHECKS = [check_hand_example_causal_mask, check_broadcast_dtypes_and_inputs_untouched,
          check_gradcheck_in_causal_attention]
