"""Embedding lookup: row `i` of the weight matrix for each integer id `i` (notes 3.7: the
tokens a language model reads).

z[..., :] = W[ids[...], :];   ∂L/∂W[i] = Σ of g over every position whose id is i.
"""
import numpy as np

from ..autograd import Function
from ..parity.arguments import ids as int_array
from ..parity.arguments import tensor
from ..tensor import apply


class Embedding(Function):
    """ids [...] (integers) and weight [V, D] -> [..., D]."""

    op = "embedding"

    def __init__(self, ids):
        super().__init__()
        self.ids = ids

    def forward(self, weight):
        if self.ids.size and (self.ids.min() < 0 or self.ids.max() >= weight.shape[0]):
            raise IndexError(f"embedding: ids must lie in [0, {weight.shape[0]}); got values "
                             f"from {self.ids.min()} to {self.ids.max()}")
        self.save(ids=self.ids)  # kept for backward, freed after it, as torch's
        return weight[self.ids]

    def backward(self, g):
        (weight_shape,), ids = self.input_shapes, self.saved["ids"]
        # rows spelled out: reshape(-1, D) is ambiguous when D = 0
        ids, rows = ids.reshape(-1), g.reshape(ids.size, *weight_shape[1:])
        return sum_rows_by_id(ids, rows, weight_shape)   # ∂L/∂W[i] = Σ g where id = i


def sum_rows_by_id(ids, rows, weight_shape):
    """Speed: gw [V, D] with gw[i] = Σ rows[n] where ids[n] = i, the sum np.add.at(gw, ids, rows)
    takes one row at a time (~6x slower): sort the positions by id and sum each run of equal
    ids at once. Used by Embedding.backward alone."""
    gw = np.zeros(weight_shape, dtype=rows.dtype)
    if ids.size == 0:
        return gw
    order = np.argsort(ids, kind="stable")
    sorted_ids = ids[order]
    starts = np.flatnonzero(np.r_[True, sorted_ids[1:] != sorted_ids[:-1]])
    gw[sorted_ids[starts]] = np.add.reduceat(rows[order], starts, axis=0)
    return gw


def embedding(indices, weight):
    """Rows of `weight` [V, D] picked by integer `indices` [...] -> [..., D]."""
    return apply(Embedding(int_array(indices, "indices")), tensor(weight, "weight"))
