"""What the model configs (GPTConfig, Seq2SeqConfig) share: size checks and to_dict/from_dict.

Each config is a dataclass that checks itself in `__post_init__` with these helpers, so a bad
size fails where the config is made, with a message naming the config, the field and the value.
"""
from dataclasses import asdict, fields

import numpy as np

ACTIVATIONS = ("gelu", "relu")


class ModelConfig:
    """Base of the model config dataclasses: checks for `__post_init__`, and JSON round trips."""

    def _error(self, message):
        return ValueError(f"{type(self).__name__}: {message}")

    def require_positive(self, *names):
        """ValueError unless each named field is an int >= 1 (a bool is not a size)."""
        for name in names:
            value = getattr(self, name)
            if not isinstance(value, (int, np.integer)) or isinstance(value, bool) or value < 1:
                raise self._error(f"{name} must be a positive integer; got {value!r}")

    def require_heads_divide(self, width, heads, why=""):
        """ValueError unless field `heads` divides field `width` (each head gets width/heads)."""
        if getattr(self, width) % getattr(self, heads):
            raise self._error(f"{width}={getattr(self, width)} must be divisible by "
                              f"{heads}={getattr(self, heads)}{why}")

    def require_dropout_and_activation(self):
        """ValueError unless 0 <= dropout < 1 and activation is 'gelu' or 'relu'."""
        if not 0 <= self.dropout < 1:
            raise self._error(f"dropout must be in [0, 1); got {self.dropout}")
        if self.activation not in ACTIVATIONS:
            raise self._error(f"activation must be 'gelu' or 'relu'; got {self.activation!r}")

    def to_dict(self):
        return asdict(self)

    @classmethod
    def from_dict(cls, d):
        """Inverse of `to_dict`; raises ValueError naming unknown or missing fields."""
        unknown = sorted(set(d) - {f.name for f in fields(cls)})
        if unknown:
            raise ValueError(f"{cls.__name__}: unknown fields {unknown}")
        try:
            return cls(**d)
        except TypeError as error:  # a required field is missing
            raise ValueError(f"{cls.__name__}: {error}") from None
