"""Elementwise arithmetic `+ - * / ** neg` with numpy broadcasting (notes 3.8: each one's
backward; the residual of 3.6 is a `+`).

Each backward returns the gradient in the broadcast (output) shape; the engine's
`unbroadcast` step sums it back to each input's shape. The Tensor operators come after the ops.
"""
import numbers

import numpy as np

from ..autograd import Function
from ..parity.operands import lift, operands, tensor_power_operands
from ..parity.promotion import category, result_type
from ..tensor import Tensor, apply, tensor_method
from .tensor_power import PowTensor


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
    needs no case: numpy computes √a). A bool a (its exponent is then a bool too) stays bool,
    as torch's, where numpy's bool ** bool is int8."""
    if a.dtype == np.bool_:
        return (a ** p).astype(np.bool_)
    return 1 / np.sqrt(a) if p == -0.5 else a ** p


# ---- the Tensor's operators: a + b, with a scalar or array on either side ------------------
# Each lifts both sides to the dtype PyTorch gives the result (parity/operands.py), then runs
# one op: float32 * 0.5 stays float32, int / int is float32.

def _operators(op, name):
    def in_order(self, other):                  # self + other
        return apply(op(), *operands(self, other, self, op.op))

    def reflected(self, other):                 # other + self: a number or array on the left
        return apply(op(), *operands(other, self, self, op.op))
    tensor_method(f"__{name}__")(in_order)
    tensor_method(f"__r{name}__")(reflected)


for _op, _name in ((Add, "add"), (Sub, "sub"), (Mul, "mul"), (Div, "truediv")):
    _operators(_op, _name)


@tensor_method("__neg__")
def neg(self):
    if self.dtype == np.bool_:
        raise TypeError("-t on a bool tensor is not supported (as torch); use ~t to invert")
    return apply(Neg(), self)


@tensor_method("__pos__")
def pos(self):
    if self.dtype == np.bool_:
        raise TypeError("+t on a bool tensor is not supported (as torch)")
    return self


@tensor_method("__pow__")
def pow_method(self, exponent):
    if isinstance(exponent, Tensor):  # t ** Tensor: both differentiable (tensor_power.py)
        return apply(PowTensor(), *tensor_power_operands(self, exponent))
    if not isinstance(exponent, numbers.Number):
        raise TypeError(f"** takes a scalar exponent; got {type(exponent).__name__}")
    base = lift(self, result_type(self.data, exponent))  # int ** 0.5 is float32, as torch
    if category(base.dtype) < 2 and exponent < 0:
        raise ValueError(f"** {exponent}: integers to negative integer powers are not "
                         "allowed (as torch); use a float exponent")
    # a Python number, so that numpy does not widen: float32 ** np.float64(2) is float32
    exponent = exponent.item() if isinstance(exponent, np.generic) else exponent
    return apply(Pow(exponent), base)
