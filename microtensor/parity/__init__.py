"""The layer beneath the core: what makes microtensor PyTorch-exact, off the reading path.

The core (autograd.py, tensor.py) enters it through named calls: `after_op` in `apply` (views
share a version counter, the pictures' metadata, forward hooks), `check_node` and `after_node`
in `backward` (saved arrays freed or changed in place since forward, retained gradients,
backward hooks, freeing), `loss_gradient` (backward's `grad` argument checked) and
`generator_without_grad` (`@no_grad` on a generator). The ops call the rest: `promotion`
(torch's dtype rules), `dims` (the one dims normaliser), `indexing` (torch's indexing order),
`arguments` (numbers, lists and arrays turned into Tensors). `protocols` gives the Tensor
Python's data model as torch answers it; `versions` counts writes (`microtensor.writing`);
`erf` and `gelu_float32` are the numerics of GELU (exact in float64, few-pass in float32).
"""
from .grad_mode import generator_without_grad
from .gradient_argument import loss_gradient
from .graph import NodeRecord, after_node, after_op, check_node

__all__ = ["NodeRecord", "after_node", "after_op", "check_node", "generator_without_grad",
           "loss_gradient"]
