"""The settings of a training run: `TrainSettings`, what every trainer shares (optimisation,
evaluation, seed, their checks and what a resume keeps), and the GPT's `TrainConfig` (presets
`baby` and `tiny`) and the encoder-decoder's `TranslateConfig`, which add their model's; and
`resolve_settings`, the one place a run's settings are merged from preset, flags and
checkpoint, and checked.

Each setting keeps nanoGPT's name and has a command-line flag (`flag_name`). `baby` is
nanoGPT's laptop-CPU configuration for shakespeare_char (nanoGPT README, "I only have a
macbook"); TranslateConfig follows Vaswani et al. 2017 §5 (β₂ = 0.98, warmup, label smoothing).
"""
import math
import re
from dataclasses import dataclass, fields, replace
from numbers import Integral

from ..config import Config
from ..gpt import GPTConfig
from ..seq2seq import Seq2SeqConfig
from ..tasks import dates


def flag_name(name):
    """The command-line flag of a setting: "n_embd" -> "--n-embd"."""
    return "--" + name.replace("_", "-")


@dataclass
class TrainSettings(Config):
    """The settings every trainer has, by default nanoGPT's CPU configuration's: AdamW at a
    warmup + cosine learning rate (lr_decay_iters None: decay over max_iters; grad_clip 0: no
    clipping), evaluation, seed. A run gets its own from `resolve_settings`."""

    batch_size: int = 12
    max_iters: int = 2000
    learning_rate: float = 1e-3
    min_lr: float = 1e-4
    warmup_iters: int = 100
    lr_decay_iters: int = None
    weight_decay: float = 0.1
    beta1: float = 0.9
    beta2: float = 0.99
    grad_clip: float = 1.0
    eval_interval: int = 250
    seed: int = 1337

    AT_LEAST_1 = ("batch_size", "max_iters", "eval_interval")
    AT_LEAST_0 = ("warmup_iters", "min_lr", "weight_decay", "grad_clip", "seed")
    BELOW_1 = ("beta1", "beta2")

    @classmethod
    def setting_fields(cls):
        """The dataclass fields, the model's first (dataclasses put the base class's first)."""
        return sorted(fields(cls), key=lambda f: f.name in TrainSettings.__dataclass_fields__)

    def validate(self):
        """Return self, or raise ValueError naming (by its flag) the first setting out of range:
        the model's by its config's own checks, then int fields integers (not bool), finite
        rates, AT_LEAST_1 >= 1, AT_LEAST_0 >= 0, BELOW_1 in [0, 1), --lr-decay-iters >= 1,
        --learning-rate > 0 and --min-lr <= --learning-rate (else the cosine "decay" would
        raise the rate)."""
        try:
            self.model_config()
        except ValueError as error:  # "GPTConfig: n_embd=15 must ..." -> "--n-embd 15 must ..."
            names = "|".join(f.name for f in fields(self))
            message = str(error).partition(": ")[2]
            raise ValueError(re.sub(rf"\b({names})\b(=?)",
                                    lambda m: flag_name(m[1]) + " " * len(m[2]), message)) from None
        for f in fields(self):  # a max_iters of 2.5 is never reached
            value = getattr(self, f.name)
            if f.type is int and value is not None and (isinstance(value, bool)
                                                         or not isinstance(value, Integral)):
                raise ValueError(f"{flag_name(f.name)} must be an integer; got {value!r}")
        for name in ("learning_rate", "min_lr", "weight_decay", "grad_clip", "beta1", "beta2"):
            if not math.isfinite(getattr(self, name)):
                raise ValueError(f"{flag_name(name)} must be a finite number; "
                                 f"got {getattr(self, name)}")
        for names, wrong, expected in ((self.AT_LEAST_1, lambda v: v < 1, "must be >= 1"),
                                       (self.AT_LEAST_0, lambda v: v < 0, "must be >= 0"),
                                       (self.BELOW_1, lambda v: not 0 <= v < 1,
                                        "must be in [0, 1)")):
            for name in names:
                if wrong(getattr(self, name)):
                    raise ValueError(f"{flag_name(name)} {expected}; got {getattr(self, name)}")
        if self.lr_decay_iters is not None and self.lr_decay_iters < 1:
            raise ValueError(f"--lr-decay-iters must be >= 1; got {self.lr_decay_iters}")
        if self.learning_rate <= 0:
            raise ValueError(f"--learning-rate must be > 0; got {self.learning_rate}")
        if self.min_lr > self.learning_rate:
            raise ValueError(f"--min-lr {self.min_lr} is above --learning-rate "
                             f"{self.learning_rate}: the cosine decay would raise the rate; "
                             "give --min-lr <= --learning-rate")
        return self


@dataclass
class TrainConfig(TrainSettings):
    """Every setting of a GPT's training run (`microtensor train`); weight_decay applies to
    matrices only (run.configure_optimizer)."""

    n_layer: int = 4
    n_head: int = 4
    n_embd: int = 128
    block_size: int = 64
    dropout: float = 0.0
    bias: bool = False
    activation: str = "gelu"
    norm_first: bool = True
    attention: str = "ordinary"
    eval_iters: int = 20

    AT_LEAST_1 = TrainSettings.AT_LEAST_1 + ("eval_iters",)

    def model_config(self, vocab_size=1):
        """The GPTConfig of the model these settings train, for a vocabulary of `vocab_size`."""
        return GPTConfig(vocab_size=vocab_size, block_size=self.block_size,
                         n_layer=self.n_layer, n_head=self.n_head, n_embd=self.n_embd,
                         dropout=self.dropout, bias=self.bias, norm_first=self.norm_first,
                         activation=self.activation, attention=self.attention)


