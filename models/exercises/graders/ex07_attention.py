"""Grader of exercise 7, scaled dot-product attention forward (notes 3.1–3.4): the notes' hand
example with and without the causal mask and its [10, 10, 10] experiment, the notes' claims
(rows of A sum to 1, blocked keys get weight 0), random shapes, cross-attention, an all-blocked
row and float32 against the reference, and backward through the student's graph against finite
differences."""
import math

import numpy as np

from microtensor import Tensor

from .. import reference
from ..grading import (
    ExerciseFailure,
    Mistake,
    as_array,
    call,
    check_student_gradients,
    compare,
    expect_close,
    inputs_rng,
    student_function,
)

HINT = ("S = QKᵀ/√d_k, then masked_fill(mask, −∞), then softmax over the last axis (the keys), "
        "then Z = AV")


def _no_scale(q, k, v, mask=None):
    s = q @ k.transpose(-2, -1)
    s = s if mask is None else s.masked_fill(mask, -math.inf)
    a = s.softmax(-1)
    return a @ v, a


def _over_d_k(q, k, v, mask=None):
    return _no_scale(q * (1 / q.shape[-1]), k, v, mask)


def _mask_after_softmax(q, k, v, mask=None):
    a = (q @ k.transpose(-2, -1) * (1 / math.sqrt(q.shape[-1]))).softmax(-1)
    a = a if mask is None else a.masked_fill(mask, 0.0)
    return a @ v, a


def _over_queries(q, k, v, mask=None):
    s = q @ k.transpose(-2, -1) * (1 / math.sqrt(q.shape[-1]))
    s = s if mask is None else s.masked_fill(mask, -math.inf)
    a = s.softmax(-2)
    return a @ v, a


def _zero_fill(q, k, v, mask=None):
    s = q @ k.transpose(-2, -1) * (1 / math.sqrt(q.shape[-1]))
    a = (s if mask is None else s.masked_fill(mask, 0.0)).softmax(-1)
    return a @ v, a


def _large_negative(q, k, v, mask=None):
    s = q @ k.transpose(-2, -1) * (1 / math.sqrt(q.shape[-1]))
    a = (s if mask is None else s.masked_fill(mask, -1e9)).softmax(-1)
    return a @ v, a


def _a_then_z(q, k, v, mask=None):
    z, a = reference.scaled_dot_product_attention(q, k, v, mask)
    return a, z


MISTAKES = [
    Mistake("no scale", "scale the scores by 1/√d_k before softmax (3.2: q·k has variance "
            "d_k)", _no_scale),
    Mistake("1/d_k", "scale by 1/√d_k, not 1/d_k: the standard deviation of q·k is √d_k",
            _over_d_k),
    Mistake("mask after softmax", "mask *before* softmax (3.3): zeroing weights after it "
            "leaves rows that no longer sum to 1; fill the scores with −∞, then softmax",
            _mask_after_softmax),
    Mistake("softmax over queries", "softmax along the keys, the last axis: each query's row "
            "of A is a distribution (3.1), not each column", _over_queries),
    Mistake("fill 0", "a blocked score must be −∞, not 0: exp(0) = 1 still gives the future "
            "key weight", _zero_fill),
    Mistake("-1e9", "fill with −∞, not a large negative number: on a query row whose keys "
            "are *all* blocked, −1e9 everywhere softmaxes to uniform weights 1/T_k (the row sees "
            "every blocked key), where −∞ gives the zero row the notes ask for", _large_negative),
    Mistake("(A, Z)", "return the pair in the order (Z, A): the output first, then the "
            "weights", _a_then_z),
]

Q, K, V = ([[2.0, 1.0], [1.0, 2.0]], [[1.0, 2.0], [1.0, 1.0]], [[2.0, -1.0], [1.0, 0.0]])
CAUSAL = np.array([[False, True], [False, False]])
X = np.array([[1.0, 0.0, 1.0], [0.0, 1.0, 1.0]])
W_Q = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
W_K = np.array([[0.0, 1.0], [0.0, 0.0], [1.0, 1.0]])
W_V = np.array([[1.0, -1.0], [0.0, 0.0], [1.0, 0.0]])


def _pick(out, i):
    if not isinstance(out, (tuple, list)) or len(out) != 2:
        raise ExerciseFailure("scaled_dot_product_attention must return a pair (Z, A)")
    return out[i]


def _both(fn, args, expected, context, atol=1e-6, dtype=None):
    """Compare A first (its mistakes show there), then Z."""
    for i, name in ((1, "A"), (0, "Z")):
        compare(fn, args, expected[i], name, hint=HINT, mistakes=MISTAKES,
                pick=lambda out, i=i: _pick(out, i), atol=atol, dtype=dtype, context=context)


def _tensors(*arrays, requires_grad=False):
    return [Tensor(np.array(a, dtype=np.float64), requires_grad=requires_grad) for a in arrays]


