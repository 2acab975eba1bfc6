"""The base of every config dataclass (GPTConfig, Seq2SeqConfig, and the trainers' settings in
models/training): range checks that name the field, and JSON round trips that check each value.

A model config checks itself in `__post_init__`, so a bad size fails where the config is made,
with a message naming the config, the field and the value.
"""
from dataclasses import MISSING, asdict, fields

import numpy as np

from .schema import Bool, FileError, Int, Nullable, Number, Object, Optional, Str, check

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

    def require_bools(self):
        """ValueError unless each field annotated bool holds True or False: "False" is a
        truthy string, and bias="False" would silently keep the biases."""
        for f in fields(self):
            value = getattr(self, f.name)
            if f.type is bool and not isinstance(value, (bool, np.bool_)):
                raise self._error(f"{f.name} must be True or False; got {value!r}")

    def require_dropout_and_activation(self):
        """ValueError unless 0 <= dropout < 1 and activation is 'gelu' or 'relu'."""
        if not 0 <= self.dropout < 1:
            raise self._error(f"dropout must be in [0, 1); got {self.dropout}")
        if self.activation not in ACTIVATIONS:
            raise self._error(f"activation must be 'gelu' or 'relu'; got {self.activation!r}")

    def to_dict(self):
        return asdict(self)

    @classmethod
    def schema(cls):
        """The fields as models/schema.py specs, from their annotations (int, float, bool,
        str; a field whose default is None may be null); a float field takes an integer
        too (JSON writes 1.0 as 1)."""
        kinds = {int: Int(), float: Number(), bool: Bool(), str: Str()}

        def spec(f):
            kind = Nullable(kinds[f.type]) if f.default is None else kinds[f.type]
            return kind if f.default is MISSING else Optional(kind, f.default)
        return Object({f.name: spec(f) for f in fields(cls)})

    @classmethod
    def from_dict(cls, d, file=None, field=""):
        """Inverse of `to_dict`: the JSON types are checked first (a bool is not an int,
        "false" is not a bool), then the ranges (`__post_init__`).

        file, field: where `d` was read, for the message (default: the class's name).
        Raises FileError (a ValueError) naming an unknown or missing field, or the field,
        its value and the type expected; ValueError from `__post_init__` for a range.
        """
        where = file or cls.__name__
        if isinstance(d, dict):
            unknown = sorted(set(d) - {f.name for f in fields(cls)})
            if unknown:
                raise FileError(f"{where}: {field or 'the config'} has unknown fields "
                                f"{unknown}")
        return cls(**check(d, cls.schema(), where, field))
