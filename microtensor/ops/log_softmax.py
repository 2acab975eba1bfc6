"""Log-softmax along one axis, numerically stable (off the reading path: cross-entropy fuses its
own, ops/loss.py).

y = s − log Σ exp(s);   ds = dy − softmax(s) ⊙ Σ dy, with Σ along `axis`.
"""
import numpy as np

from ..autograd import Function
from ..parity.low_precision import computed_in_float32
from ..tensor import Tensor, apply
from .rows import row_max, row_sum


@computed_in_float32  # float16 as torch: computed in float32, rounded once
class LogSoftmax(Function):
    """y = s − log Σ exp(s) along `axis`;   ds = dy − softmax(s) ⊙ Σ dy

    Unlike Softmax, a row that is all −inf gives NaN (log 0 − log 0), as in PyTorch: a
    distribution with every class blocked has no log-probabilities.
    """

    op = "log_softmax"

    def __init__(self, axis=-1):
        super().__init__()
        self.axis = axis

    def forward(self, s):
        m = row_max(s, self.axis)
        m[np.isneginf(m)] = 0  # −inf − (−inf) would be NaN
        with np.errstate(invalid="ignore", divide="ignore"):  # all −inf: log 0, NaN (as torch)
            e = s - m
            y = e - np.log(row_sum(np.exp(e), self.axis))
        self.save(y=y)
        return y

    def backward(self, dy):
        return dy - np.exp(self.saved["y"]) * row_sum(dy, self.axis)


Tensor.log_softmax = lambda s, axis=-1: apply(LogSoftmax(axis), s)
