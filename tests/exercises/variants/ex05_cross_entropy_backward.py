"""Exercise 5, another right answer: the probabilities through logsumexp."""
import numpy as np


def cross_entropy_backward(logits, targets, ignore_index=-100):
    m = logits.max(axis=-1, keepdims=True, initial=-np.inf) if logits.size else logits[..., :1]
    lse = m + np.log(np.exp(logits - m).sum(axis=-1, keepdims=True))
    p = np.exp(logits - lse)
    counted = targets != ignore_index
    rows = np.flatnonzero(counted)
    p[rows, targets[rows]] -= 1
    p[~counted] = 0
    return p / max(int(counted.sum()), 1)
