"""The Tensor's operators and methods (`+ − × ÷ **`, `@`, exp, sum, reshape, indexing,
masked_fill, softmax, ...), mixed into Tensor (tensor.py): each turns scalars, masks and
indices into arrays, picks the result's dtype as PyTorch does (promotion.py), and runs one op
of `ops/` through `apply`.

Why a file of its own: this is plumbing, the same few lines per operator; the Tensor's core
(data, grad, `apply`, `backward`) reads first in tensor.py.
"""
import collections
import numbers

import numpy as np

from . import tensor as _tensor  # circular on purpose: Tensor and apply are looked up at call time
from .ops import arithmetic, masking, matmul, pointwise, reduction, shape, softmax
from .promotion import as_array, category, result_type


class TensorOperators:
    """Mixed into Tensor: its operators and computing methods."""

    # ---- arithmetic (numpy broadcasting; scalars and arrays on either side) ----------
    def _lift(self, other, dtype=None):
        """`other` as a Tensor of `dtype` (a constant is cast; one that requires grad is not)."""
        if not isinstance(other, _tensor.Tensor):
            if isinstance(other, (numbers.Number, np.generic)) and dtype is not None:
                # to dtype at once: no rounding
                return _tensor.Tensor._make(np.asarray(other, dtype=dtype))
            # a copy, as Tensor(array): an op may save it for backward, and the caller may
            # refill the array before then (one buffer over micro-batches)
            other = _tensor.Tensor._make(np.array(other) if isinstance(other, np.ndarray)
                                         else as_array(other, None))
        if dtype is None or other.dtype == dtype:
            return other
        if other.requires_grad:  # cast on the graph, so that its gradient still reaches it
            return _tensor.apply(pointwise.Cast(dtype), other)
        return _tensor.Tensor._make(other.data.astype(dtype))

    def _binary(self, op, a, b, true_divide=False):
        """a `op` b, where self is a or b; the other one may be a Tensor, array or scalar."""
        other = b if a is self else a
        a_data = a.data if isinstance(a, _tensor.Tensor) else a
        b_data = b.data if isinstance(b, _tensor.Tensor) else b
        # the two common cases first, that result_type would only confirm: the same dtype, or a
        # Python number with a floating tensor (a scalar never widens it: float32 * 0.5 is float32)
        if (other.dtype == self.dtype if isinstance(other, _tensor.Tensor)
                else isinstance(other, (int, float)) and self.dtype.kind == "f"):
            dtype = self.dtype
        else:
            dtype = result_type(a_data, b_data)
        if op is arithmetic.Sub and np.bool_ in (result_type(a_data), result_type(b_data)):
            raise TypeError("-: subtraction with a bool operand is not supported (as in "
                            "PyTorch); cast the mask first, e.g. mask.data.astype(np.int64)")
        if true_divide and category(dtype) < 2:  # int / int is float32 in PyTorch, not float64
            dtype = np.dtype(np.float32)
        return _tensor.apply(op(), self._lift(a, dtype), self._lift(b, dtype))

    def __add__(self, other):
        return self._binary(arithmetic.Add, self, other)

    def __radd__(self, other):
        return self._binary(arithmetic.Add, other, self)

    def __sub__(self, other):
        return self._binary(arithmetic.Sub, self, other)

    def __rsub__(self, other):
        return self._binary(arithmetic.Sub, other, self)

    def __mul__(self, other):
        return self._binary(arithmetic.Mul, self, other)

    def __rmul__(self, other):
        return self._binary(arithmetic.Mul, other, self)

    def __truediv__(self, other):
        return self._binary(arithmetic.Div, self, other, true_divide=True)

    def __rtruediv__(self, other):
        return self._binary(arithmetic.Div, other, self, true_divide=True)

    def __neg__(self):
        if self.dtype == np.bool_:
            raise TypeError("-t on a bool tensor is not supported (as torch); use ~t to invert")
        return _tensor.apply(arithmetic.Neg(), self)

    def __pos__(self):
        if self.dtype == np.bool_:
            raise TypeError("+t on a bool tensor is not supported (as torch)")
        return self

    def __abs__(self):
        if self.dtype == np.bool_:
            raise TypeError("abs() of a bool tensor is not supported (as torch)")
        return _tensor.apply(pointwise.Abs(), self)

    abs = __abs__

    def __pow__(self, exponent):
        if not isinstance(exponent, numbers.Number):
            raise TypeError(f"** takes a scalar exponent; got {type(exponent).__name__}")
        base = self._lift(self, result_type(self.data, exponent))  # int ** 0.5 is float32, as torch
        if category(base.dtype) < 2 and exponent < 0:
            raise ValueError(f"** {exponent}: integers to negative integer powers are not "
                             "allowed (as torch); use a float exponent")
        # a Python number, so that numpy does not widen: float32 ** np.float64(2) is float32
        exponent = exponent.item() if isinstance(exponent, np.generic) else exponent
        return _tensor.apply(arithmetic.Pow(exponent), base)

    def __matmul__(self, other):
        return _matmul(self, self._lift(other))

    def __rmatmul__(self, other):
        return _matmul(self._lift(other), self)

    # ---- pointwise math ---------------------------------------------------------------
    def _floating(self):
        """self, or for a bool or integer tensor its float32 copy: exp(int) is float32 in
        PyTorch (numpy would give float64)."""
        if category(self.dtype) == 2:
            return self
        return _tensor.Tensor._make(self.data.astype(np.float32))

    def exp(self):
        return _tensor.apply(pointwise.Exp(), self._floating())

    def log(self):
        return _tensor.apply(pointwise.Log(), self._floating())

    def sqrt(self):
        return _tensor.apply(pointwise.Sqrt(), self._floating())

    def tanh(self):
        return _tensor.apply(pointwise.Tanh(), self._floating())

    def relu(self):
        if self.dtype == np.bool_:
            raise TypeError("relu of a bool tensor is not supported (as torch)")
        return _tensor.apply(pointwise.ReLU(), self)

    # ---- reductions (axis: None, an int or a tuple; torch's dim= and keepdim= work too) -----
    def sum(self, axis=None, keepdims=False, *, dim=None, keepdim=None):
        return _tensor.apply(reduction.Sum(*_axis_args(axis, keepdims, dim, keepdim)), self)

    def mean(self, axis=None, keepdims=False, *, dim=None, keepdim=None):
        return _tensor.apply(reduction.Mean(*_axis_args(axis, keepdims, dim, keepdim)), self)

    def max(self, axis=None, keepdims=False, *, dim=None, keepdim=None):
        """max(axis=) (numpy's name): the largest values, torch's amax (ties share the
        gradient). max(dim=) (torch's name): torch's named tuple (values, indices) of
        `torch.max(x, dim)`, so that torch code `v, i = x.max(dim=1)` means the same here."""
        if dim is not None:
            if axis is not None:
                raise TypeError(f"give axis= or dim=, not both; got axis={axis!r}, dim={dim!r}")
            return _max_with_indices(self, dim, keepdims if keepdim is None else keepdim)
        return _tensor.apply(reduction.Max(*_axis_args(axis, keepdims, dim, keepdim)), self)

    # ---- shapes -----------------------------------------------------------------------
    def reshape(self, *new_shape):
        # not `*shape`: that name would hide the `ops.shape` module used below
        if not new_shape:
            raise TypeError("reshape() needs a shape, e.g. reshape(-1) or reshape(())")
        if len(new_shape) == 1 and isinstance(new_shape[0], (tuple, list, np.ndarray)):
            new_shape = tuple(new_shape[0])
        return _tensor.apply(shape.Reshape(new_shape), self)

    def view(self, *shape):
        return self.reshape(*shape)

    def transpose(self, dim0, dim1):
        n = self.data.ndim
        if n == 0 and dim0 in (0, -1) and dim1 in (0, -1):  # a 0-d tensor has dim 0, as torch
            return self.reshape(())
        axes = list(range(n))
        if not (-n <= dim0 < n and -n <= dim1 < n):
            raise IndexError(f"transpose: dims ({dim0}, {dim1}) are out of range for a tensor "
                             f"of shape {self.shape}")
        axes[dim0], axes[dim1] = axes[dim1], axes[dim0]
        return _tensor.apply(shape.Permute(axes, op="transpose"), self)

    def permute(self, *dims):
        if not dims:
            raise TypeError("permute() needs dims, e.g. permute(1, 0)")
        if len(dims) == 1 and isinstance(dims[0], (tuple, list)):
            dims = tuple(dims[0])
        return _tensor.apply(shape.Permute(dims), self)

    def _transpose_2d(self):
        if self.ndim != 2:
            raise ValueError(f".T is for 2-D tensors; got shape {self.shape}: use transpose()")
        return self.transpose(0, 1)

    def __getitem__(self, index):
        return _tensor.apply(shape.GetItem(self._index(index)), self)

    @staticmethod
    def _index(index):
        """index with each Tensor in it (ids, a bool mask) as its array, for numpy.

        A 0-d integer Tensor is an int. A list holding sequences, slices, None or ... is a
        tuple of indices, as in PyTorch
        (t[[[0, 1], [1, 0]]] is t[[0, 1], [1, 0]]); numpy would read it as one array index.
        """
        def plain(p):
            if isinstance(p, _tensor.Tensor):  # a 0-d integer tensor is an int, as torch's: numpy
                # would read a 0-d array as an array index and move its dims first
                return int(p.data) if p.ndim == 0 and category(p.dtype) == 1 else p.data.copy()
            return p.copy() if isinstance(p, np.ndarray) else p  # kept for backward: a copy
        if isinstance(index, list) and any(
                isinstance(p, (list, tuple, slice, _tensor.Tensor, np.ndarray)) or p is None
                or p is Ellipsis for p in index):
            index = tuple(index)
        # a tuple index stays a tuple and a single one stays single, as the caller wrote it
        return tuple(map(plain, index)) if isinstance(index, tuple) else plain(index)

    # ---- attention building blocks ----------------------------------------------------
    def masked_fill(self, mask, value):
        """Replace entries where `mask` is True (blocked) by `value`; mask broadcasts.

        mask: a boolean Tensor or numpy array; TypeError for any other dtype.
        """
        mask = np.array(mask.data if isinstance(mask, _tensor.Tensor) else mask)  # kept: a copy
        if mask.dtype != np.bool_:
            raise TypeError(f"mask must be boolean (True = blocked); got dtype {mask.dtype}. "
                            "For an additive float mask add it to the scores instead")
        value = value.item() if isinstance(value, _tensor.Tensor) else value
        if not isinstance(value, (numbers.Number, np.generic)):
            raise TypeError(f"masked_fill: value must be a number; got {type(value).__name__}")
        if category(self.dtype) == 1 and not np.isfinite(value):  # as torch: no int for −inf
            raise ValueError(f"masked_fill: value {value} cannot be stored in a {self.dtype} "
                             "tensor")
        return _tensor.apply(masking.MaskedFill(mask, value), self)

    def softmax(self, axis=-1, *, dim=None):
        return _tensor.apply(softmax.Softmax(_axis_args(axis, False, dim, None)[0]),
                             self._float_only())

    def log_softmax(self, axis=-1, *, dim=None):
        return _tensor.apply(softmax.LogSoftmax(_axis_args(axis, False, dim, None)[0]),
                     self._float_only())

    def _float_only(self, op=None):
        """self, or TypeError for bool and integer tensors (PyTorch refuses them in softmax,
        log_softmax and layer_norm: their results are not of the input's kind)."""
        if category(self.dtype) < 2:
            raise TypeError(f"{op or 'softmax'}: needs a floating-point tensor; got dtype "
                            f"{self.dtype}")
        return self



