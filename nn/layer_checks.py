"""The checks nn/layers.py's layers run on their arguments and inputs, kept out of it so the
layers read as the notes' formulas: each raises a one-line ValueError or TypeError naming the
layer, the argument, what it got and what it expected.
"""
import numbers

import numpy as np

import microtensor.functional as F
from microtensor import Tensor


def check_sizes(layer, **sizes):
    """ValueError naming `layer` unless every size is a positive int (bool is not a size)."""
    for name, value in sizes.items():
        if not isinstance(value, (int, np.integer)) or isinstance(value, bool) or value < 1:
            raise ValueError(f"{layer}: {name} must be a positive int; got {value!r}")


def check_linear_input(layer, x):
    """Linear's x [..., in_features] as a Tensor: TypeError unless floating (int @ float32 would
    quietly be float64; torch refuses it), ValueError for another last dim."""
    x = x if isinstance(x, Tensor) else Tensor(x)
    if x.dtype.kind != "f":
        raise TypeError(f"Linear: input must be floating-point; got dtype {x.dtype}")
    if x.ndim == 0 or x.shape[-1] != layer.in_features:
        raise ValueError(f"Linear({layer.in_features}, {layer.out_features}): input has shape "
                         f"{x.shape}; its last dim must be {layer.in_features}")
    return x


def check_layer_norm(normalized_shape, eps):
    """LayerNorm's normalized_shape as a tuple (an int n is (n,)); ValueError for a bad shape or
    an eps that is not a number >= 0."""
    shape = F.normalized_shape_tuple(normalized_shape, "LayerNorm")
    if isinstance(eps, bool) or not isinstance(eps, numbers.Real) or not eps >= 0:
        raise ValueError(f"LayerNorm: eps must be a number >= 0; got {eps!r}")
    return shape


def check_causal_hint(mask, is_causal):
    """TransformerDecoderLayer's tgt_is_causal beside tgt_mask: torch takes the flag as a hint
    that the mask IS the causal one and then may use either, so a mask that is not causal gives
    numbers that depend on torch's path. ValueError when is_causal is True
    and the mask is given but is not M (bool: True above the diagonal; float: −inf there, 0
    elsewhere). With no mask, True stands for M (torch raises RuntimeError there). Returns
    (mask, is_causal), the mask None when is_causal: the layer builds the same M itself."""
    if not is_causal or mask is None:
        return mask, bool(is_causal)
    m = np.asarray(getattr(mask, "data", mask))
    t = m.shape[-1] if m.ndim else 0
    above = np.triu(np.ones((t, t), dtype=bool), 1)
    causal = m.ndim >= 2 and m.shape[-2] == t and (
        np.array_equal(np.broadcast_to(above, m.shape), m) if m.dtype == bool else
        np.array_equal(np.broadcast_to(np.where(above, -np.inf, 0.0), m.shape), m))
    if not causal:
        raise ValueError(f"TransformerDecoderLayer: tgt_is_causal=True but tgt_mask (shape "
                         f"{m.shape}, dtype {m.dtype}) is not the causal mask; pass "
                         f"tgt_is_causal=False to apply tgt_mask as given")
    return None, True


def check_activation(activation, activations):
    """FeedForward's activation: ValueError unless one of `activations`' names."""
    if activation not in activations:
        raise ValueError(f"FeedForward: activation must be one of {sorted(activations)}; "
                         f"got {activation!r}")
