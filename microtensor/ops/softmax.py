"""Softmax and log-softmax along one axis, numerically stable (the row maximum is subtracted).

Softmax backward in closed form (notes 3.8):   ds = a ⊙ (da − Σ a ⊙ da),
with da = ∂L/∂a arriving from above, ds = ∂L/∂s, and Σ along `axis`:
the product of the Jacobian ∂aᵢ/∂sⱼ = aᵢ(δᵢⱼ − aⱼ) with da, without forming it.
The row_* helpers (rows.py) keep the reduced axis (keepdims), so their results broadcast
back against the row.
"""
import numpy as np

from ..autograd import Function
from ..parity import dims
from ..parity.arguments import floating_only, tensor
from ..parity.low_precision import computed_in_float32
from ..tensor import apply, tensor_method
from .rows import row_dot, row_max, row_sum


def _stable_exp(x, axis):
    """exp(x − max x) along axis, in a new array; a row that is all −inf gives zeros, not NaN."""
    m = row_max(x, axis)
    m[np.isneginf(m)] = 0  # −inf − (−inf) would be NaN
    with np.errstate(invalid="ignore"):  # inf − inf is NaN, as PyTorch's softmax of [inf, inf]
        e = x - m
    return np.exp(e, out=e), m


@computed_in_float32  # float16 as torch: in float32, rounded once
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
        dims.dim(self.axis, s.ndim, self.op)  # TypeError, IndexError
        a, _ = _stable_exp(s.reshape(s.shape or (1,)), self.axis)  # 0-d: a row of one
        total = row_sum(a, self.axis)
        total[total == 0] = 1  # an all −inf row has e = 0: 0/1 gives zero weights, not 0/0
        a /= total  # normalised in place: the exp buffer is this op's own
        self.save(a=a)
        return a.reshape(s.shape)

    def backward(self, da):
        a = self.saved["a"]
        da = da.reshape(a.shape)
        ds = da - row_dot(a, da, self.axis)
        ds *= a
        return ds.reshape(self.input_shapes[0])


@computed_in_float32  # float16 as torch: in float32, rounded once
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
        dims.dim(self.axis, s.ndim, self.op)  # TypeError, IndexError
        s_rows = s.reshape(s.shape or (1,))  # 0-d: a row of one
        e, m = _stable_exp(s_rows, self.axis)
        with np.errstate(divide="ignore", invalid="ignore"):  # all −inf: log 0, NaN (as torch)
            y = s_rows - m - np.log(row_sum(e, self.axis))
        self.save(y=y)
        return y.reshape(s.shape)

    def backward(self, dy):
        y = self.saved["y"]
        dy = dy.reshape(y.shape)
        return (dy - np.exp(y) * row_sum(dy, self.axis)).reshape(self.input_shapes[0])


@tensor_method("softmax")
def _softmax_method(self, axis=None, *, dim=None):
    return apply(Softmax(dims.pick(axis, dim, "softmax", default=-1)),
                 floating_only(self, "softmax"))


@tensor_method("log_softmax")
def _log_softmax_method(self, axis=None, *, dim=None):
    return apply(LogSoftmax(dims.pick(axis, dim, "log_softmax", default=-1)),
                 floating_only(self, "log_softmax"))


def softmax(x, axis=None, *, dim=None):
    """exp(x)/Σexp(x) along `axis` (or torch's dim=; the last by default); an all −inf row
    gives zeros (notes 3.1–3.3). TypeError for a bool or integer x, IndexError for an axis
    out of range."""
    return tensor(x, "x").softmax(axis, dim=dim)


def log_softmax(x, axis=None, *, dim=None):
    """x − logsumexp(x) along `axis` (or torch's dim=; the last by default), computed stably."""
    return tensor(x, "x").log_softmax(axis, dim=dim)
