"""The basic layers: Linear, Embedding, LayerNorm, Dropout, ReLU and GELU (notes 3.1: Q = X W_Q
is a Linear; 3.6: LayerNorm and the FFN's activations).

Each is a thin Module around microtensor.functional's ops.

Initialisation follows PyTorch's defaults, so a student comparing with PyTorch sees the
same distributions; models/gpt.py re-initialises its weights the GPT-2 way.
"""
import math
import numbers

import numpy as np

import microtensor.functional as F
from microtensor import Tensor, random

from .module import Module, Parameter


def _uniform(shape, bound):
    return random.generator().uniform(-bound, bound, size=shape).astype(np.float32)


def _check_sizes(layer, **sizes):
    """ValueError naming `layer` unless every size is a positive int (bool is not a size)."""
    for name, value in sizes.items():
        if not isinstance(value, (int, np.integer)) or isinstance(value, bool) or value < 1:
            raise ValueError(f"{layer}: {name} must be a positive int; got {value!r}")


class Linear(Module):
    """y = x @ weight + bias, with weight [in_features, out_features], as the notes' Q = X W_Q.

    In the notes' shapes: X [T, D] @ W_Q [D, d_k] -> Q [T, d_k].

    Note: this is the transpose of PyTorch's `nn.Linear.weight`, which is
    [out_features, in_features] with y = x Wᵀ + b.
    Shapes: x [..., in_features] -> y [..., out_features]; float32 parameters,
    initialised U(−1/√in, 1/√in) as PyTorch.
    """

    def __init__(self, in_features, out_features, bias=True):
        super().__init__()
        _check_sizes("Linear", in_features=in_features, out_features=out_features)
        self.in_features, self.out_features = in_features, out_features
        bound = 1 / math.sqrt(in_features)
        self.weight = Parameter(_uniform((in_features, out_features), bound))
        self.bias = Parameter(_uniform((out_features,), bound)) if bias else None

    def forward(self, x):
        x = x if isinstance(x, Tensor) else Tensor(x)
        if x.dtype.kind != "f":  # int @ float32 would quietly be float64; torch refuses it
            raise TypeError(f"Linear: input must be floating-point; got dtype {x.dtype}")
        if x.ndim == 0 or x.shape[-1] != self.in_features:
            raise ValueError(f"Linear({self.in_features}, {self.out_features}): input has shape "
                             f"{x.shape}; its last dim must be {self.in_features}")
        y = x @ self.weight
        return y + self.bias if self.bias is not None else y

    def extra_repr(self):
        return f"{self.in_features}, {self.out_features}, bias={self.bias is not None}"


class Embedding(Module):
    """A lookup table: ids [...] (integers) -> weight[ids] [..., embedding_dim].

    weight [num_embeddings, embedding_dim] float32, initialised N(0, 1) as PyTorch.
    """

    def __init__(self, num_embeddings, embedding_dim):
        super().__init__()
        _check_sizes("Embedding", num_embeddings=num_embeddings, embedding_dim=embedding_dim)
        self.num_embeddings, self.embedding_dim = num_embeddings, embedding_dim
        self.weight = Parameter(
            random.generator().standard_normal((num_embeddings, embedding_dim)).astype(np.float32))

    def forward(self, ids):
        return F.embedding(ids, self.weight)

    def extra_repr(self):
        return f"{self.num_embeddings}, {self.embedding_dim}"


class LayerNorm(Module):
    """Normalise over the last dims (`normalized_shape`), then scale and shift.

    The scale `weight` starts at ones, the shift `bias` at zeros.

    Shapes: x [..., *normalized_shape] -> same shape. `bias=False` drops the shift, as
    nanoGPT's bias-free configuration; elementwise_affine=False drops both (torch's order of
    arguments, so that LayerNorm(D, 1e-5, False) means the same as there). (Ba et al. 2016;
    notes 3.6.)
    """

    def __init__(self, normalized_shape, eps=1e-5, elementwise_affine=True, bias=True):
        super().__init__()
        shape = F.normalized_shape_tuple(normalized_shape, "LayerNorm")
        if isinstance(eps, bool) or not isinstance(eps, numbers.Real) or not eps >= 0:
            raise ValueError(f"LayerNorm: eps must be a number >= 0; got {eps!r}")
        self.normalized_shape, self.eps = shape, eps
        affine = bool(elementwise_affine)
        self.weight = Parameter(np.ones(shape, dtype=np.float32)) if affine else None
        self.bias = Parameter(np.zeros(shape, dtype=np.float32)) if affine and bias else None

    def forward(self, x):
        return F.layer_norm(x, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self):
        return (f"{self.normalized_shape}, eps={self.eps}, "
                f"elementwise_affine={self.weight is not None}, bias={self.bias is not None}")


class Dropout(Module):
    """Zeroes elements with probability p while training and scales the rest by 1/(1−p).

    The identity in eval mode; the scaling keeps each element's expected value unchanged.
    """

    def __init__(self, p=0.5):
        super().__init__()
        self.p = F.check_probability(p, "Dropout")

    def forward(self, x):
        return F.dropout(x, self.p, self.training)

    def extra_repr(self):
        return f"p={self.p}"


class ReLU(Module):
    def forward(self, x):
        return F.relu(x)


class GELU(Module):
    """x·Φ(x); approximate="tanh" for GPT-2's tanh form."""

    def __init__(self, approximate="none"):
        super().__init__()
        self.approximate = approximate

    def forward(self, x):
        return F.gelu(x, self.approximate)