def _matmul(a, b):
    if "b" in (a.data.dtype.kind, b.data.dtype.kind):  # bool
        raise TypeError("@ of bool tensors is not supported (as torch); cast to int first")
    return _tensor.apply(matmul.MatMul(), a, b)





MaxResult = collections.namedtuple("max", ["values", "indices"])  # torch.return_types.max


def _max_with_indices(x, dim, keepdim):
    """torch.max(x, dim): (values, int64 indices of the first largest entry along dim).

    The values are the entries at the indices, picked by indexing, so the gradient goes to
    that one entry (as torch), not shared between ties as amax's.
    """
    if isinstance(dim, bool) or not isinstance(dim, (int, np.integer)):
        raise TypeError(f"max(dim=): dim must be one int (torch's max(dim) returns values and "
                        f"indices); got {dim!r}; for several axes use max(axis=...)")
    if not -max(x.ndim, 1) <= dim < max(x.ndim, 1):
        raise IndexError(f"max(dim={dim}): out of range for a tensor of {x.ndim} dims")
    if x.ndim == 0:
        return MaxResult(x.reshape(()), _tensor.Tensor(np.array(0)))
    axis = int(dim) % x.ndim
    if x.shape[axis] == 0:
        raise IndexError(f"max(dim={dim}): the dim has size 0, it has no largest entry "
                         f"(shape {x.shape})")
    idx = x.data.argmax(axis=axis, keepdims=True)                # first largest, as torch
    where = list(np.indices(idx.shape, sparse=True))
    where[axis] = idx
    values = x[tuple(where)]                                     # keepdim shape
    if not keepdim:
        values = values.reshape(values.shape[:axis] + values.shape[axis + 1:])
        idx = idx.squeeze(axis)
    return MaxResult(values, _tensor.Tensor(idx.astype(np.int64)))


def _axis_args(axis, keepdims, dim, keepdim):
    """(axis, keepdims) from numpy's names or PyTorch's (dim=, keepdim=), not both."""
    if dim is not None:
        if axis is not None and axis != -1:
            raise TypeError(f"give axis= or dim=, not both; got axis={axis!r}, dim={dim!r}")
        axis = dim
    return axis, keepdims if keepdim is None else keepdim

