"""What the model configs (GPTConfig, Seq2SeqConfig) share: size checks and to_dict/from_dict.

Each config is a dataclass that checks itself in `__post_init__` with these helpers, so a bad
size fails where the config is made, with a message naming the config, the field and the value.
"""
from dataclasses import MISSING, asdict, fields

import numpy as np

from .schema import Bool, FileError, Int, Number, Object, Optional, Str, check

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

    def num_elements(self):
        """How many numbers a model of this config holds: its parameters and fixed tables.

        A loader compares it with the file's arrays before it builds the model, so a config
        edited to ask for more than the file holds allocates nothing.
        """
        raise NotImplementedError

    @classmethod
    def schema(cls):
        """The fields as models/schema.py specs, from their annotations (int, float, bool, str)."""
        kinds = {int: Int(), float: Number(), bool: Bool(), str: Str()}
        return Object({f.name: kinds[f.type] if f.default is MISSING
                       else Optional(kinds[f.type], f.default) for f in fields(cls)})

    @classmethod
    def from_dict(cls, d, file=None, field=""):
        """Inverse of `to_dict`: the JSON types are checked first (a bool is not an int,
        "false" is not a bool), then the ranges (`__post_init__`).

        file, field: where `d` was read, for the message. Raises ValueError naming unknown
        or missing fields, or the field and its value (a FileError when it is a type).
        """
        where = file or cls.__name__
        if not isinstance(d, dict):
            raise FileError(f"{where}: {field or 'the config'} is a {type(d).__name__}; "
                            "expected an object")
        unknown = sorted(set(d) - {f.name for f in fields(cls)})
        if unknown:
            raise FileError(f"{where}: {field or cls.__name__} has unknown fields {unknown}")
        try:
            return cls(**check(d, cls.schema(), where, field))
        except FileError:
            raise
        except ValueError as error:  # a range, from __post_init__
            raise FileError(f"{where}: {field}: {error}" if field else f"{where}: {error}"
                            ) from None
