"""Ops that move elements without changing them: reshape, transpose/permute, indexing, cat.

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
        for n in shape:  # int(2.5) would quietly be 2
            if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < -1:
                raise ValueError(f"reshape: sizes must be ints >= 0 (or one -1); got {shape}")
        if list(shape).count(-1) > 1:
            raise ValueError(f"reshape: only one size can be -1 (inferred); got {shape}")
        self.new_shape = tuple(int(n) for n in shape)

    def forward(self, a):
        try:
            return a.reshape(self.new_shape)
        except ValueError:
            raise ValueError(
                f"cannot reshape a tensor of shape {a.shape} ({a.size} elements) "
                f"into {self.new_shape}") from None

    def backward(self, g):
        return g.reshape(self.input_shapes[0])


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
    """z = a[index] (basic slicing or integer arrays);   ∂L/∂a = g scattered to a[index]

    With integer arrays an element may be read several times; its gradient is then
    the sum of those reads, hence `np.add.at` (an unbuffered +=) in backward.
    """

    op = "getitem"

    def __init__(self, index):
        """index: what numpy indexing takes (slices, ints, integer arrays; no Tensors)."""
        super().__init__()
        self.index = index
        parts = self.index if isinstance(self.index, tuple) else (self.index,)
        self.advanced = any(isinstance(p, (list, np.ndarray)) for p in parts)

    def forward(self, a):
        try:
            return a[self.index]
        except IndexError as error:
            raise IndexError(f"getitem: {error} (tensor shape {a.shape})") from None

    def backward(self, g):
        ga = np.zeros(self.input_shapes[0], dtype=g.dtype)
        if self.advanced:
            np.add.at(ga, self.index, g)
        else:  # basic slicing reads each element at most once: plain assignment suffices
            ga[self.index] = g
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
