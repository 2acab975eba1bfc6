"""The surface of layer_norm, as torch.nn.functional.layer_norm: normalized_shape an int or a
tuple of the trailing dims (several are folded into one around the op, and back), a missing
weight or bias the constant 1 or 0, and each mismatch one line naming the argument."""
import math

import numpy as np

from ...ops.layer_norm import LayerNorm
from ...tensor import apply
from ..arguments import constant, floating_only, tensor


def layer_norm(x, normalized_shape, weight=None, bias=None, eps=1e-5):
    """Normalize x over its last dims `normalized_shape` (int or tuple), then scale and shift:
    y = (x − mean)/√(var + eps) ⊙ weight + bias, var the biased variance (notes 3.6).

    Shapes: x [..., *normalized_shape]; weight and bias [*normalized_shape] or None.
    Raises ValueError if x's trailing dims are not `normalized_shape`.
    """
    x = floating_only(tensor(x, "x"), "layer_norm")
    shape = normalized_shape_tuple(normalized_shape, "layer_norm")
    if x.ndim < len(shape) or x.shape[x.ndim - len(shape):] != shape:
        raise ValueError(f"layer_norm: normalized_shape {shape} does not match the last dims "
                         f"of x, shape {x.shape}")
    # a missing weight is the constant 1 and a missing bias the constant 0 (scalars broadcast)
    weight = tensor(weight, "weight") if weight is not None else constant(1, x.dtype)
    bias = tensor(bias, "bias") if bias is not None else constant(0, x.dtype)
    for name, given in (("weight", weight), ("bias", bias)):
        if given.ndim and given.shape != shape:  # as torch: no broadcasting of either
            raise ValueError(f"layer_norm: {name} has shape {given.shape}; expected "
                             f"normalized_shape {shape}")
    if len(shape) == 1:
        return apply(LayerNorm(eps), x, weight, bias)
    n = math.prod(shape)  # several dims S: as rows [..., n] and back
    lead = x.shape[:x.ndim - len(shape)]
    weight, bias = (t.reshape(n) if t.ndim else t for t in (weight, bias))
    return apply(LayerNorm(eps), x.reshape(*lead, n), weight, bias).reshape(x.shape)


def normalized_shape_tuple(normalized_shape, who):
    """normalized_shape (an int or a sequence of ints) as a tuple; ValueError naming `who`
    for an empty one, a negative size or one that is not an int (2.5, True); a size 0 is
    allowed, as torch (an empty row)."""
    if type(normalized_shape) is tuple and normalized_shape and all(
            type(n) is int and n >= 0 for n in normalized_shape):
        return normalized_shape  # already what is asked for (nn.LayerNorm's, checked once)
    shape = (normalized_shape,) if isinstance(normalized_shape, (int, np.integer)) \
        else normalized_shape
    try:
        shape = tuple(shape)
    except TypeError:
        shape = None
    if not shape or not all(isinstance(n, (int, np.integer)) and not isinstance(n, bool)
                            and n >= 0 for n in shape):
        raise ValueError(f"{who}: normalized_shape must be an int >= 0 or a non-empty tuple "
                         f"of them; got {normalized_shape!r}")
    return tuple(int(n) for n in shape)
