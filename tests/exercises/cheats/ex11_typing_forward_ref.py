"""Issue 33: a string run through typing.get_type_hints (a ForwardRef compiles and evaluates it):
the hook trusted `compile` called from typing.py. The string is the whole step, as a lambda."""
import typing

STEP = ("lambda p, g, m, v, t, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01: "
        "(lambda p, m, v: (p - lr * (m / (1 - betas[0] ** t)) "
        "/ ((v / (1 - betas[1] ** t)) ** 0.5 + eps), m, v))("
        "p * (1 - lr * weight_decay), betas[0] * m + (1 - betas[0]) * g, "
        "betas[1] * v + (1 - betas[1]) * g * g)")


def _holder(step: STEP):
    return step


adamw_step = typing.get_type_hints(_holder)["step"]
