"""Honest ex 5: namedtuple + np.testing + operator."""
import operator
from collections import namedtuple

import numpy as np

Rows = namedtuple("Rows", "counted n")


def _rows(targets, ignore_index):
    counted = operator.ne(targets, ignore_index)
    return Rows(counted, int(np.count_nonzero(counted)))


def cross_entropy_backward(logits, targets, ignore_index=-100):
    r = _rows(targets, ignore_index)
    z = logits - logits.max(axis=-1, keepdims=True)
    p = np.exp(z)
    p = p / p.sum(axis=-1, keepdims=True)
    onehot = np.zeros_like(p)
    idx = np.nonzero(r.counted)[0]
    onehot[idx, targets[idx]] = 1
    g = np.where(r.counted[:, None], p - onehot, 0).astype(logits.dtype)
    np.testing.assert_array_equal(g.shape, logits.shape)
    return (g / logits.dtype.type(max(r.n, 1))).astype(logits.dtype)
