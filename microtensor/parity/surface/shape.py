"""The surface of reshape, view, transpose, permute, `.T`, indexing and `cat`: the shapes and dims
as torch takes them (a tuple or separate ints, negative dims, one -1; a 0-d tensor has dim 0), `.T`
of any dims (reversed, as torch), torch's indexing order (ints and slices before arrays,
parity/indexing.py; ints down to 0-d give a view, as torch, not numpy's scalar copy), and cat's
dtype promotion. Each error is one line naming the argument."""
import numpy as np

from ...ops.cat import Cat
from ...tensor import Tensor, apply
from .. import dims
from ..indexing import plain_index, torch_steps
from ..operands import lift
from ..promotion import result_type
from ..tensor_api import reversed_dims


def install(Tensor):
    plain_reshape, plain_permute = Tensor.reshape, Tensor.permute
    plain_transpose, plain_getitem = Tensor.transpose, Tensor.__getitem__

    def reshape(self, *new_shape):
        if not new_shape:
            raise TypeError("reshape() needs a shape, e.g. reshape(-1) or reshape(())")
        if len(new_shape) == 1 and isinstance(new_shape[0], (tuple, list, np.ndarray)):
            new_shape = tuple(new_shape[0])
        sizes = _sizes(new_shape)
        try:
            return plain_reshape(self, *sizes)
        except ValueError:  # numpy's, named by apply
            raise ValueError(f"cannot reshape a tensor of shape {self.shape} ({self.size} "
                             f"elements) into {sizes}") from None

    def transpose(self, dim0, dim1):
        n = self.ndim
        if n == 0 and dim0 in (0, -1) and dim1 in (0, -1):  # a 0-d tensor has dim 0, as torch
            return self.reshape(())
        if not (-n <= dim0 < n and -n <= dim1 < n):  # both dims and the shape in one line
            raise IndexError(f"transpose: dims ({dim0}, {dim1}) are out of range for a tensor "
                             f"of shape {self.shape}")
        return plain_transpose(self, dims.dim(dim0, n, "transpose"), dims.dim(dim1, n, "transpose"))

    def permute(self, *order):
        if not order:
            raise TypeError("permute() needs dims, e.g. permute(1, 0)")
        if len(order) == 1 and isinstance(order[0], (tuple, list)):
            order = tuple(order[0])
        if len(order) != self.ndim:
            raise ValueError(f"permute: dims {order} are not a permutation of "
                             f"the {self.ndim} axes of a tensor of shape {self.shape}")
        return plain_permute(self, *dims.permutation(order, self.ndim, "permute"))

    def transpose_2d(self):
        if self.ndim != 2:  # as torch: the dims reversed, with its deprecation warning
            return reversed_dims(self)
        return self.transpose(0, 1)

    def getitem(self, index):
        index = plain_index(index)
        parts = index if isinstance(index, tuple) else (index,)
        if len(parts) == self.ndim > 0 and all(
                isinstance(p, (int, np.integer)) and not isinstance(p, bool) for p in parts):
            index = (*parts, ...)  # numpy's a[1] is a scalar copy, a[1, ...] torch's 0-d view
        basic, advanced = torch_steps(index)  # a[index] is a[basic][advanced]
        try:
            return plain_getitem(plain_getitem(self, basic) if basic else self, advanced)
        except IndexError as error:
            raise IndexError(f"getitem: {error} (tensor shape {self.shape})") from None

    Tensor.reshape, Tensor.view = reshape, reshape
    Tensor.transpose, Tensor.permute, Tensor._transpose_2d = transpose, permute, transpose_2d
    Tensor.__getitem__ = getitem


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
    axis = dims.dim(axis, tensors[0].ndim, "cat")
    dtype = result_type(*[t.data for t in tensors])
    return apply(Cat(axis), *[lift(t, dtype) for t in tensors])  # a cast stays on the graph
