import collections
import dataclasses
import functools

import numpy as np

Pair = collections.namedtuple("Pair", "a da")


@dataclasses.dataclass
class Rows:
    axis: int = -1


@functools.lru_cache(maxsize=4)
def _axis(axis):
    return Rows(axis).axis


def softmax_backward(a, da, axis=-1):
    p = Pair(a, da)
    np.testing.assert_equal(p.a.shape, p.da.shape)
    ax = _axis(axis)
    dot = np.einsum("...i,...i->...", np.moveaxis(p.a, ax, -1), np.moveaxis(p.da, ax, -1))
    return p.a * (p.da - np.expand_dims(dot, ax))
