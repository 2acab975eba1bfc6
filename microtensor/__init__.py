"""microtensor: a reverse-mode tensor autograd engine on numpy, the base of the nn and models
packages.

Read it in this order: `autograd.py` (the graph node `Function`, un-broadcasting, `backward()`),
`tensor.py` (the Tensor and `apply`), then `ops/` (each op's formula, forward and backward side
by side, and its Tensor method in one line: arithmetic.py, matmul.py, then any order). Off the
reading path: `parity/` (what makes it PyTorch-exact: each op's surface of argument checks and
torch's forms in `parity/surface/`, dtype promotion, the dims normaliser, indexing rules,
Python's protocols, version counters, the pictures' metadata), `grad_mode.py` (`no_grad`),
`ops/fast.py` and `ops/rows.py` (speed), `save_less.py` (memory), `functional.py` (the
namespace of the functional forms), `factories.py` (`zeros`), `random.py` (the one seeded
generator), `gradcheck.py` (how the tests check every backward), the observers `hooks.py`,
`scope.py` and `profiler.py`, and `memory.py` (an allocator setting, not maths).
Importing it changes no process-wide setting (see `memory.keep_freed_memory`).
"""
from . import (
    functional,
    hooks,
    memory,
    ops,  # noqa: F401  (attaches each op's plain Tensor methods)
)
from .autograd import Function
from .factories import zeros
from .grad_mode import is_grad_enabled, no_grad
from .gradcheck import GradcheckError, gradcheck
from .parity import (  # noqa: F401  (attach torch.Tensor's protocols, repr, item)
    protocols,
    surface,  # noqa: F401  (wraps each op's method in PyTorch's argument rules)
    tensor_api,
)
from .parity.surface.shape import cat
from .parity.versions import writing
from .profiler import profile
from .random import manual_seed, randn
from .tensor import Tensor, apply

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
