"""Elementwise arithmetic `+ - * / ** neg` with numpy broadcasting (notes 3.8: each one's
backward; the residual of 3.6 is a `+`).

Each backward returns the gradient in the broadcast (output) shape; the engine's
`unbroadcast` step sums it back to each input's shape. The Tensor operators come after the ops:
they pick the result's dtype as PyTorch does (parity/promotion.py) and run one op.
"""
import numbers

import numpy as np

from ..autograd import Function
from ..parity.promotion import as_array, category, result_type
from ..tensor import Tensor, apply, tensor_method
from .pointwise import Cast


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


# ---- the Tensor's operators: scalars and arrays on either side ------------------------------

def lift(other, dtype=None):
    """`other` as a Tensor of `dtype` (a constant is cast; one that requires grad is not)."""
    if not isinstance(other, Tensor):
        if isinstance(other, (numbers.Number, np.generic)) and dtype is not None:
            return Tensor._make(np.asarray(other, dtype=dtype))  # to dtype at once: no rounding
        # a copy, as Tensor(array): an op may save it for backward, and the caller may
        # refill the array before then (one buffer over micro-batches)
        other = Tensor._make(np.array(other) if isinstance(other, np.ndarray)
                             else as_array(other, None))
    if dtype is None or other.dtype == dtype:
        return other
    if other._requires_grad:  # cast on the graph, so that its gradient still reaches it
        return apply(Cast(dtype), other)
    return Tensor._make(other.data.astype(dtype))


def _binary(op, a, b, self, true_divide=False):
    """a `op` b, where self is a or b; the other one may be a Tensor, array or scalar."""
    other = b if a is self else a
    a_data = a.data if isinstance(a, Tensor) else a
    b_data = b.data if isinstance(b, Tensor) else b
    # the two common cases first, that result_type would only confirm: the same dtype, or a
    # Python number with a floating tensor (a scalar never widens it: float32 * 0.5 is float32)
    if (other.dtype == self.dtype if isinstance(other, Tensor)
            else isinstance(other, (int, float)) and self.dtype.kind == "f"):
        dtype = self.dtype
    else:
        dtype = result_type(a_data, b_data)
    if op is Sub and np.bool_ in (result_type(a_data), result_type(b_data)):
        raise TypeError("-: subtraction with a bool operand is not supported (as in "
                        "PyTorch); cast the mask first, e.g. mask.data.astype(np.int64)")
    if true_divide and category(dtype) < 2:  # int / int is float32 in PyTorch, not float64
        dtype = np.dtype(np.float32)
    return apply(op(), lift(a, dtype), lift(b, dtype))


def _operators(op, name, true_divide=False):
    """Tensor.__name__ (self op other) and Tensor.__rname__ (other op self: Python calls it
    when the left operand is a number or an array)."""
    def in_order(self, other):
        return _binary(op, self, other, self, true_divide)

    def reflected(self, other):
        return _binary(op, other, self, self, true_divide)
    tensor_method(f"__{name}__")(in_order)
    tensor_method(f"__r{name}__")(reflected)


for _op, _name in ((Add, "add"), (Sub, "sub"), (Mul, "mul"), (Div, "truediv")):
    _operators(_op, _name, true_divide=_op is Div)


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
    if not isinstance(exponent, numbers.Number):
        raise TypeError(f"** takes a scalar exponent; got {type(exponent).__name__}")
    base = lift(self, result_type(self.data, exponent))  # int ** 0.5 is float32, as torch
    if category(base.dtype) < 2 and exponent < 0:
        raise ValueError(f"** {exponent}: integers to negative integer powers are not "
                         "allowed (as torch); use a float exponent")
    # a Python number, so that numpy does not widen: float32 ** np.float64(2) is float32
    exponent = exponent.item() if isinstance(exponent, np.generic) else exponent
    return apply(Pow(exponent), base)
