"""Matrix product `a @ b` with numpy's matmul semantics (1-D operands, batched, broadcast batch dims).

For Z = A B:   ∂L/∂A = G Bᵀ   and   ∂L/∂B = Aᵀ G   (notes 3.8: ∂L/∂V = AᵀG, ∂L/∂A = GVᵀ).
"""
import math

import numpy as np

from ..autograd import Function, unbroadcast


def _swap_last(x):
    return np.swapaxes(x, -1, -2)


class MatMul(Function):
    """z = a @ b. A 1-D `a` is a row vector [1, K], a 1-D `b` a column [K, 1], as numpy does."""

    op = "matmul"

    def forward(self, a, b):
        if a.ndim == 0 or b.ndim == 0:
            raise ValueError(f"matmul needs operands with at least 1 dim; got shapes "
                             f"{a.shape} and {b.shape} (use * for a scalar)")
        if a.shape[-1] != b.shape[0 if b.ndim == 1 else -2]:
            raise ValueError(f"matmul: inner dims differ: a {a.shape} @ b {b.shape} "
                             f"({a.shape[-1]} vs {b.shape[0 if b.ndim == 1 else -2]})")
        self.a_shape, self.b_shape = a.shape, b.shape
        a2 = a[None, :] if a.ndim == 1 else a  # [K] -> [1, K]
        b2 = b[:, None] if b.ndim == 1 else b  # [K] -> [K, 1]
        need_a, need_b = self.needs_input_grad  # ∂L/∂A needs B, ∂L/∂B needs A
        self.save(**({"b": b2} if need_a else {}), **({"a": a2} if need_b else {}))
        z = _matmul(a2, b2)
        if a.ndim == 1:
            z = z[..., 0, :]
        if b.ndim == 1:
            z = z[..., 0]
        return z

    def backward(self, g):
        a, b = self.saved.get("a"), self.saved.get("b")  # [..., M, K], [..., K, N]
        if len(self.a_shape) == 1:
            g = np.expand_dims(g, -2 if len(self.b_shape) > 1 else 0)
        if len(self.b_shape) == 1:
            g = g[..., None]
        need_a, need_b = self.needs_input_grad
        ga = gb = None
        if need_a:  # ∂L/∂A = G Bᵀ
            a_shape2 = (1,) + self.a_shape if len(self.a_shape) == 1 else self.a_shape
            ga = unbroadcast(_matmul(g, _swap_last(b)), a_shape2).reshape(self.a_shape)
        if need_b:  # ∂L/∂B = Aᵀ G
            b_ndim2 = max(len(self.b_shape), 2)
            if b_ndim2 == 2 and a.ndim > 2:
                # all rows of all batches hit the same weight: one [K, M] @ [M, N] product
                gb = _rows(a).T @ _rows(g)
            else:
                b_shape2 = self.b_shape + (1,) if len(self.b_shape) == 1 else self.b_shape
                gb = unbroadcast(_matmul(_swap_last(a), g), b_shape2)
            gb = gb.reshape(self.b_shape)
        return ga, gb


def _rows(x):
    """x [..., K] as one matrix [N, K]; N is spelled out, as -1 is ambiguous when K = 0."""
    return x.reshape(math.prod(x.shape[:-1]), x.shape[-1])


def _matmul(a, b):
    """a @ b; a stack [..., M, K] times one matrix [K, N] is run as a single 2-D product."""
    if b.ndim == 2 and a.ndim > 2:
        return (_rows(a) @ b).reshape(*a.shape[:-1], b.shape[-1])
    return a @ b
