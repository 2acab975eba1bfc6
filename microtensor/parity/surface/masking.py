"""The surface of masked_fill: the mask as a Tensor or numpy array of bools (copied: the op keeps it
for backward), a value that is a number or a 0-d Tensor (which gets a gradient:
parity/masked_fill_value.py) and fits x's dtype (parity/scalars.py), and a mask that broadcasts with
x (x grows to the broadcast shape, as torch's); the functional form."""
import numpy as np

from ...tensor import apply
from ..arguments import tensor
from ..masked_fill_value import MaskedFillValue
from ..scalars import fill_value


def install(Tensor):
    plain = Tensor.masked_fill

    def masked_fill(self, mask, value):
        """Replace entries where `mask` is True (blocked) by `value`; mask broadcasts (the output
        takes the broadcast shape, as torch's).

        mask: a boolean Tensor or numpy array; TypeError for any other dtype.
        value: a number, or a 0-d Tensor (which receives a gradient if it requires grad);
        ValueError (torch's RuntimeError) for a value that does not fit x's dtype or a value
        tensor with dims; ValueError for a mask that does not broadcast with x.
        """
        mask = np.array(mask.data if isinstance(mask, Tensor) else mask)  # kept: a copy
        if mask.dtype != np.bool_:
            raise TypeError(f"mask must be boolean (True = blocked); got dtype {mask.dtype}. "
                            "For an additive float mask add it to the scores instead")
        value = fill_value(value, self.dtype, "masked_fill")  # a number or 0-d Tensor that fits
        if mask.ndim > self.ndim or mask.shape != self.shape[self.ndim - mask.ndim:]:
            try:  # not x's trailing shape: the mask may still grow x, as torch's
                np.broadcast_shapes(self.shape, mask.shape)
            except ValueError:
                raise ValueError(f"masked_fill: mask of shape {mask.shape} does not broadcast "
                                 f"with x's shape {self.shape}") from None
        if not isinstance(value, Tensor):
            return plain(self, mask, value)
        out = plain(self, mask, value.data)
        if value.requires_grad:  # ∂L/∂value = Σ g where mask (parity/masked_fill_value.py)
            out = apply(MaskedFillValue(mask), out, value)
        return out

    Tensor.masked_fill = masked_fill


def masked_fill(x, mask, value):
    """`value` where the boolean `mask` is True (blocked), x elsewhere; mask broadcasts."""
    return tensor(x, "x").masked_fill(mask, value)
