"""The layer beneath the core: what makes microtensor PyTorch-exact, off the reading path.

The core (autograd.py, tensor.py) enters it through named calls: `after_op` in `apply` (views
share a version counter, the pictures' metadata, forward hooks); `check_node`,
`check_gradient_count` and `after_node` in `backward` (saved arrays freed or changed in place
since forward, retained gradients, backward hooks, freeing); `loss_gradient` and
`check_requires_grad` (arguments checked); `named_error` (a forward's ValueError named) and
`GradModeDecorator` (`no_grad`'s decorator forms). The ops call the rest: `promotion` (torch's
dtype rules), `dims` (the one dims normaliser), `indexing` (torch's indexing order),
`arguments` (numbers, lists and arrays turned into Tensors). `protocols` and `tensor_api` give
the Tensor Python's data model and torch's repr, item() and the like; `versions` counts writes
(`microtensor.writing`); `erf` and `gelu_float32` are the numerics of GELU (exact in float64,
few-pass in float32).
"""
from .grad_mode import GradModeDecorator
from .gradient_argument import check_requires_grad, loss_gradient
from .graph import (
    NodeRecord,
    after_node,
    after_op,
    check_gradient_count,
    check_node,
    named_error,
)
from .summation import sum_as_torch

__all__ = ["GradModeDecorator", "NodeRecord", "after_node", "after_op", "check_gradient_count",
           "check_node", "check_requires_grad", "loss_gradient", "named_error", "sum_as_torch"]
