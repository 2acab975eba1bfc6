"""The ops, one family per file: each a `Function` with forward and backward side by side under its
formula, then one line each attaching its plain Tensor method. Read arithmetic.py first, then
matmul.py, then any order (notes 3.8 for the derivatives). Importing this package attaches every
method; parity/surface/ then wraps them with PyTorch's argument rules. Off the reading path:
`fast.py` and `rows.py` (speed), `cat.py`, `maximum.py`, `elementwise.py`, `log_softmax.py`,
`tensor_power.py` (`a ** b` of two Tensors), `tiled_attention.py`.
"""
from . import (
               arithmetic,
               cat,
               dropout,
               elementwise,
               embedding,
               layer_norm,
               log_softmax,
               loss,
               masking,
               matmul,
               maximum,
               pointwise,
               reduction,
               shape,
               softmax,
               tensor_power,
)

__all__ = ["arithmetic", "cat", "dropout", "elementwise", "embedding", "layer_norm", "log_softmax",
           "loss", "masking", "matmul", "maximum", "pointwise", "reduction", "shape", "softmax",
           "tensor_power"]
