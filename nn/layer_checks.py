"""The checks nn/layers.py's layers run on their arguments and inputs, kept out of it so the
layers read as the notes' formulas: each raises a one-line ValueError or TypeError naming the
layer, the argument, what it got and what it expected.
"""
import numbers

import numpy as np


def check_sizes(layer, **sizes):
    """ValueError naming `layer` unless every size is a positive int (bool is not a size)."""
    for name, value in sizes.items():
        if not isinstance(value, (int, np.integer)) or isinstance(value, bool) or value < 1:
            raise ValueError(f"{layer}: {name} must be a positive int; got {value!r}")


def check_linear_input(layer, x):
    """Linear's x [..., in_features]: TypeError unless floating (int @ float32 would quietly be
    float64; torch refuses it), ValueError for another last dim."""
    if x.dtype.kind != "f":
        raise TypeError(f"Linear: input must be floating-point; got dtype {x.dtype}")
    if x.ndim == 0 or x.shape[-1] != layer.in_features:
        raise ValueError(f"Linear({layer.in_features}, {layer.out_features}): input has shape "
                         f"{x.shape}; its last dim must be {layer.in_features}")


def check_eps(eps):
    """LayerNorm's eps: ValueError unless a number >= 0."""
    if isinstance(eps, bool) or not isinstance(eps, numbers.Real) or not eps >= 0:
        raise ValueError(f"LayerNorm: eps must be a number >= 0; got {eps!r}")
