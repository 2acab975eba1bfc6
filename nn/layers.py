"""The layers the notes name, Linear (3.1: Q = X W_Q), Embedding and LayerNorm (3.6), and
Dropout (not in the notes), each a thin Module around the ops of its formula (Linear:
x @ weight + bias), initialised as PyTorch's defaults.
Argument checks: nn/layer_checks.py; ReLU, GELU: nn/activations.py.
"""
import math

import numpy as np

import microtensor.functional as F
from microtensor import random

from .layer_checks import check_layer_norm, check_linear_input, check_sizes
from .module import Module, Parameter


class Linear(Module):
    """y = x @ weight + bias: x [..., in_features] -> y [..., out_features], as the notes'
    X [T, D] @ W_Q [D, d_k] -> Q [T, d_k]. weight [in_features, out_features] (torch's
    transposed), float32, U(−1/√in, 1/√in)."""

    def __init__(self, in_features, out_features, bias=True):
        super().__init__()
        check_sizes("Linear", in_features=in_features, out_features=out_features)
        self.in_features, self.out_features = in_features, out_features
        bound = 1 / math.sqrt(in_features)
        self.weight = Parameter(_uniform((in_features, out_features), bound))
        self.bias = Parameter(_uniform((out_features,), bound)) if bias else None

    def forward(self, x):
        x = check_linear_input(self, x)                     # a float Tensor [..., in_features]
        y = x @ self.weight                                 # [..., out_features]
        return y + self.bias if self.bias is not None else y


def _uniform(shape, bound):
    return random.generator().uniform(-bound, bound, size=shape).astype(np.float32)


class Embedding(Module):
    """A lookup table: ids [...] (integers) -> weight[ids] [..., embedding_dim];
    weight [num_embeddings, embedding_dim] float32, N(0, 1) as PyTorch."""

    def __init__(self, num_embeddings, embedding_dim):
        super().__init__()
        check_sizes("Embedding", num_embeddings=num_embeddings, embedding_dim=embedding_dim)
        self.num_embeddings, self.embedding_dim = num_embeddings, embedding_dim
        self.weight = Parameter(
            random.generator().standard_normal((num_embeddings, embedding_dim)).astype(np.float32))

    def forward(self, ids):
        return F.embedding(ids, self.weight)  # ops/embedding.py's op, on weight


class LayerNorm(Module):
    """(x − mean) / √(var + eps) over the trailing dims `normalized_shape` (to the op, one dim of
    n = their product), × weight (ones) + bias (zeros): x [..., *normalized_shape] -> the same
    shape (Ba et al. 2016; 3.6). bias=False: no shift (nanoGPT); elementwise_affine=False: none."""

    def __init__(self, normalized_shape, eps=1e-5, elementwise_affine=True, bias=True):
        super().__init__()
        shape = check_layer_norm(normalized_shape, eps)     # a tuple
        self.normalized_shape, self.eps = shape, eps
        affine = bool(elementwise_affine)
        self.weight = Parameter(np.ones(shape, dtype=np.float32)) if affine else None
        self.bias = Parameter(np.zeros(shape, dtype=np.float32)) if affine and bias else None

    def forward(self, x):
        # ops/layer_norm.py's op, with the trailing dims folded into one row of n
        return F.layer_norm(x, self.normalized_shape, self.weight, self.bias, self.eps)


class Dropout(Module):
    """Training: zero each element with probability p, scale the rest by 1/(1−p); eval: x."""

    def __init__(self, p=0.5):
        super().__init__()
        self.p = F.check_probability(p, "Dropout")

    def forward(self, x):
        return F.dropout(x, self.p, self.training)
