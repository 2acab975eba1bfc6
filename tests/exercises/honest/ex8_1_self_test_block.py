"""Honest ex 8: typing, operator and a self-test under if __name__ == "__main__"."""
from __future__ import annotations

import operator
import typing

import microtensor


def split_heads(x: "microtensor.Tensor", n_heads: int) -> typing.Optional["microtensor.Tensor"]:
    b, t, d_model = x.shape
    d = operator.floordiv(d_model, n_heads)
    return x.reshape(b, t, n_heads, d).transpose(1, 2)


def merge_heads(z: microtensor.Tensor) -> microtensor.Tensor:
    input = z.transpose(1, 2)
    b, t, h, d = input.shape
    return input.reshape(b, t, h * d)


if __name__ == "__main__":
    pass
    x = microtensor.randn(2, 3, 8)
    assert merge_heads(split_heads(x, 2)).shape == x.shape
