"""Softmax and log-softmax along one axis, numerically stable (the row maximum is subtracted).

Softmax backward in closed form (notes 3.8):   ds = a ⊙ (da − Σ a ⊙ da),
the product of the Jacobian ∂aᵢ/∂sⱼ = aᵢ(δᵢⱼ − aⱼ) with da, without forming it.
"""
import numpy as np

from ..autograd import Function


def _stable_exp(x, axis):
    """exp(x − max x) along axis; a row that is all −inf gives zeros instead of NaN."""
    m = x.max(axis=axis, keepdims=True, initial=-np.inf)  # initial: an empty axis is allowed
    m = np.where(np.isneginf(m), 0, m)  # −inf − (−inf) would be NaN
    return np.exp(x - m), m


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
        e, _ = _stable_exp(s, self.axis)
        total = e.sum(axis=self.axis, keepdims=True)
        a = e / np.where(total == 0, 1, total)
        self.save(a=a)
        return a

    def backward(self, da):
        a = self.saved["a"]
        return a * (da - (a * da).sum(axis=self.axis, keepdims=True))


class LogSoftmax(Function):
    """y = s − log Σ exp(s) along `axis`;   ds = dy − softmax(s) ⊙ Σ dy

    Unlike Softmax, a row that is all −inf gives NaN (log 0 − log 0), as in PyTorch: a loss
    over a query with nothing to attend to is undefined.
    """

    op = "log_softmax"

    def __init__(self, axis=-1):
        super().__init__()
        self.axis = axis

    def forward(self, s):
        e, m = _stable_exp(s, self.axis)
        y = s - m - np.log(e.sum(axis=self.axis, keepdims=True))
        self.save(y=y)
        return y

    def backward(self, dy):
        return dy - np.exp(self.saved["y"]) * dy.sum(axis=self.axis, keepdims=True)
