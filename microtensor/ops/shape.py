"""Ops that move elements without changing them: reshape, transpose/permute, indexing, cat
(notes 3.5: splitting and merging the heads is a reshape and a transpose).

Their backward moves the gradient back the same way: reshape it back, apply the
inverse permutation, or scatter it to the positions that were read.
"""
import numpy as np

from ..autograd import Function


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
        if sorted(d % max(a.ndim, 1) for d in self.dims) != list(range(a.ndim)):
            raise ValueError(f"{self.op}: dims {self.dims} are not a permutation of "
                             f"the {a.ndim} axes of a tensor of shape {a.shape}")
        return a.transpose(self.dims)

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
        self.basic, self.index = torch_steps(index)
        parts = self.index if isinstance(self.index, tuple) else (self.index,)
        # anything but ints, slices, None and ... reads by arrays (lists, arrays, a tuple in
        # the tuple): positions may repeat, so backward must add, not assign
        self.advanced = not all(map(_is_basic, parts))

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
        return np.concatenate(arrays, axis=self.axis)

    def backward(self, g):
        sizes = [shape[self.axis] for shape in self.input_shapes]
        return tuple(np.split(g, np.cumsum(sizes)[:-1], axis=self.axis))


# ---- PyTorch's order of indexing, which GetItem follows ------------------------------------

def _is_basic(p):
    return isinstance(p, (int, np.integer, slice)) or p is None or p is Ellipsis


def torch_steps(index):
    """`index` as (basic, advanced): a[index] in PyTorch is a[basic][advanced].

    PyTorch applies ints, slices, None and ... first, then the arrays; numpy counts an int
    next to an array as an array, which moves the dims: x[0, :, [3, 1]] is [2, 3] in torch
    and the transpose in numpy. One step (basic = ()) unless both kinds are present.
    """
    parts = index if isinstance(index, tuple) else (index,)
    if all(map(_is_basic, parts)) or not any(
            isinstance(p, (int, np.integer)) and not isinstance(p, bool) for p in parts):
        return (), index
    basic, advanced = [], []
    for p in parts:
        if isinstance(p, (int, np.integer)) and not isinstance(p, bool):
            basic.append(p)  # its dim is gone after the first step
        elif p is Ellipsis:
            basic.append(p)
            advanced.append(p)
        elif _is_basic(p):  # a slice or None: applied first, kept whole in the second
            basic.append(p)
            advanced.append(slice(None))
        else:  # an array; a bool mask spans as many dims as it has
            array = np.asarray(p)
            basic += [slice(None)] * (array.ndim if array.dtype == np.bool_ else 1)
            advanced.append(p)
    return tuple(basic), tuple(advanced)
