"""Functions that build tensors from shapes or from other tensors: `zeros` and `cat` (PyTorch's
names)."""
import numpy as np

from .ops.shape import Cat
from .tensor import Tensor, apply


def zeros(*shape, requires_grad=False, dtype="float32"):
    """A tensor of zeros, float32 unless `dtype` says otherwise; shape as ints or one tuple."""
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = tuple(shape[0])
    return Tensor(np.zeros(shape, dtype=dtype), requires_grad=requires_grad)


def cat(tensors, axis=0, *, dim=None):
    """Join tensors along an existing axis (or torch's dim=), as `torch.cat`; the gradient is
    split back to each. ValueError for no tensors, or tensors of 0 dims."""
    axis = axis if dim is None else dim
    if isinstance(tensors, (Tensor, np.ndarray)):  # iterating it would join its own rows
        raise TypeError("cat takes a sequence of tensors, e.g. cat([a, b]); got one "
                        f"{type(tensors).__name__}")
    tensors = [t if isinstance(t, Tensor) else Tensor(t) for t in tensors]
    if not tensors or any(t.ndim == 0 for t in tensors):
        raise ValueError(f"cat: needs one or more tensors with at least 1 dim; got shapes "
                         f"{[t.shape for t in tensors]}")
    return apply(Cat(axis), *tensors)
