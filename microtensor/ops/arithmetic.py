"""Elementwise arithmetic `+ - * / ** neg` with numpy broadcasting (notes 3.8: each one's
backward; the residual of 3.6 is a `+`).

Each backward returns the gradient in the broadcast (output) shape; the engine's
`unbroadcast` step sums it back to each input's shape.
"""
import numpy as np

from ..autograd import Function


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
        # g itself is free to hand on; −g costs an array, so only when it is asked for
        return g, (-g if self.needs_input_grad[1] else None)


class Mul(Function):
    """z = a ⊙ b;   ∂L/∂a = g ⊙ b,   ∂L/∂b = g ⊙ a"""

    op = "mul"

    def forward(self, a, b):
        self.save(b=b, for_input=0)  # ∂L/∂a needs b, and ∂L/∂b needs a
        self.save(a=a, for_input=1)
        return a * b

    def backward(self, g):
        need_a, need_b = self.needs_input_grad
        return (g * self.saved["b"] if need_a else None,
                g * self.saved["a"] if need_b else None)


class Div(Function):
    """z = a / b;   ∂L/∂a = g / b,   ∂L/∂b = −g ⊙ a / b²"""

    op = "div"

    def forward(self, a, b):
        self.save(b=b)  # both gradients need b
        self.save(a=a, for_input=1)
        return a / b

    def backward(self, g):
        need_a, need_b = self.needs_input_grad
        ga = g / self.saved["b"]
        # −g ⊙ a / b² written as −(g / b) ⊙ a / b, reusing g / b
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
        super().__init__()
        self.exponent = exponent

    def forward(self, a):
        self.save(a=a)
        return _power(a, self.exponent)

    def backward(self, g):
        a, p = self.saved["a"], self.exponent
        if p == 0:  # a⁰ = 1 is constant; p·a⁻¹ would give 0·inf = NaN at a = 0
            return np.zeros_like(g)
        return g * p * _power(a, p - 1)


def _power(a, p):
    """aᵖ, with one case as PyTorch: a^(−½) is computed as 1/√a, which differs from numpy's
    a ** −0.5 at a = −0.0 (−inf, not inf) and a = −inf (NaN, not 0). The backward of a ** 0.5
    calls this with p − 1 = −½, so its gradient matches PyTorch there too (a ** 0.5 itself
    needs no case: numpy computes √a)."""
    return 1 / np.sqrt(a) if p == -0.5 else a ** p
