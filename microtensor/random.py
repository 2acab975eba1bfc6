"""One random generator for the whole package: `manual_seed(s)` makes init, dropout, batching and
sampling repeatable; `get_rng_state`/`set_rng_state` save and restore where it stands (as torch)."""
import copy

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
    """The current package-wide `numpy.random.Generator`.

    Call this at each use rather than keeping the result: `manual_seed` and `set_rng_state`
    replace the generator, and a kept one would miss the reseed.
    """
    return _generator


def get_rng_state():
    """Where the package generator stands, as a dict of plain ints and strs (JSON-safe).

    numpy's PCG64 state: {"bit_generator": "PCG64", "state": {"state": int, "inc": int},
    "has_uint32": int, "uinteger": int}. `set_rng_state` of it makes the generator draw the
    same numbers again (torch.get_rng_state returns a byte tensor for the same purpose).
    """
    return copy.deepcopy(_generator.bit_generator.state)


def set_rng_state(state):
    """Put the package generator back where `get_rng_state()` found it.

    Raises ValueError for anything but a PCG64 state dict (the bit generator behind
    `numpy.random.default_rng`, which `manual_seed` uses).
    """
    global _generator
    if not isinstance(state, dict) or state.get("bit_generator") != "PCG64":
        raise ValueError(f"set_rng_state: expected a PCG64 state dict from get_rng_state(); "
                         f"got {state!r:.80}")
    bit_generator = np.random.PCG64()
    try:
        bit_generator.state = copy.deepcopy(state)
    except (TypeError, KeyError, ValueError) as error:
        raise ValueError(f"set_rng_state: not a PCG64 state ({error}); "
                         f"got {state!r:.80}") from None
    _generator = np.random.Generator(bit_generator)


def randn(*shape, requires_grad=False, dtype=np.float32, name=None):
    """A tensor of standard-normal samples N(0, 1), float32 by default, from the package
    generator (as `torch.randn`); shape as ints or one tuple."""
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = tuple(shape[0])
    if np.dtype(dtype).kind != "f":  # normal samples cast to ints would be silently truncated
        raise TypeError(f"randn: dtype must be floating-point; got {np.dtype(dtype)}")
    data = _generator.standard_normal(shape).astype(dtype)
    return Tensor(data, requires_grad=requires_grad, name=name)
