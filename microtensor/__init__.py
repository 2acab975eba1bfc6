"""microtensor: a reverse-mode tensor autograd engine on numpy, the base of the nn and models packages."""
from . import functional, memory
from .autograd import no_grad, is_grad_enabled
from .gradcheck import gradcheck, GradcheckError
from .ops.shape import Cat as _Cat
from .profiler import profile
from .random import manual_seed, randn
from .tensor import Tensor


memory.keep_freed_memory()


def cat(tensors, axis=0):
    """Join tensors along an existing axis (as `torch.cat`); gradients split back to each."""
    tensors = [t if isinstance(t, Tensor) else Tensor(t) for t in tensors]
    return _Cat(axis)(*tensors)


def zeros(*shape, requires_grad=False, dtype="float32"):
    """A float32 tensor of zeros."""
    import numpy as np
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = tuple(shape[0])
    return Tensor(np.zeros(shape, dtype=dtype), requires_grad=requires_grad)


__all__ = ["Tensor", "functional", "no_grad", "is_grad_enabled", "gradcheck", "GradcheckError",
           "manual_seed", "randn", "cat", "zeros", "profile"]
