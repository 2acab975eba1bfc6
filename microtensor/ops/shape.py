"""Ops that move elements without changing them: reshape, permute/transpose, indexing (notes
3.5: splitting and merging the heads is a reshape and a transpose; `cat` is in ops/cat.py).
Their backward moves the gradient back: reshaped back, permuted back, added where it was read.
"""
import numpy as np

from ..autograd import Function
from ..tensor import Tensor, apply
from .fast import scatter


class Reshape(Function):
    """z = a with a new shape (a view where numpy can);   ∂L/∂a = g reshaped back"""

    op = "reshape"

    def __init__(self, shape):
        self.new_shape = tuple(map(int, shape))

    def forward(self, a):
        return a.reshape(self.new_shape)

    def backward(self, g):
        return g.reshape(self.input_shapes[0])


class Permute(Function):
    """z = a with axes reordered by `dims`;   ∂L/∂a = g with the inverse order"""

    op = "permute"

    def __init__(self, dims, op="permute"):
        self.dims, self.op = tuple(dims), op  # transpose() is a Permute drawn as "transpose"

    def forward(self, a):
        return a.transpose(self.dims)

    def backward(self, g):
        return g.transpose(np.argsort(self.dims))  # argsort of a permutation: its inverse


class GetItem(Function):
    """z = a[index] (slices, ints, integer arrays, bool masks);   ∂L/∂a = g added at a[index]"""

    op = "getitem"

    def __init__(self, index):
        self.index = index  # what numpy indexing takes: no Tensors

    def forward(self, a):
        return a[self.index]

    def backward(self, g):
        ga = np.zeros(self.input_shapes[0], dtype=g.dtype)
        return scatter(ga, self.index, g)  # np.add.at(ga, index, g): read twice, summed


def transpose(x, dim0, dim1):
    """x with dims dim0 and dim1 swapped: a Permute."""
    dims = list(range(x.ndim))
    dims[dim0], dims[dim1] = dims[dim1], dims[dim0]
    return apply(Permute(dims, op="transpose"), x)


# parity/surface/shape.py wraps these: torch's forms of shapes and dims (a tuple, negative), view
Tensor.reshape = lambda x, *shape: apply(Reshape(shape), x)
Tensor.permute = lambda x, *dims: apply(Permute(dims), x)
Tensor.transpose = transpose
Tensor.__getitem__ = lambda x, index: apply(GetItem(index), x)
