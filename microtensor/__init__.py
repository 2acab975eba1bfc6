"""microtensor: a reverse-mode tensor autograd engine on numpy, the base of the nn and models
packages.

Read it in this order: `tensor.py` (the Tensor and `apply`), `promotion.py` (its dtype
rules, PyTorch's), `autograd.py` (the graph node `Function` and the backward pass), `ops/`
(each op's forward and backward side by side: arithmetic.py, matmul.py, then any order),
`functional.py` (the same ops as functions), `factories.py` (`zeros`, `cat`), `random.py`
(the one seeded generator), `gradcheck.py` (how the tests check every backward), then the
observers `hooks.py`, `scope.py` and `profiler.py`, and last `memory.py` (an allocator
setting, not maths).
Importing it changes no process-wide setting (see `memory.keep_freed_memory`).
"""
from . import functional, hooks, memory
from .autograd import Function, is_grad_enabled, no_grad
from .factories import cat, zeros
from .gradcheck import GradcheckError, gradcheck
from .profiler import profile
from .random import manual_seed, randn
from .tensor import Tensor, apply
from .writing import writing

__all__ = [
    "Function",
    "GradcheckError",
    "Tensor",
    "apply",
    "cat",
    "functional",
    "gradcheck",
    "hooks",
    "is_grad_enabled",
    "manual_seed",
    "memory",
    "no_grad",
    "profile",
    "randn",
    "writing",
    "zeros",
]
