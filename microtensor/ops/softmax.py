"""Softmax and log-softmax along one axis, numerically stable (the row maximum is subtracted).

Softmax backward in closed form (notes 3.8):   ds = a ⊙ (da − Σ a ⊙ da),
with da = ∂L/∂a arriving from above, ds = ∂L/∂s, and Σ along `axis`:
the product of the Jacobian ∂aᵢ/∂sⱼ = aᵢ(δᵢⱼ − aⱼ) with da, without forming it.
"""
import numpy as np

from ..autograd import Function
from .rows import row_dot, row_max, row_sum


def _stable_exp(x, axis):
    """exp(x − max x) along axis, in a new array; a row that is all −inf gives zeros, not NaN."""
    m = row_max(x, axis)
    m[np.isneginf(m)] = 0  # −inf − (−inf) would be NaN
    e = x - m
    return np.exp(e, out=e), m


class Softmax(Function):
    """a = exp(s) / Σ exp(s) along `axis`;   ds = a ⊙ (da − Σ a ⊙ da)

    A row whose entries are all −inf (every key blocked) gives all-zero weights, not NaN:
    the one exception to "each row sums to 1" (notes 3.3).
    """

    op = "softmax"

    def __init__(self, axis=-1):
        super().__init__()
        self.axis = axis

    def forward(self, s):
        a, _ = _stable_exp(s, self.axis)
        total = row_sum(a, self.axis)
        total[total == 0] = 1  # an all −inf row has e = 0: 0/1 gives zero weights, not 0/0
        a /= total  # normalised in place: the exp buffer is this op's own
        self.save(a=a)
        return a

    def backward(self, da):
        a = self.saved["a"]
        ds = da - row_dot(a, da, self.axis)
        ds *= a
        return ds


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
        e, m = _stable_exp(s, self.axis)
        y = s - m - np.log(row_sum(e, self.axis))
        self.save(y=y)
        return y

    def backward(self, dy):
        return dy - np.exp(self.saved["y"]) * row_sum(dy, self.axis)
