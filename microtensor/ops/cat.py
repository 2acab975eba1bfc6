"""`cat`: tensors joined along an existing axis (the KV cache appends each step's K and V with it,
notes 3.7); the gradient is split back to each. `microtensor.cat` is parity/surface/shape.py's.
"""
import numpy as np

from ..autograd import Function


class Cat(Function):
    """z = [a₁, a₂, …] joined along `axis`;   ∂L/∂aᵢ = the slice of g that aᵢ filled"""

    op = "cat"

    def __init__(self, axis=0):
        self.axis = axis

    def forward(self, *arrays):
        return np.concatenate(arrays, axis=self.axis)

    def backward(self, g):
        sizes = [shape[self.axis] for shape in self.input_shapes]
        return tuple(np.split(g, np.cumsum(sizes)[:-1], axis=self.axis))
