"""Grader of exercise 1, un-broadcasting a gradient (notes 3.6, 3.8): shapes against the
reference, then the student's function inside the engine's backward against finite
differences (a bias over [B, T, D] rows, a per-row scale)."""
import numpy as np

from microtensor import Tensor

from .. import reference
from ..grading import Mistake, check_gradients, compare, inputs_rng, student_function
from ..parts import plugged_function

HINT = ("sum the gradient over the axes broadcasting added (the leading ones) and over the axes "
        "where `shape` has 1 (keepdims=True), then it has `shape`")


def _mean(grad, shape):
    extra = grad.ndim - len(shape)
    grad = grad.mean(axis=tuple(range(extra))) if extra else grad
    axes = tuple(i for i, n in enumerate(shape) if n == 1 and grad.shape[i] != 1)
    return grad.mean(axis=axes, keepdims=True) if axes else grad


def _mean_stretched(grad, shape):  # sums the leading axes, averages the size-1 ones
    extra = grad.ndim - len(shape)
    grad = grad.sum(axis=tuple(range(extra))) if extra else grad
    axes = tuple(i for i, n in enumerate(shape) if n == 1 and grad.shape[i] != 1)
    return grad.mean(axis=axes, keepdims=True) if axes else grad


def _leading_only(grad, shape):
    extra = grad.ndim - len(shape)
    return grad.sum(axis=tuple(range(extra))) if extra else grad


def _no_keepdims(grad, shape):
    extra = grad.ndim - len(shape)
    grad = grad.sum(axis=tuple(range(extra))) if extra else grad
    axes = tuple(i for i, n in enumerate(shape) if n == 1 and grad.shape[i] != 1)
    return grad.sum(axis=axes) if axes else grad


MISTAKES = [
    Mistake("mean", "each broadcast copy adds its *whole* gradient: np.sum over the copied "
            "axes, not np.mean", _mean),
    Mistake("mean over size-1 axes", "the axes where `shape` has 1 were stretched into copies "
            "too: np.sum them (keepdims=True), not np.mean, as the leading axes",
            _mean_stretched),
    Mistake("size-1 axes not summed", "you summed the leading axes but not the axes where "
            "`shape` has size 1 (e.g. [T, 1] against [B, T, D]): sum those with keepdims=True",
            _leading_only),
    Mistake("keepdims forgotten", "sum the size-1 axes with keepdims=True, so that the result "
            "keeps `shape` (e.g. [T, 1], not [T])", _no_keepdims),
]

CASES = [((2, 3, 4), (4,)), ((2, 3, 4), (3, 1)), ((2, 3, 4), (2, 1, 4)), ((5, 3), (1, 3)),
         ((2, 3, 4), (1, 1)), ((3, 4), ()), ((2, 3), (2, 3)), ((0, 3), (3,)), ((2, 0, 4), (1, 4))]


def check_shapes_and_values(student):
    """Each (gradient shape -> input shape) case against the reference, float64 and float32."""
    fn = student_function(student, "unbroadcast")
    rng = inputs_rng(1)
    for dtype in (np.float64, np.float32):
        for grad_shape, shape in CASES:
            grad = rng.normal(size=grad_shape).astype(dtype)
            compare(fn, (grad, shape), reference.unbroadcast(grad, shape), "∂L/∂b", hint=HINT,
                    mistakes=MISTAKES, dtype=dtype, atol=1e-5,
                    context=f"unbroadcast(grad {list(grad_shape)}, shape {shape})")


def check_gradcheck_in_the_engine(student):
    """The engine's backward with your unbroadcast: y = x ⊙ s + b, b [D] and s [T, 1]
    broadcast against x [B, T, D]; ∂L/∂x, ∂L/∂s, ∂L/∂b against finite differences."""
    fn = student_function(student, "unbroadcast")
    rng = inputs_rng(2)
    x, s, b = (Tensor(rng.normal(size=shape), requires_grad=True)
               for shape in ((2, 3, 4), (3, 1), (4,)))
    with plugged_function("unbroadcast", fn):
        check_gradients(lambda x, s, b: x * s + b, [x, s, b], ["x", "s", "b"], hint=HINT,
                        context="y = x ⊙ s + b, x [2, 3, 4], s [3, 1], b [4]")


CHECKS = [check_shapes_and_values, check_gradcheck_in_the_engine]
