"""Elementwise arithmetic `+ − × ÷ ** neg` with numpy broadcasting (notes 3.8 walks backward
through attention with these steps; the residual of 3.6 is a `+`).

Each backward returns its gradient in the broadcast (output) shape; the engine's `unbroadcast`
sums it back to each input's shape.
"""
import numpy as np

from ..autograd import Function
from ..parity.power import power
from ..tensor import Tensor, apply


class Add(Function):
    """z = a + b;   ∂L/∂a = g,   ∂L/∂b = g"""

    op = "add"

    def forward(self, a, b):
        return a + b

    def backward(self, g):
        return g, g


class Sub(Function):
    """z = a − b;   ∂L/∂a = g,   ∂L/∂b = −g"""

    op = "sub"

    def forward(self, a, b):
        return a - b

    def backward(self, g):
        return g, -g


class Mul(Function):
    """z = a ⊙ b;   ∂L/∂a = g ⊙ b,   ∂L/∂b = g ⊙ a"""

    op = "mul"

    def forward(self, a, b):
        self.save(a=a, b=b)
        return a * b

    def backward(self, g):
        need_a, need_b = self.needs_input_grad  # x * 0.5: no gradient for the 0.5
        return (g * self.saved["b"] if need_a else None,
                g * self.saved["a"] if need_b else None)


class Div(Function):
    """z = a / b;   ∂L/∂a = g / b,   ∂L/∂b = −g ⊙ a / b²"""

    op = "div"

    def forward(self, a, b):
        self.save(a=a, b=b)
        return a / b

    def backward(self, g):
        need_a, need_b = self.needs_input_grad
        ga = g / self.saved["b"]  # ∂L/∂a; ∂L/∂b = −g ⊙ a / b² = −ga ⊙ a / b
        return (ga if need_a else None,
                -ga * self.saved["a"] / self.saved["b"] if need_b else None)


class Neg(Function):
    """z = −a;   ∂L/∂a = −g"""

    op = "neg"

    def forward(self, a):
        return -a

    def backward(self, g):
        return -g


class Pow(Function):
    """z = aᵖ for a scalar p;   ∂L/∂a = g ⊙ p·aᵖ⁻¹"""

    op = "pow"

    def __init__(self, exponent):
        self.exponent = exponent

    def forward(self, a):
        self.save(a=a)
        return power(a, self.exponent)  # a ** p, rounded as torch (parity/power.py)

    def backward(self, g):
        p = self.exponent  # p = 0: a⁰ = 1 is constant (p·a⁻¹ would be 0·inf = NaN at a = 0)
        return g * p * power(self.saved["a"], p - 1) if p != 0 else np.zeros_like(g)


# Tensors only; parity/surface/arithmetic.py wraps each, so that x * 0.5 lifts 0.5 to a Tensor
Tensor.__add__ = lambda a, b: apply(Add(), a, b)  # a + b
Tensor.__sub__ = lambda a, b: apply(Sub(), a, b)  # a − b
Tensor.__mul__ = lambda a, b: apply(Mul(), a, b)  # a ⊙ b
Tensor.__truediv__ = lambda a, b: apply(Div(), a, b)  # a / b
Tensor.__neg__ = lambda a: apply(Neg(), a)  # −a
Tensor.__pow__ = lambda a, p: apply(Pow(p), a)  # aᵖ
