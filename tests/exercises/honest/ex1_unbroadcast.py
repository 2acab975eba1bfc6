"""Honest ex 1: lru_cache + itertools + a dataclass plan + print for debugging."""
import functools
import itertools
from dataclasses import dataclass, field

import numpy as np


@dataclass(frozen=True)
class Plan:
    added: tuple
    stretched: tuple = field(default_factory=tuple)


@functools.lru_cache(maxsize=None)
def plan(gshape, shape):
    lead = len(gshape) - len(shape)
    added = tuple(range(lead))
    stretched = tuple(lead + i for i, (n, m) in enumerate(zip(shape, gshape[lead:]))
                      if n == 1 and m != 1)
    return Plan(added, stretched)


def unbroadcast(grad, shape):
    p = plan(tuple(grad.shape), tuple(shape))
    print("debug plan:", p)
    out = grad.sum(axis=tuple(itertools.chain(p.added, p.stretched)), keepdims=True) \
        if (p.added or p.stretched) else grad
    out = out.reshape(tuple(shape))
    np.testing.assert_equal(out.shape, tuple(shape))
    return out
