"""Python's protocols on a Tensor, answered as `torch.Tensor` answers them (comparisons, truth,
len, iteration, `in`, hash, int/float, format, in-place operators, item assignment, copy).

Why a file of its own: `object` gives every class an answer to each of these, and the
answers lie for an array: `t == 0` would be identity (False), `bool(t)` always True, and
`t += 1` would quietly make a new tensor while an alias keeps the old values. So each is
written out here, or refused with one clear line; tests/microtensor/test_protocols.py walks
Python's data-model names and holds that none is left to `object`.
Comparisons and bitwise operators carry no gradient, as in PyTorch. In-place writes go into
the tensor's one array and count in its version (shared with its views), which backward
checks: a graph that saved the array refuses to run on changed values, as torch's does.
"""
import numbers
import operator

import numpy as np

from .. import grad_mode
from ..tensor import Tensor
from .indexing import plain_index, torch_steps
from .promotion import category, result_type
from .scalars import check_item_assignment, wrapped

_SCALARS = (numbers.Number, np.generic)


def _operand(other):
    """other's array, or None for what no elementwise operator takes (None, str, objects)."""
    if isinstance(other, Tensor):
        return other.data
    if isinstance(other, _SCALARS):
        return other  # a scalar stays one: it never widens the result (promotion.py)
    if isinstance(other, (np.ndarray, list, tuple)):
        array = np.asarray(other)
        return array if array.dtype.kind in "biuf" else None
    return None


