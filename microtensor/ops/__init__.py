"""The ops, one family per file: each a `Function` with forward and backward side by side under its
formula, then the Tensor methods (attached by `tensor_method`) and the functional forms that run
it, with their argument checks. Read arithmetic.py first, then matmul.py, then any order (notes
3.8 for the derivatives). Importing this package attaches every method to Tensor.
"""
from . import (
               arithmetic,
               dropout,
               embedding,
               layer_norm,
               loss,
               masking,
               matmul,
               pointwise,
               reduction,
               shape,
               softmax,
)

__all__ = ["arithmetic", "dropout", "embedding", "layer_norm", "loss", "masking", "matmul",
           "pointwise", "reduction", "shape", "softmax"]
