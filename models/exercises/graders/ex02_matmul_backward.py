"""Grader of exercise 2, matmul backward (notes 3.8): the notes' Z = AV on the 3.4 numbers,
shapes and dtypes against the reference, then the student's backward inside the engine's
MatMul against finite differences."""
import numpy as np

from microtensor import Tensor

from .. import reference
from ..grading import (
    ExerciseFailure,
    Mistake,
    check_gradients,
    compare,
    inputs_rng,
    plugged,
    shape_text,
    student_function,
)
from ..parts import op

MatMul = op("MatMul")  # the engine's op, wherever its file is

HINT = ("∂L/∂a = G bᵀ and ∂L/∂b = aᵀ G, with ᵀ swapping the last two axes "
        "(np.swapaxes(x, -1, -2)); check that each result has its input's shape")


def _t(x):
    return np.swapaxes(x, -1, -2)


def _dot_t(a, b, g):  # .T reverses every axis: right for matrices, wrong for a stack of them
    return g @ b.T, a.T @ g


def _wrong_order(a, b, g):
    return _t(b) @ g, g @ _t(a)


def _swapped(a, b, g):  # the two formulas exchanged
    return _t(a) @ g, g @ _t(b)


def _no_transpose(a, b, g):
    return g @ b, a @ g


MISTAKES = [
    Mistake(".T", "x.T reverses *every* axis, so on a batch [..., M, K] it also reverses the "
            "batch axes: swap only the last two, np.swapaxes(x, -1, -2)", _dot_t),
    Mistake("order", "keep the order of the product: ∂L/∂a = G bᵀ (G on the left), "
            "∂L/∂b = aᵀ G (G on the right)", _wrong_order),
    Mistake("swapped", "the formulas are exchanged: ∂L/∂a = G bᵀ goes with a, ∂L/∂b = aᵀ G "
            "with b", _swapped),
    Mistake("no transpose", "each gradient takes the *other* factor transposed: "
            "∂L/∂a = G bᵀ (not G b), ∂L/∂b = aᵀ G (not a G)",
            _no_transpose),
]

# notes 3.4: A (no mask) and V; G = ∂L/∂Z chosen by hand
A_34 = 1 / (1 + np.exp(-np.array([[1.0], [2.0]]) / np.sqrt(2)))
A_34 = np.hstack([A_34, 1 - A_34])                       # ≈ [[.6698, .3302], [.8044, .1956]]
V_34 = np.array([[2.0, -1.0], [1.0, 0.0]])
G_34 = np.array([[1.0, 0.0], [0.5, -1.0]])


def _grads(fn, a, b, g, names, context):
    """Compare both gradients of the student's matmul_backward with the reference."""
    expected = reference.matmul_backward(a, b, g)
    for i, name in enumerate(names):
        compare(fn, (a, b, g), expected[i], name, hint=HINT, mistakes=MISTAKES,
                pick=lambda out, i=i: _pick(out, i), dtype=a.dtype, atol=1e-5, context=context)


def _pick(out, i):
    if not isinstance(out, (tuple, list)) or len(out) != 2:
        raise ExerciseFailure("matmul_backward must return a pair (∂L/∂a, ∂L/∂b)")
    return out[i]


def check_hand_example_z_equals_av(student):
    """Z = AV with the notes' 3.4 A and V and a chosen G: ∂L/∂V = AᵀG and ∂L/∂A = GVᵀ, the
    notes' 3.8 formulas written out in numpy."""
    fn = student_function(student, "matmul_backward")
    context = "Z = AV with the notes' 3.4 A, V and G = [[1, 0], [0.5, −1]]"
    for i, (name, expected) in enumerate((("∂L/∂A", G_34 @ V_34.T), ("∂L/∂V", A_34.T @ G_34))):
        compare(fn, (A_34, V_34, G_34), expected, name, hint=HINT, mistakes=MISTAKES,
                pick=lambda out, i=i: _pick(out, i), context=context)


def check_shapes_batches_and_dtypes(student):
    """Non-square matrices, batches [B, H, M, K], float32, zero-size M and K."""
    fn = student_function(student, "matmul_backward")
    rng = inputs_rng(3)
    for a_shape, b_shape in (((3, 4), (4, 5)), ((2, 3, 4, 5), (2, 3, 5, 2)), ((2, 4, 3), (2, 3, 4)),
                             ((0, 4), (4, 3)), ((2, 3, 0), (2, 0, 5))):
        for dtype in (np.float64, np.float32):
            a, b = rng.normal(size=a_shape).astype(dtype), rng.normal(size=b_shape).astype(dtype)
            g = rng.normal(size=a_shape[:-1] + b_shape[-1:]).astype(dtype)
            _grads(fn, a, b, g, ("∂L/∂a", "∂L/∂b"), shape_text(("a", a), ("b", b), ("g", g)))


def check_gradcheck_in_attention(student):
    """Your backward inside the engine's MatMul, through attention's QKᵀ and AV (batched
    [B, H, T, d]): ∂L/∂Q, ∂L/∂K, ∂L/∂V against finite differences."""
    import nn

    fn = student_function(student, "matmul_backward")
    original = MatMul.backward

    def backward(self, g):
        a_shape, b_shape = self.input_shapes
        if len(a_shape) == len(b_shape) >= 2 and a_shape[:-2] == b_shape[:-2]:
            return tuple(fn(self.saved["a"], self.saved["b"], g))
        return original(self, g)  # 1-D operands and broadcast batches: the reference's

    rng = inputs_rng(4)
    q, k, v = (Tensor(rng.normal(size=(1, 2, 3, 2)), requires_grad=True) for _ in range(3))
    with plugged(MatMul, "backward", backward):
        check_gradients(lambda q, k, v: nn.scaled_dot_product_attention(q, k, v)[0], [q, k, v],
                        ["Q", "K", "V"], hint=HINT, context="Z = softmax(QKᵀ/√d) V, [1, 2, 3, 2]")


CHECKS = [check_hand_example_z_equals_av, check_shapes_batches_and_dtypes,
          check_gradcheck_in_attention]
