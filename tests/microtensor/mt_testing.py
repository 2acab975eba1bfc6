"""Helpers shared by the microtensor tests: float64 random tensors, a gradcheck wrapper, closeness checks.

The module has a distinctive name (not `helpers.py`) so it cannot be confused with a
helper module of another test folder once both are on sys.path.
"""
import numpy as np
from hypothesis import settings

import microtensor as mt

# Few, fast examples: the whole tests/microtensor suite must stay well under a minute.
FEW_EXAMPLES = settings(max_examples=25, deadline=None)


def array64(*shape, seed=0, low=-2.0, high=2.0, away_from=None, margin=0.1):
    """A float64 numpy array with uniform entries in [low, high).

    away_from=c moves every entry at least `margin` from c, for ops with a kink there
    (relu at 0, max at ties), where finite differences would straddle the kink.
    """
    rng = np.random.default_rng(seed)
    x = rng.uniform(low, high, size=shape)
    if away_from is not None:
        close = np.abs(x - away_from) < margin
        x = np.where(close, away_from + np.where(x >= away_from, margin, -margin), x)
    return x


def tensor64(*shape, seed=0, requires_grad=True, **kwargs):
    """A float64 Tensor of random values (see `array64`), requiring grad by default."""
    return mt.Tensor(array64(*shape, seed=seed, **kwargs), requires_grad=requires_grad)


def check_gradients(fn, *inputs, seed=123, **tolerances):
    """`microtensor.gradcheck` for an op with an output of any shape.

    The output is reduced to a scalar with fixed random weights, L = Σ w ⊙ fn(x), not a
    plain sum: a plain sum would hide wrong gradients of ops whose outputs always sum to
    a constant (softmax rows sum to 1, so d(Σ softmax)/dx = 0 whatever backward does).
    """
    with mt.no_grad():
        shape = fn(*inputs).shape
    weights = np.random.default_rng(seed).uniform(0.5, 1.5, size=shape)
    weights *= np.random.default_rng(seed + 1).choice([-1.0, 1.0], size=shape)
    return mt.gradcheck(lambda *xs: (fn(*xs) * weights).sum(), inputs, **tolerances)


def assert_close(actual, expected, what, atol=1e-10, rtol=1e-7):
    """Assert two arrays agree elementwise; the message shows both and the worst gap."""
    actual = np.asarray(actual.data if isinstance(actual, mt.Tensor) else actual)
    expected = np.asarray(expected)
    assert actual.shape == expected.shape, (
        f"{what}: expected shape {expected.shape}, got {actual.shape}")
    if not np.allclose(actual, expected, atol=atol, rtol=rtol, equal_nan=False):
        gap = np.max(np.abs(actual.astype(np.float64) - expected))
        raise AssertionError(f"{what}: expected\n{expected}\ngot\n{actual}\n(max |gap| = {gap:.3g})")


def numerical_gradient(f, x, eps=1e-6):
    """Central finite differences of the scalar numpy function f at the numpy array x."""
    x = np.array(x, dtype=np.float64)
    grad = np.zeros_like(x)
    for idx in np.ndindex(x.shape):
        original = x[idx]
        x[idx] = original + eps
        f_plus = f(x)
        x[idx] = original - eps
        f_minus = f(x)
        x[idx] = original
        grad[idx] = (f_plus - f_minus) / (2 * eps)
    return grad
