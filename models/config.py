"""The base of every config dataclass (GPTConfig, Seq2SeqConfig, and the trainers' settings in
models/training): range checks that name the field, and JSON round trips that check each value.

A model config checks itself in `__post_init__`, so a bad size fails where the config is made,
with a message naming the config, the field and the value.
"""
from dataclasses import MISSING, asdict, fields

import numpy as np

ACTIVATIONS = ("gelu", "relu")


class Config:
    """Base of the config dataclasses: checks for `__post_init__`, and JSON round trips."""

    def _error(self, message):
        return ValueError(f"{type(self).__name__}: {message}")

    def require_positive(self, *names):
        """ValueError unless each named field is an int >= 1 (a bool is not a size)."""
        for name in names:
            value = getattr(self, name)
            if not isinstance(value, (int, np.integer)) or isinstance(value, bool) or value < 1:
                raise self._error(f"{name} must be a positive integer; got {value!r}")

    def require_heads_divide(self, width, heads):
        """ValueError unless field `heads` divides field `width` (each head gets width/heads)."""
        if getattr(self, width) % getattr(self, heads):
            raise self._error(f"{width}={getattr(self, width)} must be divisible by "
                              f"{heads}={getattr(self, heads)}")

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
        """Inverse of `to_dict`; raises ValueError naming an unknown or missing field, or one
        whose value has the wrong JSON type (e.g. in a hand-edited config.json)."""
        if not isinstance(d, dict):
            raise ValueError(f"{cls.__name__}: expected a dict of fields; got {d!r}")
        names = {f.name for f in fields(cls)}
        missing = sorted(f.name for f in fields(cls) if f.name not in d and f.default is MISSING)
        if set(d) - names or missing:
            raise ValueError(f"{cls.__name__}: unknown fields {sorted(set(d) - names)}, "
                             f"missing {missing}")
        for f in fields(cls):
            value = d.get(f.name, f.default)
            allowed = (int, float) if f.type is float else (f.type,)  # JSON writes 1.0 as 1
            if value is None and f.default is None:
                continue
            # bool is an int to isinstance, so True must not pass as a size
            if not isinstance(value, allowed) or isinstance(value, bool) != (f.type is bool):
                raise ValueError(f"{cls.__name__}: {f.name} must be {f.type.__name__}; "
                                 f"got {value!r}")
        return cls(**d)
