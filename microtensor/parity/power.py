"""aᵖ as PyTorch computes it where numpy's `a ** p` differs.

a^(−½) is 1/√a, which differs from numpy's a ** −0.5 at a = −0.0 (−inf, not inf) and a = −inf
(NaN, not 0); the backward of a ** 0.5 calls this with p − 1 = −½, so its gradient matches
PyTorch there too (a ** 0.5 itself needs no case: numpy computes √a). A bool a (its exponent is
then a bool too) stays bool, as torch's, where numpy's bool ** bool is int8.
"""
import numpy as np


def power(a, p):
    if a.dtype == np.bool_:
        return (a ** p).astype(np.bool_)
    return 1 / np.sqrt(a) if p == -0.5 else a ** p