def check_hand_example(student):
    """Notes 3.4: without mask A ≈ [[.6698, .3302], [.8044, .1956]], Z ≈ [[1.6698, −.6698],
    [1.8044, −.8044]]; causal A ≈ [[1, 0], [.8044, .1956]], Z ≈ [[2, −1], [1.8044, −.8044]]."""
    fn = student_function(student, "scaled_dot_product_attention")
    for mask, a, z, what in (
            (None, [[.6698, .3302], [.8044, .1956]], [[1.6698, -.6698], [1.8044, -.8044]],
             "without mask"),
            (CAUSAL, [[1, 0], [.8044, .1956]], [[2, -1], [1.8044, -.8044]], "causal mask")):
        _both(fn, (*_tensors(Q, K, V), mask), (np.array(z), np.array(a)),
              f"the notes' 3.4 Q, K, V, {what}", atol=5e-5)


def check_changing_the_second_token(student):
    """Notes 3.4: with X's second row set to [10, 10, 10], the causal first output stays
    exactly [2, −1]; without the mask it moves (to ≈ [20, −10])."""
    fn = student_function(student, "scaled_dot_product_attention")
    x = X.copy()
    x[1] = 10
    args = _tensors(x @ W_Q, x @ W_K, x @ W_V)
    z = as_array(_pick(call(fn, *args, CAUSAL, context="causal, X[1] = [10, 10, 10]",
                            hint=HINT), 0), "Z")
    expect_close(z[0], [2.0, -1.0], "Z[0] (causal, X[1] = [10, 10, 10])",
                 hint="the first query may see key 0 only: " + HINT, atol=1e-12)
    z = as_array(_pick(call(fn, *args, None, context="no mask, X[1] = [10, 10, 10]",
                            hint=HINT), 0), "Z")
    expected = reference.scaled_dot_product_attention(*args)[0].data[0]
    expect_close(z[0], expected, "Z[0] (no mask, X[1] = [10, 10, 10])", hint=HINT)


def check_random_shapes_masks_and_dtypes(student):
    """Self-attention [2, 3, 4, 8]; cross-attention T_q = 3, T_k = 5, d_v = 6; a padding mask
    with an all-blocked row (zero weights, zero output, no NaN); float32; T_q = 0."""
    fn = student_function(student, "scaled_dot_product_attention")
    rng = inputs_rng(16)
    pad = np.zeros((2, 1, 3, 5), dtype=bool)
    pad[0, :, :, 3:] = True
    pad[1, :, 2, :] = True                              # query 2 of batch 1 sees no key
    cases = [((2, 3, 4, 8), (2, 3, 4, 8), (2, 3, 4, 8), np.triu(np.ones((4, 4), bool), 1),
              np.float64, "self-attention [2, 3, 4, 8], causal"),
             ((2, 2, 3, 8), (2, 2, 5, 8), (2, 2, 5, 6), None, np.float64,
              "cross-attention T_q = 3, T_k = 5, d_v = 6"),
             ((2, 2, 3, 4), (2, 2, 5, 4), (2, 2, 5, 4), pad, np.float64,
              "padding mask, an all-blocked query row"),
             ((1, 2, 4, 8), (1, 2, 4, 8), (1, 2, 4, 8), None, np.float32, "float32"),
             ((1, 0, 4), (1, 3, 4), (1, 3, 4), None, np.float64, "T_q = 0")]
    for q_shape, k_shape, v_shape, mask, dtype, context in cases:
        args = [Tensor(rng.normal(size=s).astype(dtype)) for s in (q_shape, k_shape, v_shape)]
        expected = reference.scaled_dot_product_attention(*args, mask)
        _both(fn, (*args, mask), (expected[0].data, expected[1].data), context, atol=1e-5,
              dtype=dtype)


def check_rows_sum_to_one_and_blocked_weights_are_zero(student):
    """Notes 3.1/3.3: each query's row of A sums to 1; a blocked key's weight is exactly 0."""
    fn = student_function(student, "scaled_dot_product_attention")
    rng = inputs_rng(17)
    mask = np.triu(np.ones((5, 5), bool), 1)
    out = call(fn, *[Tensor(rng.normal(size=(2, 5, 3))) for _ in range(3)], mask,
               context="q, k, v [2, 5, 3], causal", hint=HINT)
    a = as_array(_pick(out, 1), "A")
    expect_close(a.sum(-1), np.ones((2, 5)), "Σ_j A_ij (each row)", hint=HINT)
    expect_close(np.where(mask, a, 0), np.zeros((2, 5, 5)), "A at a blocked key", hint=HINT,
                 atol=0)


def check_gradcheck(student):
    """Backward through your graph (the engine's ops), causal, [1, 2, 3, 4]: ∂L/∂Q, ∂L/∂K,
    ∂L/∂V against finite differences."""
    student_function(student, "scaled_dot_product_attention")
    rng = inputs_rng(18)
    q, k, v = _tensors(*rng.normal(size=(3, 1, 2, 3, 4)), requires_grad=True)
    mask = np.triu(np.ones((3, 3), bool), 1)
    check_student_gradients(
        student, "gradients", lambda w: ("scaled_dot_product_attention", [q, k, v, mask], w, 0),
        lambda result: result[1],
        lambda q, k, v: reference.scaled_dot_product_attention(q, k, v, mask)[0], [q, k, v],
        ["Q", "K", "V"], hint=HINT, context="causal, [1, 2, 3, 4]")


CHECKS = [check_hand_example, check_changing_the_second_token,
          check_random_shapes_masks_and_dtypes, check_rows_sum_to_one_and_blocked_weights_are_zero,
          check_gradcheck]
