"""Training settings: what every trainer's settings share (`Settings`, `check_settings`,
`check_same_settings`), the GPT's (`TrainConfig`) and its named presets `baby` and `tiny`.

Every setting of TrainConfig keeps nanoGPT's name.

`baby` is nanoGPT's documented laptop-CPU configuration for shakespeare_char
(Karpathy, nanoGPT README, "I only have a macbook"); `tiny` is ours, sized by
measurement to finish in about a minute on a 2-core CPU.
"""
import math
from dataclasses import asdict, dataclass, fields, replace

from ..gpt import GPTConfig


def flag_name(name):
    """The command-line flag of a setting: "n_embd" -> "--n-embd"."""
    return "--" + name.replace("_", "-")


def check_settings(config, at_least_1=(), at_least_0=(), below_1=()):
    """Raise ValueError naming (by its command-line flag) the first setting of `config` out of
    range: those named in at_least_1 must be >= 1, in at_least_0 >= 0, in below_1 in [0, 1).

    Every training config has a learning-rate schedule, checked too: --lr-decay-iters None
    or >= 1, --learning-rate > 0, and --min-lr <= --learning-rate (else the cosine "decay"
    would raise the rate after warmup; equal rates are a constant schedule).
    """
    for name in at_least_1:
        if getattr(config, name) < 1:
            raise ValueError(f"{flag_name(name)} must be >= 1; got {getattr(config, name)}")
    for name in at_least_0:
        if getattr(config, name) < 0:
            raise ValueError(f"{flag_name(name)} must be >= 0; got {getattr(config, name)}")
    if config.lr_decay_iters is not None and config.lr_decay_iters < 1:
        raise ValueError(f"--lr-decay-iters must be >= 1; got {config.lr_decay_iters}")
    if config.learning_rate <= 0:
        raise ValueError(f"--learning-rate must be > 0; got {config.learning_rate}")
    if config.min_lr > config.learning_rate:
        raise ValueError(f"--min-lr {config.min_lr} is above --learning-rate "
                         f"{config.learning_rate}: the cosine decay would raise the rate; "
                         "give --min-lr <= --learning-rate")
    for name in below_1:
        if not 0 <= getattr(config, name) < 1:
            raise ValueError(f"{flag_name(name)} must be in [0, 1); got {getattr(config, name)}")


def check_same_settings(saved, config):
    """Raise ValueError naming the flag of the first setting but max_iters in which `config`
    differs from `saved` (both of one dataclass): a resumed run keeps its settings."""
    for f in fields(saved):
        ours, theirs = getattr(config, f.name), getattr(saved, f.name)
        if f.name != "max_iters" and ours != theirs:
            raise ValueError(f"{flag_name(f.name)} {ours} differs from the checkpoint's "
                             f"{theirs}: a resumed run keeps its settings (only --max-iters "
                             "may change); start afresh with --overwrite to change it")


class Settings:
    """What the settings dataclasses of the trainers share: to_dict and its checked inverse."""

    def to_dict(self):
        return asdict(self)

    @classmethod
    def from_dict(cls, d):
        """Inverse of `to_dict`; raises ValueError naming unknown or missing settings, or
        one whose value has the wrong type (e.g. in a hand-edited config.json)."""
        if not isinstance(d, dict):
            raise ValueError(f"{cls.__name__}: expected a dict of settings; got {d!r}")
        names = {f.name for f in fields(cls)}
        if set(d) != names:
            raise ValueError(f"{cls.__name__}: unknown settings {sorted(set(d) - names)}, "
                             f"missing {sorted(names - set(d))}")
        for f in fields(cls):
            value = d[f.name]
            allowed = (int, float) if f.type is float else (f.type,)  # JSON writes 1.0 as 1
            if value is None and f.default is None:
                continue
            # bool is an int to isinstance, so True must not pass as a size
            if not isinstance(value, allowed) or isinstance(value, bool) != (f.type is bool):
                raise ValueError(f"{cls.__name__}: {f.name} must be {f.type.__name__}; "
                                 f"got {value!r}")
        return cls(**d)


@dataclass
class TrainConfig(Settings):
    """Every setting of a training run: model shape, optimisation, evaluation, seed.

    lr_decay_iters=None decays the learning rate over max_iters; grad_clip=0 turns
    clipping off; weight_decay applies to matrices only (parameters with ndim >= 2).
    """

    # model
    n_layer: int = 4
    n_head: int = 4
    n_embd: int = 128
    block_size: int = 64
    dropout: float = 0.0
    bias: bool = False
    activation: str = "gelu"
    norm_first: bool = True
    # optimisation
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
    # evaluation and reproducibility
    eval_interval: int = 250
    eval_iters: int = 20
    seed: int = 1337

    def validate(self):
        """Raise ValueError naming (by its command-line flag) the first setting out of range."""
        for name in ("learning_rate", "min_lr", "weight_decay", "grad_clip", "dropout", "beta1",
                     "beta2"):
            if not math.isfinite(getattr(self, name)):
                raise ValueError(f"{flag_name(name)} must be a finite number; "
                                 f"got {getattr(self, name)}")
        check_settings(self, at_least_1=("n_layer", "n_head", "n_embd", "block_size",
                                          "batch_size", "max_iters", "eval_interval",
                                          "eval_iters"),
                       at_least_0=("warmup_iters", "min_lr", "weight_decay", "grad_clip", "seed"),
                       below_1=("dropout", "beta1", "beta2"))
        if self.n_embd % self.n_head:
            raise ValueError(f"--n-embd {self.n_embd} must be divisible by --n-head {self.n_head}")
        if self.activation not in ("gelu", "relu"):
            raise ValueError(f"--activation must be 'gelu' or 'relu'; got {self.activation!r}")
        return self

    def gpt_config(self, vocab_size):
        """The GPTConfig of the model these settings train, for a vocabulary of `vocab_size`."""
        return GPTConfig(vocab_size=vocab_size, block_size=self.block_size,
                         n_layer=self.n_layer, n_head=self.n_head, n_embd=self.n_embd,
                         dropout=self.dropout, bias=self.bias, norm_first=self.norm_first,
                         activation=self.activation)


PRESETS = {
    # nanoGPT's CPU config: n_layer 4, n_head 4, n_embd 128, block 64, batch 12,
    # no dropout, no biases, 2000 iters, lr 1e-3 -> 1e-4, beta2 0.99.
    "baby": TrainConfig(),
    # Ours: a run that learns visibly (val loss ~1.5 nats, against 3.25 for the unigram
    # frequencies of the built-in corpus) in about a minute on 2 CPU cores
    # (measured: ~22 ms per step there, so 2000 steps + evaluations ~ 50 s).
    "tiny": TrainConfig(n_layer=2, n_head=2, n_embd=64, block_size=32, batch_size=16,
                        max_iters=2000, warmup_iters=20, learning_rate=3e-3, min_lr=3e-4,
                        eval_interval=250, eval_iters=10),
}


def get_preset(name, **overrides):
    """A copy of preset `name` with the given fields replaced (None values are ignored).

    Raises ValueError for an unknown preset or field name.
    """
    if name not in PRESETS:
        raise ValueError(f"unknown preset {name!r}; choose one of {sorted(PRESETS)}")
    names = {f.name for f in fields(TrainConfig)}
    unknown = sorted(set(overrides) - names)
    if unknown:
        raise ValueError(f"unknown training settings {unknown}")
    return replace(PRESETS[name], **{k: v for k, v in overrides.items() if v is not None})
