"""Matrix product `a @ b` with numpy's matmul semantics: batched, broadcasting batch dims, 1-D
operands.

For Z = A B:   ∂L/∂A = G Bᵀ   and   ∂L/∂B = Aᵀ G   (notes 3.8 writes it for Z = AV, where A
is the attention weights: ∂L/∂V = AᵀG, ∂L/∂A = GVᵀ).

1-D operands, as in numpy: a vector `a` [K] acts as a row [1, K], a vector `b` [K] as a
column [K, 1], and that size-1 dim is dropped from the product. Backward puts the dim back
into G, applies the two formulas to matrices, and sums away the batch dims that
broadcasting added, as for any broadcast op.
"""
import math

import numpy as np

from ..autograd import Function, unbroadcast
from ..parity.operands import lift
from ..tensor import apply, tensor_method


class MatMul(Function):
    """z = a @ b: a [..., M, K] (or [K]) and b [..., K, N] (or [K]) -> [..., M, N];
    ∂L/∂a = g bᵀ, ∂L/∂b = aᵀ g."""

    op = "matmul"

    def forward(self, a, b):
        if a.ndim == 0 or b.ndim == 0:
            raise ValueError(f"matmul needs operands with at least 1 dim; got shapes "
                             f"{a.shape} and {b.shape} (use * for a scalar)")
        k_b = b.shape[0 if b.ndim == 1 else -2]
        if a.shape[-1] != k_b:
            raise ValueError(f"matmul: inner dims differ: a {a.shape} @ b {b.shape} "
                             f"({a.shape[-1]} vs {k_b})")
        self.save(b=b, for_input=0)  # ∂L/∂a = g bᵀ needs b
        self.save(a=a, for_input=1)  # ∂L/∂b = aᵀ g needs a
        return _matmul(a, b)

    def backward(self, g):
        a, b = self.saved.get("a"), self.saved.get("b")  # b kept only if a needs a gradient,
                                                         # a only if b does
        if self._same_batch_matrices():                  # g = ∂L/∂z (notes 3.8: a = A, b = V)
            ga = None if b is None else g @ np.swapaxes(b, -1, -2)   # ∂L/∂a = g bᵀ
            gb = None if a is None else np.swapaxes(a, -1, -2) @ g   # ∂L/∂b = aᵀ g
            return ga, gb
        return self._general_backward(g, a, b)

    def _same_batch_matrices(self):
        """True when both operands are matrices (or stacks with the same batch dims)."""
        a_shape, b_shape = self.input_shapes
        return len(a_shape) >= 2 and len(b_shape) >= 2 and a_shape[:-2] == b_shape[:-2]

    def _general_backward(self, g, a, b):
        """The same two products for 1-D operands and broadcast batch dims."""
        a_shape, b_shape = self.input_shapes
        if len(b_shape) == 1:  # put back the dims a 1-D operand dropped: G is [..., M, N]
            g = g[..., None]
        if len(a_shape) == 1:
            g = np.expand_dims(g, -2)
        if len(b_shape) == 2 and g.ndim > 2 and not g.flags.c_contiguous:
            g = np.ascontiguousarray(g)  # both products fold g's rows: one copy, not one each
        ga = gb = None
        if b is not None:
            b = b[:, None] if b.ndim == 1 else b
            ga = _matmul(g, np.swapaxes(b, -1, -2))  # G Bᵀ
            a_2d = (1, *a_shape) if len(a_shape) == 1 else a_shape  # a row [1, K] for a [K]
            ga = unbroadcast(ga, a_2d).reshape(a_shape)
        if a is not None:
            a = a[None, :] if a.ndim == 1 else a
            if len(b_shape) == 2 and a.ndim > 2:
                # one matrix B used by a whole stack: Σ over the stack of AᵀG is one product
                # of all rows, [K, (…·M)] @ [(…·M), N]
                gb = _rows(a).T @ _rows(g)
            else:
                b_2d = (*b_shape, 1) if len(b_shape) == 1 else b_shape  # a column for b [K]
                gb = unbroadcast(np.swapaxes(a, -1, -2) @ g, b_2d)
            gb = gb.reshape(b_shape)
        return ga, gb


def _rows(x):
    """x [..., K] as one matrix [N, K]; N is spelled out, as -1 is ambiguous when K = 0."""
    return x.reshape(math.prod(x.shape[:-1]), x.shape[-1])


def _matmul(a, b):
    """a @ b. For a stack a [..., M, K] times one matrix b [K, N], numpy runs one small product
    per stacked matrix; folding the stack into rows runs one large product, 2–3× faster
    (nn.Linear on [B, T, D] is this case)."""
    if b.ndim == 2 and a.ndim > 2:
        return (_rows(a) @ b).reshape(*a.shape[:-1], b.shape[-1])
    return a @ b


@tensor_method("__matmul__")
def matmul(self, other):
    return _tensor_matmul(self, lift(other))


@tensor_method("__rmatmul__")
def rmatmul(self, other):
    return _tensor_matmul(lift(other), self)


def _tensor_matmul(a, b):
    if "b" in (a.data.dtype.kind, b.data.dtype.kind):  # bool
        raise TypeError("@ of bool tensors is not supported (as torch); cast to int first")
    return apply(MatMul(), a, b)
