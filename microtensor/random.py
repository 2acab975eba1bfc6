"""One random generator for the whole package: `manual_seed(s)` makes init, dropout, batching and
sampling repeatable."""
import numpy as np

from .tensor import Tensor

_generator = np.random.default_rng()


def manual_seed(seed):
    """Reseed the package-wide generator (as `torch.manual_seed`). Returns it."""
    global _generator
    if not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"manual_seed: seed must be a non-negative int; got {seed!r}")
    _generator = np.random.default_rng(int(seed))
    return _generator


def generator():
    """The current package-wide `numpy.random.Generator` (fetch it anew each time)."""
    return _generator


def randn(*shape, requires_grad=False, dtype=np.float32, name=None):
    """A tensor of standard-normal samples, float32 by default, from the package generator."""
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = tuple(shape[0])
    data = _generator.standard_normal(shape).astype(dtype)
    return Tensor(data, requires_grad=requires_grad, name=name)
