"""Issue 33: a string run through typing.get_type_hints (a ForwardRef compiles and evaluates it):
the hook trusted `compile` called from typing.py."""
import typing


def _holder(x: "__import__('numpy').zeros(1)"):
    return x


_hints = typing.get_type_hints(_holder)


def adamw_step(p, g, m, v, t, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01):
    return p, m, v
