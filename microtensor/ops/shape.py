"""Ops that move elements without changing them: reshape, transpose/permute, indexing, cat
(notes 3.5: splitting and merging the heads is a reshape and a transpose).

Their backward moves the gradient back the same way: reshape it back, apply the
inverse permutation, or scatter it to the positions that were read.
"""
import numpy as np

from ..autograd import Function
from ..parity import dims
from ..parity.indexing import is_basic, plain_index, torch_steps
from ..parity.operands import lift
from ..parity.promotion import result_type
from ..parity.tensor_api import reversed_dims
from ..tensor import Tensor, apply, tensor_method


class Reshape(Function):
    """z = a viewed with a new shape;   ∂L/∂a = g reshaped back"""

    op = "reshape"

    def __init__(self, shape):
        super().__init__()
        self.new_shape = _sizes(shape)

    def forward(self, a):
        try:
            return a.reshape(self.new_shape)
        except ValueError:
            raise ValueError(
                f"cannot reshape a tensor of shape {a.shape} ({a.size} elements) "
                f"into {self.new_shape}") from None

    def backward(self, g):
        return g.reshape(self.input_shapes[0])


def _sizes(shape):
    """shape as a tuple of Python ints; ValueError unless each is an int >= 0 or one is -1."""
    if all(type(n) is int and n >= -1 for n in shape) and shape.count(-1) <= 1:
        return tuple(shape)  # the usual case, already plain ints: nothing to convert
    for n in shape:  # int(2.5) would quietly be 2
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < -1:
            raise ValueError(f"reshape: sizes must be ints >= 0 (or one -1); got {shape}")
    if list(shape).count(-1) > 1:
        raise ValueError(f"reshape: only one size can be -1 (inferred); got {shape}")
    return tuple(int(n) for n in shape)


class Permute(Function):
    """z = a with axes reordered by `dims`;   ∂L/∂a = g with the inverse order"""

    op = "permute"

    def __init__(self, dims, op="permute"):
        super().__init__()
        # the name drawn in pictures: transpose() builds a Permute too
        self.dims, self.op = tuple(dims), op

    def forward(self, a):
        if len(self.dims) != a.ndim:
            raise ValueError(f"{self.op}: dims {self.dims} are not a permutation of "
                             f"the {a.ndim} axes of a tensor of shape {a.shape}")
        return a.transpose(dims.permutation(self.dims, a.ndim, self.op))

    def backward(self, g):
        return g.transpose(np.argsort([d % g.ndim for d in self.dims]))


class GetItem(Function):
    """z = a[index] (slicing, ints, integer arrays, bool masks);   ∂L/∂a = g scattered to a[index]

    With integer arrays an element may be read several times; its gradient is then
    the sum of those reads, hence `np.add.at` (an unbuffered +=) in backward. Ints and
    slices apply before arrays, as PyTorch (`torch_steps`).
    """

    op = "getitem"

    def __init__(self, index):
        """index: what numpy indexing takes (slices, ints, integer arrays; no Tensors)."""
        super().__init__()
        # a[index] as PyTorch reads it, in two steps: a[basic] (ints, slices: a view), then
        # [index] (the arrays); basic is () when one step does (parity/indexing.py)
        self.basic, self.index = torch_steps(index)
        parts = self.index if isinstance(self.index, tuple) else (self.index,)
        # anything but ints, slices, None and ... reads by arrays (lists, arrays, a tuple in
        # the tuple): positions may repeat, so backward must add, not assign
        self.advanced = not all(map(is_basic, parts))

    def forward(self, a):
        try:
            return (a[self.basic] if self.basic else a)[self.index]
        except IndexError as error:
            raise IndexError(f"getitem: {error} (tensor shape {a.shape})") from None

    def backward(self, g):
        ga = np.zeros(self.input_shapes[0], dtype=g.dtype)
        view = ga[self.basic] if self.basic else ga  # basic indexing: a view; writes reach ga
        if self.advanced:
            np.add.at(view, self.index, g)
        else:  # basic slicing reads each element at most once: plain assignment suffices
            view[self.index] = g
        return ga


class Cat(Function):
    """z = [a₁, a₂, …] joined along `axis`;   ∂L/∂aᵢ = the slice of g that aᵢ filled"""

    op = "cat"

    def __init__(self, axis=0):
        super().__init__()
        self.axis = axis

    def forward(self, *arrays):
        self.axis = dims.dim(self.axis, arrays[0].ndim, self.op)
        return np.concatenate(arrays, axis=self.axis)

    def backward(self, g):
        sizes = [shape[self.axis] for shape in self.input_shapes]
        return tuple(np.split(g, np.cumsum(sizes)[:-1], axis=self.axis))


# ---- the Tensor methods, and cat --------------------------------------------------------------

@tensor_method("reshape")
def reshape_method(self, *new_shape):
    if not new_shape:
        raise TypeError("reshape() needs a shape, e.g. reshape(-1) or reshape(())")
    if len(new_shape) == 1 and isinstance(new_shape[0], (tuple, list, np.ndarray)):
        new_shape = tuple(new_shape[0])
    return apply(Reshape(new_shape), self)


@tensor_method("view")
def view_method(self, *shape):
    return self.reshape(*shape)


@tensor_method("transpose")
def transpose_method(self, dim0, dim1):
    n = self.data.ndim
    if n == 0 and dim0 in (0, -1) and dim1 in (0, -1):  # a 0-d tensor has dim 0, as torch
        return self.reshape(())
    axes = list(range(n))
    if not (-n <= dim0 < n and -n <= dim1 < n):  # both dims and the shape in one line
        raise IndexError(f"transpose: dims ({dim0}, {dim1}) are out of range for a tensor "
                         f"of shape {self.shape}")
    dim0, dim1 = dims.dim(dim0, n, "transpose"), dims.dim(dim1, n, "transpose")
    axes[dim0], axes[dim1] = axes[dim1], axes[dim0]
    return apply(Permute(axes, op="transpose"), self)


@tensor_method("permute")
def permute_method(self, *order):
    if not order:
        raise TypeError("permute() needs dims, e.g. permute(1, 0)")
    if len(order) == 1 and isinstance(order[0], (tuple, list)):
        order = tuple(order[0])
    return apply(Permute(order), self)


@tensor_method("_transpose_2d")
def transpose_2d_method(self):
    if self.ndim != 2:  # as torch: the dims reversed, with its deprecation warning
        return reversed_dims(self)
    return self.transpose(0, 1)


@tensor_method("__getitem__")
def getitem(self, index):
    return apply(GetItem(plain_index(index)), self)


def cat(tensors, axis=None, *, dim=None):
    """Join tensors along an existing axis (or torch's dim=; 0 by default), as `torch.cat`:
    the result's dtype is torch's promotion of theirs (int64 with float32 is float32); the
    gradient is split back to each. ValueError for no tensors, or tensors of 0 dims."""
    axis = dims.pick(axis, dim, "cat", default=0)
    if isinstance(tensors, (Tensor, np.ndarray)):  # iterating it would join its own rows
        raise TypeError("cat takes a sequence of tensors, e.g. cat([a, b]); got one "
                        f"{type(tensors).__name__}")
    tensors = [t if isinstance(t, Tensor) else Tensor(t) for t in tensors]
    if not tensors or any(t.ndim == 0 for t in tensors):
        raise ValueError(f"cat: needs one or more tensors with at least 1 dim; got shapes "
                         f"{[t.shape for t in tensors]}")
    dtype = result_type(*[t.data for t in tensors])
    return apply(Cat(axis), *[lift(t, dtype) for t in tensors])  # a cast stays on the graph
