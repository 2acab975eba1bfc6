"""Grader of exercise 3, softmax backward (notes 3.2, 3.8): the 3.4 example's rows, the
notes' claims (each row of ds sums to 0; a blocked key gets no gradient), random shapes and
axes against the reference, then inside attention against finite differences."""
import numpy as np

import nn
from microtensor import Tensor

from .. import reference
from ..grading import (
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

Softmax = op("Softmax")  # the engine's op, wherever its file is

HINT = "ds = a ⊙ (da − Σ a ⊙ da), the Σ along `axis` with keepdims=True (one number per row)"


def _no_subtraction(a, da, axis=-1):
    return a * da


def _unweighted(a, da, axis=-1):
    return a * (da - da.sum(axis=axis, keepdims=True))


def _whole_sum(a, da, axis=-1):
    return a * (da - (a * da).sum())


def _no_keepdims(a, da, axis=-1):
    return a * (da - (a * da).sum(axis=axis))


def _last_axis(a, da, axis=-1):  # `axis` ignored
    return a * (da - (a * da).sum(axis=-1, keepdims=True))


def _diagonal(a, da, axis=-1):
    return a * (1 - a) * da


MISTAKES = [
    Mistake("no subtraction", "a ⊙ da is only the diagonal δ_ij part of ∂a_i/∂s_j = "
            "a_i(δ_ij − a_j): subtract the row's Σ a ⊙ da before multiplying by a",
            _no_subtraction),
    Mistake("unweighted", "the subtracted sum is weighted by a: Σ a ⊙ da, not Σ da",
            _unweighted),
    Mistake("whole sum", "sum along `axis` only (keepdims=True), one number per row, not over "
            "the whole array", _whole_sum),
    Mistake("no keepdims", "sum with keepdims=True: without it the row sums, shape [N], "
            "broadcast along the last axis, so row i subtracts the sums of other rows",
            _no_keepdims),
    Mistake("axis ignored", "sum along the `axis` you are given (the softmax's axis, which "
            "need not be the last), not always along −1", _last_axis),
    Mistake("diagonal", "a(1 − a) is only the diagonal of the Jacobian; every a_j of the row "
            "feeds a_i too: ds = a ⊙ (da − Σ a ⊙ da)", _diagonal),
]


def _softmax(s, axis=-1):
    e = np.exp(s - s.max(axis=axis, keepdims=True, initial=-np.inf))
    return e / e.sum(axis=axis, keepdims=True)


def check_hand_example_rows(student):
    """The 3.4 example: S = QKᵀ/√2 = [[4, 3], [5, 3]]/√2, A = softmax(S); with Z = AV and
    G = [[1, 0], [0.5, −1]], da = GVᵀ."""
    fn = student_function(student, "softmax_backward")
    a = _softmax(np.array([[4.0, 3.0], [5.0, 3.0]]) / np.sqrt(2))
    da = np.array([[1.0, 0.0], [0.5, -1.0]]) @ np.array([[2.0, -1.0], [1.0, 0.0]]).T
    # by hand, 2 keys: ds_0 = a_0 a_1 (da_0 − da_1), ds_1 = −ds_0
    ds0 = a[:, 0] * a[:, 1] * (da[:, 0] - da[:, 1])
    compare(fn, (a, da, -1), np.stack([ds0, -ds0], axis=1), "∂L/∂s", hint=HINT,
            mistakes=MISTAKES, context="the notes' 3.4 A, da = GVᵀ")


def check_rows_sum_to_zero_and_blocked_keys_get_none(student):
    """Notes 3.2: adding a constant to a row of s changes no a, so each row of ds sums to 0.
    Notes 3.8: a blocked key (a = 0) gets ds = 0; a row with every key blocked gives zeros."""
    fn = student_function(student, "softmax_backward")
    rng = inputs_rng(5)
    s = rng.normal(size=(3, 5))
    s[0, 3:] = -np.inf                                   # two blocked keys in row 0
    a = _softmax(np.where(np.isinf(s), -1e300, s))
    a[0, 3:] = 0.0
    a[2] = 0.0                                           # row 2: every key blocked
    da = rng.normal(size=(3, 5))
    ds = compare(fn, (a, da, -1), reference.softmax_backward(a, da), "∂L/∂s", hint=HINT,
                 mistakes=MISTAKES, context="rows with blocked keys (a = 0) and an all-blocked row")
    expect_close(np.asarray(ds).sum(axis=-1), np.zeros(3), "Σ_j ∂L/∂s_j (each row)", hint=HINT,
                 atol=1e-9)


def check_shapes_axes_and_dtypes(student):
    """[B, H, T_q, T_k] along the keys, along axis 0, float32, zero-size rows and keys."""
    fn = student_function(student, "softmax_backward")
    rng = inputs_rng(6)
    for shape, axis in (((2, 3, 4, 5), -1), ((4, 3), 0), ((2, 5), 1), ((0, 5), -1), ((3, 0), -1)):
        for dtype in (np.float64, np.float32):
            a = _softmax(rng.normal(size=shape), axis).astype(dtype)
            da = rng.normal(size=shape).astype(dtype)
            compare(fn, (a, da, axis), reference.softmax_backward(a, da, axis), "∂L/∂s",
                    hint=HINT, mistakes=MISTAKES, dtype=dtype, atol=1e-5,
                    context=f"{shape_text(('a', a))}, axis={axis}, {np.dtype(dtype)}")


def check_gradcheck_in_causal_attention(student):
    """Your backward inside the engine's Softmax, in causal attention [1, 2, 3, 2]:
    ∂L/∂Q, ∂L/∂K, ∂L/∂V against finite differences."""
    fn = student_function(student, "softmax_backward")

    def backward(self, da):
        return fn(self.saved["a"], da, self.axis)

    rng = inputs_rng(7)
    q, k, v = (Tensor(rng.normal(size=(1, 2, 3, 2)), requires_grad=True) for _ in range(3))
    with plugged(Softmax, "backward", backward):
        check_gradients(lambda q, k, v: nn.scaled_dot_product_attention(
            q, k, v, is_causal=True)[0], [q, k, v], ["Q", "K", "V"], hint=HINT,
            context="causal attention, [1, 2, 3, 2]")


CHECKS = [check_hand_example_rows, check_rows_sum_to_zero_and_blocked_keys_get_none,
          check_shapes_axes_and_dtypes, check_gradcheck_in_causal_attention]
