"""The base of every config dataclass (the trainers' settings too), GPTConfig and Seq2SeqConfig:
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


@dataclass
class Seq2SeqConfig(Config):
    """The shape of an encoder-decoder Transformer (the paper's base model: d_model 512,
    n_heads 8, 6 + 6 layers, d_ff 2048, dropout 0.1). Raises ValueError as GPTConfig does,
    and for a special id outside either vocabulary.

    max_len: the most positions of a source or a target (the sinusoid table's length).
    norm_first: pre-norm layers (each stack then ends with a LayerNorm); False: the paper's.
    pad_id, bos_id, eos_id: the special tokens, shared by source and target vocabularies.
    tie_output: the output projection is the target embedding transposed (§3.4).
    activation, attention: as GPTConfig's, with the paper's "relu" by default.
    """

    src_vocab_size: int
    tgt_vocab_size: int
    max_len: int
    d_model: int
    n_heads: int
    n_encoder_layers: int
    n_decoder_layers: int
    d_ff: int
    dropout: float = 0.0
    norm_first: bool = False
    pad_id: int = 0
    bos_id: int = 1
    eos_id: int = 2
    tie_output: bool = True
    activation: str = "relu"
    attention: str = "ordinary"

    def __post_init__(self):
        nn.check_attention(self.attention, "Seq2SeqConfig")
        self.require_positive("src_vocab_size", "tgt_vocab_size", "max_len", "d_model",
                              "n_heads", "n_encoder_layers", "n_decoder_layers", "d_ff")
        self.require_heads_divide("d_model", "n_heads")
        self.require_dropout_and_activation()
        self.require_bools()
        smaller = min(self.src_vocab_size, self.tgt_vocab_size)
        for name in ("pad_id", "bos_id", "eos_id"):
            if not 0 <= (value := getattr(self, name)) < smaller:
                raise ValueError(f"Seq2SeqConfig: {name}={value} must be an id of both "
                                 f"vocabularies, in [0, {smaller})")

    def num_elements(self):
        """Parameters of Seq2SeqTransformer(self), plus its [max_len, d_model] sinusoid table."""
        d, f = self.d_model, self.d_ff
        attention, ffn, norm = 4 * d * d + 4 * d, 2 * d * f + f + d, 2 * d
        encoder, decoder = attention + ffn + 2 * norm, 2 * attention + ffn + 3 * norm
        return ((self.src_vocab_size + self.tgt_vocab_size + self.max_len) * d
                + self.n_encoder_layers * encoder + self.n_decoder_layers * decoder
                + (2 * norm if self.norm_first else 0)
                + (0 if self.tie_output else d * self.tgt_vocab_size + self.tgt_vocab_size))
