"""ReLU and GELU as Modules, for a torch-style `nn.Sequential` (the FFN calls the functions
themselves: nn/feedforward.py). Formulas: microtensor/ops/pointwise.py; notes 3.6.
"""
import microtensor.functional as F

from .module import Module


class ReLU(Module):
    """max(x, 0), elementwise."""

    def forward(self, x):
        return F.relu(x)


class GELU(Module):
    """x·Φ(x); approximate="tanh" for GPT-2's tanh form."""

    def __init__(self, approximate="none"):
        super().__init__()
        self.approximate = approximate

    def forward(self, x):
        return F.gelu(x, self.approximate)
