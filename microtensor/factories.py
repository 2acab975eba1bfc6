"""Functions that build tensors from shapes: `zeros` (PyTorch's name); `cat` is in ops/shape.py."""
import numpy as np

from .tensor import Tensor


def zeros(*shape, requires_grad=False, dtype="float32"):
    """A tensor of zeros, float32 unless `dtype` says otherwise; shape as ints or one tuple."""
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = tuple(shape[0])
    return Tensor(np.zeros(shape, dtype=dtype), requires_grad=requires_grad)
