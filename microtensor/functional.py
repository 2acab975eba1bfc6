"""The functional forms of the ops (`import microtensor.functional as F`), as `torch.nn.functional`.

A namespace only: each function is written once, with its argument checks, in
parity/surface/ (the ops they run, with their formulas, forward and backward, are in ops/).
"""
from .parity.arguments import check_probability
from .parity.surface.layer_norm import layer_norm, normalized_shape_tuple
from .parity.surface.masking import masked_fill
from .parity.surface.nn_functional import cross_entropy, dropout, embedding
from .parity.surface.pointwise import gelu, relu
from .parity.surface.softmax import log_softmax, softmax

__all__ = ["check_probability", "cross_entropy", "dropout", "embedding", "gelu", "layer_norm",
           "log_softmax", "masked_fill", "normalized_shape_tuple", "relu", "softmax"]