PRESETS = {
    "baby": TrainConfig(),  # the defaults: nanoGPT's CPU configuration (module docstring)
    # Ours: learns visibly (val loss ~1.5 nats, against 3.25 for the unigram frequencies of
    # the built-in corpus) in 2000 short steps.
    "tiny": TrainConfig(n_layer=2, n_head=2, n_embd=64, block_size=32, batch_size=16,
                        warmup_iters=20, learning_rate=3e-3, min_lr=3e-4, eval_iters=10),
}


def get_preset(name, **overrides):
    """A copy of preset `name` with the given fields replaced (None values are ignored).
    Raises ValueError for an unknown preset or field name."""
    if name not in PRESETS:
        raise ValueError(f"unknown preset {name!r}; choose one of {sorted(PRESETS)}")
    unknown = sorted(set(overrides) - {f.name for f in fields(TrainConfig)})
    if unknown:
        raise ValueError(f"unknown training settings {unknown}")
    return replace(PRESETS[name], **{k: v for k, v in overrides.items() if v is not None})


@dataclass
class TranslateConfig(TrainSettings):
    """Every setting of a `translate train` run; the defaults reach 100% exact match on the
    held-out dates within 1500 steps. Validation losses include the label smoothing: with
    ε = 0.1 they level off near 0.55, not 0, even when every translation is right."""

    batch_size: int = 64
    max_iters: int = 1500
    learning_rate: float = 3e-3
    min_lr: float = 3e-4
    weight_decay: float = 0.0
    beta2: float = 0.98
    d_model: int = 64
    n_heads: int = 4
    n_encoder_layers: int = 2
    n_decoder_layers: int = 2
    d_ff: int = 128
    dropout: float = 0.0
    norm_first: bool = False
    attention: str = "ordinary"
    label_smoothing: float = 0.1  # the paper's ε (§5.4)
    n_train: int = 20000
    n_test: int = 500

    AT_LEAST_1 = TrainSettings.AT_LEAST_1 + ("n_train", "n_test")
    BELOW_1 = TrainSettings.BELOW_1 + ("label_smoothing",)

    def validate(self):
        if self.n_test >= dates.N_DAYS:  # the held-out dates are distinct; training needs one more
            raise ValueError(f"--n-test must be below the task's {dates.N_DAYS:,} dates "
                             f"({dates.YEARS[0]}-{dates.YEARS[1]}); got {self.n_test}")
        return super().validate()

    def model_config(self):
        """The Seq2SeqConfig of the model these settings train on the dates task."""
        return Seq2SeqConfig(dates.source_tokenizer().vocab_size,
                             dates.target_tokenizer().vocab_size, dates.MAX_LEN, self.d_model,
                             self.n_heads, self.n_encoder_layers, self.n_decoder_layers,
                             self.d_ff, dropout=self.dropout, norm_first=self.norm_first,
                             attention=self.attention)


def resolve_settings(config_class, preset=None, flags=None, saved=None, at_iter=None,
                     checkpoint="the checkpoint"):
    """The settings a run trains with, merged and checked here, once.

    Precedence: a flag given beats the preset (default baby; a TranslateConfig has only its
    class defaults); on --resume the checkpoint's saved settings take the preset's place and
    win, and a flag (or a --preset given again) that differs from them is an error, except
    --max-iters.

    config_class: TrainConfig or TranslateConfig; flags: {field name: value} of the flags
    given (a None value counts as not given); saved, at_iter: on --resume, the checkpoint's
    settings (a config_class) and the iteration it is at, `checkpoint` naming it in messages.
    A resumed run given another max_iters keeps the saved decay length (steps past it run at
    min_lr; a shorter run stops above it), so the steps already taken follow the same schedule.

    Raises ValueError naming (by its flag) an unknown preset or setting, a setting out of range
    (`validate`), on --resume a setting that differs from the checkpoint's or a --max-iters it
    has reached (with --preset, each prefixed "--preset NAME: ").
    """
    flags = {name: value for name, value in (flags or {}).items() if value is not None}
    unknown = sorted(set(flags) - {f.name for f in fields(config_class)})
    if unknown:
        raise ValueError(f"unknown training settings {unknown}")
    if config_class is TrainConfig:
        base = get_preset(preset or "baby")
    elif preset is not None:
        raise ValueError(f"preset {preset!r}: {config_class.__name__} has no presets")
    else:
        base = config_class()
    if saved is None:                                   # a fresh run: the preset, then the flags
        return replace(base, **flags).validate()

    # --- a resume: what was asked must be what the checkpoint was trained with --------------
    again = f"--preset {preset}: " if preset else ""    # --preset: the first command again
    asked = replace(base if preset else saved, **flags)
    for f in config_class.setting_fields():
        ours, theirs = getattr(asked, f.name), getattr(saved, f.name)
        if f.name == "max_iters" or (f.name == "lr_decay_iters" and ours is None):
            continue                                    # may change; None asks for nothing
        if ours != theirs:
            raise ValueError(f"{again}{flag_name(f.name)} {ours} differs from the checkpoint's "
                             f"{theirs}: a resumed run keeps its settings (only --max-iters "
                             "may change); start afresh with --overwrite to change it")
    max_iters = flags.get("max_iters", saved.max_iters)
    if max_iters <= at_iter:
        raise ValueError(f"{again}--max-iters {max_iters}: {checkpoint} is at iter {at_iter} "
                         "already; give a larger --max-iters to train on")
    decay = saved.lr_decay_iters
    if decay is None and max_iters != saved.max_iters:
        decay = saved.max_iters                         # the schedule the steps taken followed
    try:                                                # a hand-edited checkpoint's values too
        return replace(saved, max_iters=max_iters, lr_decay_iters=decay).validate()
    except ValueError as error:
        raise ValueError(f"{again}{error}") from None
