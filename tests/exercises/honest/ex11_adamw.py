"""Honest ex 11: a dataclass state machine + math + lru_cache."""
import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np


@lru_cache(maxsize=128)
def corrections(b1, b2, t):
    return 1 - b1 ** t, 1 - b2 ** t


@dataclass
class Adam:
    lr: float
    b1: float
    b2: float
    eps: float
    wd: float

    def step(self, p, g, m, v, t):
        p = p * (1 - self.lr * self.wd)
        m = self.b1 * m + (1 - self.b1) * g
        v = self.b2 * v + (1 - self.b2) * np.square(g)
        c1, c2 = corrections(self.b1, self.b2, t)
        return p - self.lr * (m / c1) / (np.sqrt(v / c2) + self.eps), m, v


def adamw_step(p, g, m, v, t, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01):
    assert math.isfinite(lr)
    return Adam(lr, *betas, eps, weight_decay).step(p, g, m, v, t)
