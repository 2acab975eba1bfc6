"""Grader of exercise 5, cross-entropy backward (notes 3.7, 3.3's loss mask): a row by hand,
rows with ignored targets, large logits, float32 and no rows against the reference, then the
student's backward inside the engine's loss on [B, T, C] logits against finite differences."""
import numpy as np

import microtensor.functional as F
from microtensor import Tensor

from .. import reference
from ..grading import Mistake, check_gradients, compare, inputs_rng, plugged, student_function
from ..parts import op

CrossEntropy = op("CrossEntropy")  # the engine's op, wherever its file is

HINT = ("∂L/∂z_i = (softmax(z_i) − onehot(t_i)) / n for a counted row, n the number of rows "
        "whose target is not ignore_index; 0 for an ignored row")


def _probs(z):
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _onehot(t, c, ignore_index):
    out = np.zeros((len(t), c))
    rows = np.flatnonzero(t != ignore_index)
    out[rows, t[rows]] = 1
    return out


def _valid(t, ignore_index):
    return (t != ignore_index)[:, None]


def _sum(z, t, ignore_index=-100):
    return (_probs(z) - _onehot(t, z.shape[-1], ignore_index)) * _valid(t, ignore_index)


def _over_all_rows(z, t, ignore_index=-100):
    return _sum(z, t, ignore_index) / max(len(t), 1)


def _ignored_kept(z, t, ignore_index=-100):
    n = max(int((t != ignore_index).sum()), 1)
    return (_probs(z) - _onehot(t, z.shape[-1], ignore_index)) / n


def _onehot_every_row(z, t, ignore_index=-100):  # p[rows, t] -= 1 with t = ignore_index too
    p = _probs(z)
    p[np.arange(len(t)), t] -= 1
    n = max(int((t != ignore_index).sum()), 1)
    return p * _valid(t, ignore_index) / n


def _sign(z, t, ignore_index=-100):
    return -reference.cross_entropy_backward(z, t, ignore_index)


def _logits(z, t, ignore_index=-100):
    n = max(int((t != ignore_index).sum()), 1)
    return (z - _onehot(t, z.shape[-1], ignore_index)) * _valid(t, ignore_index) / n


def _global_max(z, t, ignore_index=-100):  # one max over the whole array
    e = np.exp(z - z.max())
    n = max(int((t != ignore_index).sum()), 1)
    return (e / e.sum(-1, keepdims=True) - _onehot(t, z.shape[-1], ignore_index)) * _valid(
        t, ignore_index) / n


def _shift_above_700(z, t, ignore_index=-100):  # the shift kept for float64's overflow only
    z = z - z.max(-1, keepdims=True) if z.max() > 700 else z
    e = np.exp(z)
    n = max(int((t != ignore_index).sum()), 1)
    return (e / e.sum(-1, keepdims=True) - _onehot(t, z.shape[-1], ignore_index)) * _valid(
        t, ignore_index) / n


def _unstable(z, t, ignore_index=-100):
    e = np.exp(z)
    n = max(int((t != ignore_index).sum()), 1)
    return (e / e.sum(-1, keepdims=True) - _onehot(t, z.shape[-1], ignore_index)) * _valid(
        t, ignore_index) / n


MISTAKES = [
    Mistake("sum", "the loss is a mean: divide by n, the number of counted rows", _sum),
    Mistake("all rows", "the mean is over the *counted* rows: n excludes the ignored ones",
            _over_all_rows),
    Mistake("ignored kept", "a row whose target is ignore_index (padding: the loss mask) gets "
            "exactly 0", _ignored_kept),
    Mistake("onehot on every row", "an ignored row's target is ignore_index (−100), not a "
            "class: subtract the onehot only on the counted rows, e.g. rows = "
            "np.flatnonzero(t != ignore_index); p[rows, t[rows]] -= 1", _onehot_every_row),
    Mistake("sign", "softmax(z) − onehot(t), not onehot(t) − softmax(z): the loss falls as the "
            "target's probability grows", _sign),
    Mistake("logits", "subtract from softmax(z), the probabilities, not from the logits z",
            _logits),
    Mistake("global max", "subtract each row's own max (axis=-1, keepdims=True), not the "
            "whole array's: a row far below the largest logit then has exp(z − max) = 0 in "
            "every entry, and 0/0 is NaN", _global_max),
    Mistake("shift only above 700", "shift every row by its max always, not only when the "
            "logits are large: float32's exp overflows above 88.7 (float64's above 709), so "
            "float32 logits of a few hundred give inf/inf = NaN", _shift_above_700),
    Mistake("unstable", "subtract each row's max from the logits before exp: exp(1000) "
            "overflows to inf, and inf/inf is NaN (softmax is unchanged by the shift)", _unstable),
]


