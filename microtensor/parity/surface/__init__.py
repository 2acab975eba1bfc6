"""Each op's PyTorch surface, off the reading path: what the Tensor method or functional form
a user calls checks and converts before the op in ops/ runs.

An op file attaches its plain Tensor method in one line (`Tensor.__mul__ = lambda a, b:
apply(Mul(), a, b)`). At import (microtensor/__init__.py), each family's `install(Tensor)`
here wraps those methods with torch's rules: arguments checked (one line naming the argument),
Python numbers and arrays lifted to torch's dtype, torch's forms (dim=, keepdim=, negative
dims, numbers on the left of an operator, 1-D matmul, max(dim=)'s indices) turned into what
the op takes. The wrapper calls the plain method: the op's forward and backward always run.
The functional forms (`microtensor.functional`) are written here too, each once.
"""
from ... import ops  # noqa: F401  (the plain methods, attached first)
from ...tensor import Tensor
from . import arithmetic, masking, pointwise, reduction, shape, softmax

for _family in (arithmetic, reduction, shape, pointwise, softmax, masking):
    _family.install(Tensor)
