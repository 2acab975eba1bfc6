"""The surface of softmax and log_softmax: numpy's axis or torch's dim= (the last by default,
negative counted from the end, parity/dims.py), floating-point inputs only (as torch), a 0-d
input as a row of one, and the functional forms."""
from .. import dims
from ..arguments import floating_only, tensor


def install(Tensor):
    Tensor.softmax = _along_axis(Tensor.softmax, "softmax")
    Tensor.log_softmax = _along_axis(Tensor.log_softmax, "log_softmax")


def _along_axis(plain, name):
    def method(self, axis=None, *, dim=None):
        axis = dims.dim(dims.pick(axis, dim, name, default=-1), self.ndim, name)
        floating_only(self, name)
        if self.ndim == 0:  # a row of one
            return plain(self.reshape(1), 0).reshape(())
        return plain(self, axis)
    return method


def softmax(x, axis=None, *, dim=None):
    """exp(x)/Σexp(x) along `axis` (or torch's dim=; the last by default); an all −inf row
    gives zeros (notes 3.1–3.3). TypeError for a bool or integer x, IndexError for an axis
    out of range."""
    return tensor(x, "x").softmax(axis, dim=dim)


def log_softmax(x, axis=None, *, dim=None):
    """x − logsumexp(x) along `axis` (or torch's dim=; the last by default), computed stably."""
    return tensor(x, "x").log_softmax(axis, dim=dim)
