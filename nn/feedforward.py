"""The position-wise feed-forward network (Vaswani et al. 2017 §3.3; notes 3.6).

FFN(X) = act(X W₁ + b₁) W₂ + b₂   (notes 3.6: W₁ = fc.weight [D, d_ff], b₁ = fc.bias,
W₂ = proj.weight [d_ff, D], b₂ = proj.bias; act is ReLU or GELU).

Every position goes through the same two layers on its own; positions only exchange
information in attention.
"""
import microtensor.functional as F

from .layers import Linear
from .module import Module

_ACTIVATIONS = {"relu": F.relu, "gelu": F.gelu}


class FeedForward(Module):
    """x [..., D] -> [..., D] via `fc` (D → d_ff), the activation, dropout with
    activation_dropout (torch's encoder/decoder layers use it; nanoGPT's MLP does not, so 0
    by default), `proj` (d_ff → D), dropout."""

    def __init__(self, d_model, d_ff, activation="relu", dropout=0.0, bias=True,
                 activation_dropout=0.0):
        super().__init__()
        if activation not in _ACTIVATIONS:
            raise ValueError(f"FeedForward: activation must be one of {sorted(_ACTIVATIONS)}; "
                             f"got {activation!r}")
        self.activation, self.dropout = activation, dropout
        self.activation_dropout = activation_dropout
        self.fc = Linear(d_model, d_ff, bias)
        self.proj = Linear(d_ff, d_model, bias)

    def forward(self, x):
        h = _ACTIVATIONS[self.activation](self.fc(x))      # [..., d_ff]
        h = F.dropout(h, self.activation_dropout, self.training)
        return F.dropout(self.proj(h), self.dropout, self.training)
