"""The position-wise feed-forward network (Vaswani et al. 2017 §3.3; notes 3.6): every position
goes through the same two layers on its own; positions only exchange information in attention.
"""
import microtensor.functional as F

from .layer_checks import check_activation
from .layers import Linear
from .module import Module

_ACTIVATIONS = {"relu": F.relu, "gelu": F.gelu}


class FeedForward(Module):
    """FFN(X) = act(X W₁ + b₁) W₂ + b₂: x [..., D] -> [..., D], W₁ = fc.weight [D, d_ff],
    W₂ = proj.weight [d_ff, D], act ReLU or GELU. Dropout after act (activation_dropout, torch's
    encoder/decoder layers; 0 in nanoGPT's MLP) and after proj (dropout)."""

    def __init__(self, d_model, d_ff, activation="relu", dropout=0.0, bias=True,
                 activation_dropout=0.0):
        super().__init__()
        check_activation(activation, _ACTIVATIONS)  # ValueError: layer_checks.py
        self.activation, self.dropout = activation, dropout
        self.activation_dropout = activation_dropout
        self.fc = Linear(d_model, d_ff, bias)
        self.proj = Linear(d_ff, d_model, bias)

    def forward(self, x):
        h = _ACTIVATIONS[self.activation](self.fc(x))      # [..., d_ff]
        h = F.dropout(h, self.activation_dropout, self.training)
        return F.dropout(self.proj(h), self.dropout, self.training)  # [..., D]