class TensorProtocols:
    """Every name here answers one of Python's protocols; `install` puts them on Tensor."""

    __array_priority__ = 1000  # numpy's older paths defer to Tensor's reflected operators
    __hash__ = object.__hash__  # by identity, as torch (defining __eq__ would unset it)
    __array_ufunc__ = None  # makes `ndarray + Tensor` call Tensor.__radd__, not numpy's add

    def __array__(self, dtype=None, copy=None):
        """The data, no graph: np.array(tensor) copies, np.asarray(tensor) shares (as torch)."""
        if copy is False and dtype is not None and np.dtype(dtype) != self.dtype:
            raise ValueError(f"np.asarray(tensor, copy=False): a {self.dtype} tensor cannot "
                             f"become {np.dtype(dtype)} without a copy")
        data = self.data if dtype is None else self.data.astype(dtype, copy=False)
        return data.copy() if copy and data is self.data else data

    # ---- comparisons: elementwise, a bool Tensor without gradient ---------------------
    def _elementwise(self, other, fn, reflected=False, integers_only=None):
        """fn(self, other) on the arrays, both first cast to PyTorch's result dtype."""
        b = _operand(other)
        if b is None:
            return NotImplemented  # Python then answers == by identity and refuses <, as torch
        a = self.data
        if reflected:
            a, b = b, a
        dtype = result_type(a, b)
        if integers_only and category(dtype) == 2:
            raise TypeError(f"{integers_only}: only bool and integer tensors; got dtype {dtype}")
        return Tensor._make(np.asarray(fn(wrapped(a, dtype), wrapped(b, dtype))))  # ints wrap

    def __eq__(self, other):
        return self._elementwise(other, np.equal)

    def __ne__(self, other):
        return self._elementwise(other, np.not_equal)

    def __lt__(self, other):
        return self._elementwise(other, np.less)

    def __le__(self, other):
        return self._elementwise(other, np.less_equal)

    def __gt__(self, other):
        return self._elementwise(other, np.greater)

    def __ge__(self, other):
        return self._elementwise(other, np.greater_equal)

    # ---- bitwise: bool masks (`causal | padding`) and integers, as torch --------------
    def __and__(self, other):
        return self._elementwise(other, np.bitwise_and, integers_only="&")

    def __rand__(self, other):
        return self._elementwise(other, np.bitwise_and, True, integers_only="&")

    def __or__(self, other):
        return self._elementwise(other, np.bitwise_or, integers_only="|")

    def __ror__(self, other):
        return self._elementwise(other, np.bitwise_or, True, integers_only="|")

    def __xor__(self, other):
        return self._elementwise(other, np.bitwise_xor, integers_only="^")

    def __rxor__(self, other):
        return self._elementwise(other, np.bitwise_xor, True, integers_only="^")

    def __invert__(self):
        if category(self.dtype) == 2:
            raise TypeError(f"~: only bool and integer tensors; got dtype {self.dtype}")
        return Tensor._make(np.invert(self.data))  # logical not on bool, as torch

    # `//`, `%`, `<<`, `>>` and `other ** t` are not ops of this engine: refused in one line
    def _refuse(self, *_, symbol):
        raise TypeError(f"{symbol} is not supported on microtensor Tensors (PyTorch has it); "
                        "compute it on t.data with numpy, or from the ops that exist")

    def __floordiv__(self, o):
        return self._refuse(symbol="//")

    __rfloordiv__ = __ifloordiv__ = __floordiv__

    def __mod__(self, o):
        return self._refuse(symbol="%")

    __rmod__ = __imod__ = __mod__

    def __lshift__(self, o):
        return self._refuse(symbol="<<")

    __rlshift__ = __ilshift__ = __lshift__

    def __rshift__(self, o):
        return self._refuse(symbol=">>")

    __rrshift__ = __irshift__ = __rshift__

    def __rpow__(self, o):
        return self._refuse(symbol="number ** tensor")

    # ---- one element as a Python value -------------------------------------------------
    def _one(self, what):
        if self.data.size != 1:  # ValueError, as torch
            raise ValueError(f"{what} needs a tensor with one element; got shape {self.shape}")
        return self.data.item()

    def __bool__(self):
        if self.data.size != 1:  # RuntimeError, as torch: `if t:` of many values has no meaning
            raise RuntimeError(f"bool() of a tensor with {self.data.size} values is ambiguous "
                               f"(shape {self.shape}): ask t.data.any() or t.data.all()")
        return bool(self.data.item())

    def __int__(self):
        return int(self._one("int()"))

    def __float__(self):
        return float(self._one("float()"))

    def __complex__(self):
        return complex(self._one("complex()"))

    def __index__(self):
        """A one-element integer tensor as a list index or a size, as torch (not a float)."""
        if category(self.dtype) == 2 or self.data.size != 1:
            raise TypeError(f"only integer tensors of a single element can be converted to an "
                            f"index; got dtype {self.dtype}, shape {self.shape}")
        return operator.index(self.data.item())

    def __format__(self, spec):
        """f"{t:.3f}" formats a 0-d tensor's value; other tensors take no format spec (torch)."""
        if self.ndim == 0:
            return format(self.data.item(), spec)
        if spec:
            raise TypeError(f"unsupported format string {spec!r} for a tensor of shape "
                            f"{self.shape}: format t.item() (one element) or t.data")
        return str(self)

    # ---- a container along dim 0 -------------------------------------------------------
    def __len__(self):
        if self.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self.shape[0]

    def __iter__(self):
        """The rows along dim 0, each a Tensor on the graph (as torch's unbind)."""
        if self.ndim == 0:
            raise TypeError("iteration over a 0-d tensor")
        return (self[i] for i in range(self.shape[0]))

    def __reversed__(self):
        return self if self.ndim == 0 else self[::-1]  # torch.flip(t, [0])

    def __contains__(self, element):
        """`x in t`: does any element equal x (torch's (element == t).any())."""
        if not isinstance(element, (Tensor, *_SCALARS)):
            raise TypeError(f"`in` on a Tensor takes a Tensor or a number; got "
                            f"{type(element).__name__}")
        return bool(np.any((self == element).data))

    # ---- writing in place: allowed where nothing on a graph can see it -----------------
    def _check_writable(self, what, value=None):
        """RuntimeError if the write would go behind autograd's back (as torch for a leaf)."""
        if grad_mode.is_grad_enabled() and (
                self.requires_grad or getattr(value, "requires_grad", False)):
            raise RuntimeError(
                f"{what} on a tensor that requires grad would go behind autograd: write "
                "x = x + y (a new tensor), or do it under microtensor.no_grad()")

    def _in_place(self, symbol, method, other):
        self._check_writable(f"{symbol}=", other)
        with grad_mode.no_grad():
            result = getattr(Tensor, method)(self, other).data
        if category(result.dtype) > category(self.dtype):
            raise RuntimeError(f"{symbol}=: result type {result.dtype} can't be cast to the "
                               f"tensor's dtype {self.dtype}")
        if result.shape != self.shape:
            raise RuntimeError(f"{symbol}=: the result's shape {result.shape} is not the "
                               f"tensor's shape {self.shape}")
        self.data[...] = result  # the same array: views, detach() and numpy() see it, as torch
        self._version_box()[0] += 1  # and a graph that saved it refuses backward (parity/graph.py)
        return self

    def __iadd__(self, other):
        return self._in_place("+", "__add__", other)

    def __isub__(self, other):
        return self._in_place("-", "__sub__", other)

    def __imul__(self, other):
        return self._in_place("*", "__mul__", other)

    def __itruediv__(self, other):
        return self._in_place("/", "__truediv__", other)

    def __ipow__(self, other):
        return self._in_place("**", "__pow__", other)

    def __iand__(self, other):
        return self._in_place("&", "__and__", other)

    def __ior__(self, other):
        return self._in_place("|", "__or__", other)

    def __ixor__(self, other):
        return self._in_place("^", "__xor__", other)

    def __setitem__(self, index, value):
        """t[index] = value, cast to t's dtype (as torch); same rule as the in-place operators."""
        self._check_writable("item assignment", value)
        array = value.data if isinstance(value, Tensor) else np.asarray(value)
        if array.dtype.kind not in "biuf":
            raise TypeError(f"t[...] = value: value must be numbers; got {type(value).__name__}")
        if isinstance(value, _SCALARS):  # a number must fit, as torch (a tensor is cast)
            check_item_assignment(value, self.dtype)
        basic, advanced = torch_steps(plain_index(index))
        target = self.data[basic] if basic else self.data  # a view: the write reaches self
        target[advanced] = array
        self._version_box()[0] += 1  # as in _in_place

    def __delitem__(self, index):
        raise TypeError("del t[...]: a tensor's shape is fixed; build a new one with indexing")

    # ---- copies and pickling: the data, never the graph --------------------------------
    def __deepcopy__(self, memo):
        """A new leaf with copied data, grad and requires_grad (torch: graph leaves only)."""
        if not self.is_leaf:
            raise RuntimeError("only leaf tensors support deepcopy (as torch); "
                               "deepcopy t.detach() instead")
        new = type(self).__new__(type(self))
        new.__setstate__(self.__getstate__())
        memo[id(self)] = new
        return new

    def __getstate__(self):
        return {"data": self.data.copy(), "grad": None if self.grad is None else self.grad.copy(),
                "requires_grad": self.requires_grad, "name": self.name}

    def __setstate__(self, state):
        self.data, self.grad, self.name = state["data"], state["grad"], state["name"]
        self._requires_grad = state["requires_grad"]


def install(cls):
    """Put each protocol of TensorProtocols on `cls` (Tensor): one attribute each, as if
    written in its class body."""
    for name, value in vars(TensorProtocols).items():
        if name not in ("__module__", "__qualname__", "__doc__", "__dict__", "__weakref__"):
            setattr(cls, name, value)


install(Tensor)
