"""The surface of masked_fill: the mask as a Tensor or numpy array of bools (copied: the op keeps
it for backward), a value that is a number (a one-element Tensor too) and fits x's dtype, and a
mask that broadcasts to x without growing it; the functional form."""
import numbers

import numpy as np

from ..arguments import tensor
from ..promotion import category


def install(Tensor):
    plain = Tensor.masked_fill

    def masked_fill(self, mask, value):
        """Replace entries where `mask` is True (blocked) by `value`; mask broadcasts.

        mask: a boolean Tensor or numpy array; TypeError for any other dtype.
        """
        mask = np.array(mask.data if isinstance(mask, Tensor) else mask)  # kept: a copy
        if mask.dtype != np.bool_:
            raise TypeError(f"mask must be boolean (True = blocked); got dtype {mask.dtype}. "
                            "For an additive float mask add it to the scores instead")
        value = value.item() if isinstance(value, Tensor) else value
        if not isinstance(value, (numbers.Number, np.generic)):
            raise TypeError(f"masked_fill: value must be a number; got {type(value).__name__}")
        if category(self.dtype) == 1 and not np.isfinite(value):  # as torch: no int for −inf
            raise ValueError(f"masked_fill: value {value} cannot be stored in a {self.dtype} "
                             "tensor")
        try:
            grows = np.broadcast_shapes(self.shape, mask.shape) != self.shape
        except ValueError:
            grows = True
        if grows:
            raise ValueError(f"masked_fill: mask of shape {mask.shape} must broadcast to "
                             f"x's shape {self.shape} without growing it")
        return plain(self, mask, value)

    Tensor.masked_fill = masked_fill


def masked_fill(x, mask, value):
    """`value` where the boolean `mask` is True (blocked), x elsewhere; mask broadcasts."""
    return tensor(x, "x").masked_fill(mask, value)
