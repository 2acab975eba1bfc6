"""Matrix product `a @ b`, batched, with the batch dims broadcast (notes 3.8 writes it for Z = AV,
where A is the attention weights: ∂L/∂V = AᵀG, ∂L/∂A = GVᵀ). 1-D operands are reshaped to 2-D
around it, as torch does (parity/surface/arithmetic.py).
"""
from ..autograd import Function
from ..tensor import Tensor, apply
from .fast import matmul, matmul_t


class MatMul(Function):
    """z = a @ b: a [..., M, K], b [..., K, N] -> [..., M, N];   ∂L/∂a = g bᵀ,   ∂L/∂b = aᵀ g"""

    op = "matmul"

    def forward(self, a, b):
        self.save(a=a, b=b)
        return matmul(a, b)  # a @ b (ops/fast.py: a stack times one matrix, in one product)

    def backward(self, g):
        need_a, need_b = self.needs_input_grad
        ga = matmul(g, self.saved["b"].swapaxes(-1, -2)) if need_a else None  # ∂L/∂a = g bᵀ
        # ∂L/∂b = aᵀ g; for a [B, T, K] @ b [K, N] that is Σ_i a_iᵀ g_i over the B matrices (what
        # unbroadcast would add up) = a.reshape(B·T, K)ᵀ @ g.reshape(B·T, N): one product
        gb = matmul_t(self.saved["a"], g, b_shape=self.input_shapes[1]) if need_b else None
        return ga, gb


Tensor.__matmul__ = lambda a, b: apply(MatMul(), a, b)  # a @ b