def _check(fn, z, t, ignore_index, context):
    compare(fn, (z, t, ignore_index), reference.cross_entropy_backward(z, t, ignore_index),
            "∂L/∂z", hint=HINT, mistakes=MISTAKES, dtype=z.dtype, atol=1e-6, context=context)


def check_by_hand(student):
    """One row z = [2, 1, 0], target 0: p = softmax(z) ≈ [.665, .245, .090],
    ∂L/∂z = p − [1, 0, 0]."""
    fn = student_function(student, "cross_entropy_backward")
    z, t = np.array([[2.0, 1.0, 0.0]]), np.array([0])
    p = np.exp(z) / np.exp(z).sum()
    compare(fn, (z, t, -100), p - [[1, 0, 0]], "∂L/∂z", hint=HINT, mistakes=MISTAKES,
            context="z = [[2, 1, 0]], t = [0]")


def check_ignored_targets(student):
    """Six rows, two with target ignore_index (padding): their rows are 0, the mean is over 4;
    then ignore_index=0, and every target ignored (n = 0: nothing counts, all zeros)."""
    fn = student_function(student, "cross_entropy_backward")
    rng = inputs_rng(11)
    z, t = rng.normal(size=(6, 5)), np.array([1, -100, 4, 0, -100, 2])
    _check(fn, z, t, -100, "6 rows, targets [1, −100, 4, 0, −100, 2]")
    _check(fn, z, np.array([1, 0, 4, 0, 0, 2]), 0, "ignore_index=0: targets 0 are padding")
    _check(fn, z[:2], np.array([-100, -100]), -100, "every target ignored (n = 0): all zeros")


def check_large_logits_dtypes_and_no_rows(student):
    """Logits near 1000 (exp would overflow without the max subtracted); rows of mixed scale
    (≈ 1000, ≈ 0, ≈ −1000: one max for the whole array fails); float32 logits of a few hundred
    (float32's exp overflows above 88.7: a shift only above 700 fails); float32, N = 0."""
    fn = student_function(student, "cross_entropy_backward")
    rng = inputs_rng(12)
    _check(fn, 1000 + rng.normal(size=(3, 4)), np.array([0, 3, 1]), -100, "logits ≈ 1000")
    mixed = rng.normal(size=(3, 4)) + np.array([[1000.0], [0.0], [-1000.0]])
    _check(fn, mixed, np.array([2, 0, 3]), -100, "rows of mixed scale, ≈ 1000, ≈ 0, ≈ −1000")
    large = (rng.normal(size=(4, 6)) * 50 + np.array([[300.0], [120.0], [0.0], [-200.0]]))
    _check(fn, large.astype(np.float32), np.array([1, 5, 0, 2]), -100,
           "float32 logits of mixed scale up to ≈ 400")
    _check(fn, rng.normal(size=(4, 7)).astype(np.float32), np.array([6, 0, 2, 2]), -100,
           "float32 logits [4, 7]")
    _check(fn, np.zeros((0, 3)), np.zeros(0, dtype=np.int64), -100, "no rows, logits [0, 3]")


def check_gradcheck_teacher_forcing_loss(student):
    """Your backward inside the engine's cross_entropy, logits [B, T, C] = [2, 3, 4] with one
    padded target (3.7's teacher forcing): ∂L/∂z against finite differences."""
    fn = student_function(student, "cross_entropy_backward")
    original = CrossEntropy.backward
    logits = {}

    def forward(self, z):
        logits[id(self)] = z
        return original_forward(self, z)

    def backward(self, g):
        if self.reduction != "mean" or self.label_smoothing:
            return original(self, g)
        return np.asarray(fn(logits[id(self)], self.targets, self.ignore_index)) * g

    original_forward = CrossEntropy.forward
    rng = inputs_rng(13)
    z = Tensor(rng.normal(size=(2, 3, 4)), requires_grad=True)
    t = np.array([[1, 3, 0], [2, -100, 1]])
    with plugged(CrossEntropy, "forward", forward), plugged(CrossEntropy, "backward", backward):
        check_gradients(lambda z: F.cross_entropy(z, t), [z], ["z"], hint=HINT,
                        context="logits [2, 3, 4], one target ignored")


CHECKS = [check_by_hand, check_ignored_targets, check_large_logits_dtypes_and_no_rows,
          check_gradcheck_teacher_forcing_loss]
