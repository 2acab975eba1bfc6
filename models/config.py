"""The base of every config dataclass (Seq2SeqConfig, the trainers' settings) and GPTConfig:
range checks for `__post_init__` that name the config, the field and the value, and JSON round
trips that check each value's type first (models/schema.py)."""
from dataclasses import MISSING, asdict, dataclass, fields

import numpy as np

import nn

from .schema import Bool, FileError, Int, Nullable, Number, Object, Optional, Str, check


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
        """ValueError unless each bool field holds True or False ("False" is truthy)."""
        for f in fields(self):
            value = getattr(self, f.name)
            if f.type is bool and not isinstance(value, (bool, np.bool_)):
                raise self._error(f"{f.name} must be True or False; got {value!r}")

    def require_dropout_and_activation(self):
        """ValueError unless 0 <= dropout < 1 and activation is 'gelu' or 'relu'."""
        if not 0 <= self.dropout < 1:
            raise self._error(f"dropout must be in [0, 1); got {self.dropout}")
        if self.activation not in ("gelu", "relu"):
            raise self._error(f"activation must be 'gelu' or 'relu'; got {self.activation!r}")

    def to_dict(self):
        return asdict(self)

    @classmethod
    def schema(cls):
        """The fields as schema specs from their annotations: a field whose default is None
        may be null, and a float field takes an integer (JSON writes 1.0 as 1)."""
        kinds = {int: Int(), float: Number(), bool: Bool(), str: Str()}

        def spec(f):
            kind = Nullable(kinds[f.type]) if f.default is None else kinds[f.type]
            return kind if f.default is MISSING else Optional(kind, f.default)
        return Object({f.name: spec(f) for f in fields(cls)})

    @classmethod
    def from_dict(cls, d, file=None, field=""):
        """Inverse of `to_dict`. Raises FileError (a ValueError) naming `file` (default: the
        class), the field and the value for an unknown or missing field or a wrong JSON type;
        then ValueError from `__post_init__` for a value out of range."""
        where = file or cls.__name__
        unknown = sorted(set(d) - {f.name for f in fields(cls)}) if isinstance(d, dict) else []
        if unknown:
            raise FileError(f"{where}: {field or 'the config'} has unknown fields {unknown}")
        return cls(**check(d, cls.schema(), where, field))


@dataclass
class GPTConfig(Config):
    """The shape of a GPT; the MLP is 4 * n_embd wide. ValueError for a size < 1, n_embd not
    divisible by n_head, dropout outside [0, 1), an unknown activation or attention, a non-bool.

    bias: biases in every Linear and LayerNorm (False is nanoGPT's slightly better, faster choice).
    norm_first: pre-norm blocks (GPT-2) if True, the 2017 post-norm if False.
    activation: "gelu" (GPT-2) or "relu" (the 2017 Transformer).
    attention: "ordinary" (primitive ops, keeps the T×T weights) or "tiled" (O(T) memory,
        nn/tiled_attention.py; notes 3.8): the same values and gradients.
    """

    vocab_size: int
    block_size: int
    n_layer: int
    n_head: int
    n_embd: int
    dropout: float = 0.0
    bias: bool = True
    norm_first: bool = True
    activation: str = "gelu"
    attention: str = "ordinary"

    def __post_init__(self):
        self.require_positive("vocab_size", "block_size", "n_layer", "n_head", "n_embd")
        nn.check_attention(self.attention, "GPTConfig")
        self.require_heads_divide("n_embd", "n_head")
        self.require_dropout_and_activation()
        self.require_bools()

    def num_elements(self):
        """The parameter count of GPT(self): embeddings, n_layer blocks of 12·D² weights
        (+ 13·D biases and LayerNorm shifts, or 2·D LayerNorm scales without them), ln_f."""
        d, bias = self.n_embd, self.bias
        block = 12 * d * d + (13 * d if bias else 2 * d)
        final_norm = 2 * d if bias else d
        return (self.vocab_size + self.block_size) * d + self.n_layer * block + final_norm
