"""The functional forms of the ops (`import microtensor.functional as F`), as `torch.nn.functional`.

A namespace only: each function is defined in its op's file in ops/, beside the op it runs
(its formula, forward and backward there).
"""
from .ops.dropout import dropout
from .ops.embedding import embedding
from .ops.layer_norm import layer_norm, normalized_shape_tuple
from .ops.loss import cross_entropy
from .ops.masking import masked_fill
from .ops.pointwise import gelu, relu
from .ops.softmax import log_softmax, softmax
from .parity.arguments import check_probability

__all__ = ["check_probability", "cross_entropy", "dropout", "embedding", "gelu", "layer_norm",
           "log_softmax", "masked_fill", "normalized_shape_tuple", "relu", "softmax"]
