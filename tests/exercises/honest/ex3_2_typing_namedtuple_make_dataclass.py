"""Honest ex 3: typing.NamedTuple, TypeVar, make_dataclass, a frozen dataclass, lru_cache and
np.testing (library code that takes a frame for a module's name, or compiles while it builds a
class)."""
import dataclasses
import functools
import typing
from collections import namedtuple
from typing import NamedTuple, TypeVar

import numpy as np

T = TypeVar("T")
Pair = namedtuple("Pair", "a da")


class Point(NamedTuple):
    x: int
    y: int = 0


@dataclasses.dataclass(frozen=True, order=True)
class Box:
    axis: int = -1
    tags: typing.List[str] = dataclasses.field(default_factory=list)


Made = dataclasses.make_dataclass("Made", [("x", int)])


@functools.lru_cache(maxsize=None)
def _twice(n: int) -> int:
    return 2 * n


def softmax_backward(a, da, axis=-1):
    Point(1, 2)
    Made(3)
    assert _twice(2) == 4
    with np.errstate(over="ignore"):
        p = Pair(np.asarray(a), np.asarray(da))
    b = Box(axis)
    s = (p.a * p.da).sum(axis=b.axis, keepdims=True)
    out = p.a * (p.da - s)
    np.testing.assert_allclose(out.sum(axis=b.axis), 0, atol=1e-6)
    return out
