"""microtensor: a reverse-mode tensor autograd engine on numpy, the base of the nn and models packages."""
from . import functional, memory
from .autograd import is_grad_enabled, no_grad
from .factories import cat, zeros
from .gradcheck import GradcheckError, gradcheck
from .profiler import profile
from .random import manual_seed, randn
from .tensor import Tensor

memory.keep_freed_memory()

__all__ = ["Tensor", "functional", "no_grad", "is_grad_enabled", "gradcheck", "GradcheckError",
           "manual_seed", "randn", "cat", "zeros", "profile"]
