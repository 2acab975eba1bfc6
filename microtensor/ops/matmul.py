"""Matrix product `a @ b`, batched, with the batch dims broadcast (notes 3.8 writes it for Z = AV,
where A is the attention weights: ∂L/∂V = AᵀG, ∂L/∂A = GVᵀ).

A batch dim that broadcasting stretched gets, as for any broadcast op, the sum of its copies'
gradients: the engine's `unbroadcast`. 1-D operands take the 2-D path, reshaped around it as
torch does (parity/surface/arithmetic.py).
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
        need_a, need_b = self.needs_input_grad  # a is kept only if b needs a gradient, and b
        a, b = self.saved.get("a"), self.saved.get("b")  # only if a does (save_less.py)
        ga = matmul(g, b.swapaxes(-1, -2)) if need_a else None  # ∂L/∂a = g bᵀ
        # ∂L/∂b = aᵀ g; for one b [K, N] under a stack, summed over the stack in the same product
        # (unbroadcast's sum, done here: fast.py; other broadcast dims: unbroadcast in backward())
        gb = matmul_t(a, g, self.input_shapes[1]) if need_b else None
        return ga, gb


Tensor.__matmul__ = lambda a, b: apply(MatMul(), a, b)  # a @ b
