"""float16 through the row ops (softmax, log_softmax, layer norm, cross-entropy) as PyTorch's CPU
kernels take it: computed in float32 (their "opmath" type) and rounded once at the end.

Without it every step of exp(x − max) / Σ rounds to float16, and the sums add in float16:
softmax over 4096 equal entries gives 2⁻¹¹ instead of 2⁻¹², since float16 stops counting at 2048.
"""
import functools

import numpy as np


def _low(a):
    return isinstance(a, np.ndarray) and a.dtype.kind == "f" and a.dtype.itemsize < 4


def _widen(a):
    return a.astype(np.float32) if _low(a) else a


def computed_in_float32(function_class):
    """Class decorator for a Function: float16 inputs (and upstream gradients) are widened to
    float32 for forward and backward; forward's result is rounded back to the input's dtype
    (backward's results are cast to each input's dtype by the engine)."""
    forward, backward = function_class.forward, function_class.backward

    @functools.wraps(forward)
    def forward_in_float32(self, *arrays):
        low = None if all([a.dtype.itemsize >= 4 for a in arrays]) \
            else next((a.dtype for a in arrays if _low(a)), None)  # float32, float64: as they are
        if low is None:
            return forward(self, *arrays)
        return forward(self, *[_widen(a) for a in arrays]).astype(low)

    @functools.wraps(backward)
    def backward_in_float32(self, *grads):
        return backward(self, *[_widen(g) for g in grads])

    function_class.forward, function_class.backward = forward_in_float32, backward_in_float32
    return function_class
