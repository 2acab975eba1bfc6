"""The settings of a training run: the GPT's (`TrainConfig`, with the named presets `baby` and
`tiny`), the encoder-decoder's (`TranslateConfig`), their checks, and what a resume keeps.

Every setting of TrainConfig keeps nanoGPT's name; each has a command-line flag (`flag_name`).
`baby` is nanoGPT's documented laptop-CPU configuration for shakespeare_char (Karpathy,
nanoGPT README, "I only have a macbook"); `tiny` is ours, sized to learn visibly in a minute or
two of a laptop CPU core. TranslateConfig follows Vaswani et al. 2017 §5 (Adam with β₂ = 0.98,
warmup, label smoothing).
"""
import math
import re
from dataclasses import dataclass, fields, replace

from ..config import Config
from ..gpt import GPTConfig
from ..seq2seq import Seq2SeqConfig
from ..tasks import dates


def flag_name(name):
    """The command-line flag of a setting: "n_embd" -> "--n-embd"."""
    return "--" + name.replace("_", "-")


def check_settings(config, model_config, at_least_1=(), at_least_0=(), below_1=()):
    """Raise ValueError naming (by its command-line flag) the first setting of `config` out of
    range: the model's by model_config() (the model config's own checks: sizes, heads dividing
    the width, dropout, activation); of the rest, those in at_least_1 must be >= 1, in
    at_least_0 >= 0, in below_1 in [0, 1). Every trainer's learning-rate schedule is checked
    too: finite rates, --learning-rate > 0, --min-lr <= --learning-rate (else the cosine
    "decay" would raise the rate after warmup), --lr-decay-iters None or >= 1.
    """
    try:
        model_config()
    except ValueError as error:  # "GPTConfig: n_embd=15 must ..." -> "--n-embd 15 must ..."
        names = "|".join(f.name for f in fields(config))
        message = str(error).partition(": ")[2]
        raise ValueError(re.sub(rf"\b({names})\b(=?)", lambda m: flag_name(m[1]) + " " * len(m[2]),
                                message)) from None
    for name in ("learning_rate", "min_lr", "weight_decay", "grad_clip", "beta1", "beta2"):
        if not math.isfinite(getattr(config, name)):
            raise ValueError(f"{flag_name(name)} must be a finite number; "
                             f"got {getattr(config, name)}")
    for names, wrong, expected in ((at_least_1, lambda v: v < 1, "must be >= 1"),
                                   (at_least_0, lambda v: v < 0, "must be >= 0"),
                                   (below_1, lambda v: not 0 <= v < 1, "must be in [0, 1)")):
        for name in names:
            if wrong(getattr(config, name)):
                raise ValueError(f"{flag_name(name)} {expected}; got {getattr(config, name)}")
    if config.lr_decay_iters is not None and config.lr_decay_iters < 1:
        raise ValueError(f"--lr-decay-iters must be >= 1; got {config.lr_decay_iters}")
    if config.learning_rate <= 0:
        raise ValueError(f"--learning-rate must be > 0; got {config.learning_rate}")
    if config.min_lr > config.learning_rate:
        raise ValueError(f"--min-lr {config.min_lr} is above --learning-rate "
                         f"{config.learning_rate}: the cosine decay would raise the rate; "
                         "give --min-lr <= --learning-rate")
    return config


def resumed_settings(saved, config):
    """The settings a resumed run trains with: `saved` (the checkpoint's, a dict) with
    `config`'s max_iters.

    Any other setting of `config` that differs from the saved one would change the model or
    what it is trained on: ValueError naming its flag. config.lr_decay_iters None asks for
    nothing (the saved length is kept). When the run is extended and its learning rate
    decayed over max_iters, the decay keeps the saved length (the extra steps run at min_lr),
    so the steps already taken follow the same schedule.
    """
    saved = type(config).from_dict(saved)
    if config.lr_decay_iters is None:
        config = replace(config, lr_decay_iters=saved.lr_decay_iters)
    for f in fields(saved):
        ours, theirs = getattr(config, f.name), getattr(saved, f.name)
        if f.name != "max_iters" and ours != theirs:
            raise ValueError(f"{flag_name(f.name)} {ours} differs from the checkpoint's "
                             f"{theirs}: a resumed run keeps its settings (only --max-iters "
                             "may change); start afresh with --overwrite to change it")
    decay = saved.lr_decay_iters
    if decay is None and config.max_iters != saved.max_iters:
        decay = saved.max_iters
    return replace(saved, max_iters=config.max_iters, lr_decay_iters=decay)


@dataclass
class TrainConfig(Config):
    """Every setting of a GPT's training run: model shape, optimisation, evaluation, seed.

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
    attention: str = "ordinary"
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
        return check_settings(self, lambda: self.gpt_config(vocab_size=1),
                              at_least_1=("batch_size", "max_iters", "eval_interval",
                                          "eval_iters"),
                              at_least_0=("warmup_iters", "min_lr", "weight_decay", "grad_clip",
                                          "seed"),
                              below_1=("beta1", "beta2"))

    def gpt_config(self, vocab_size):
        """The GPTConfig of the model these settings train, for a vocabulary of `vocab_size`."""
        return GPTConfig(vocab_size=vocab_size, block_size=self.block_size,
                         n_layer=self.n_layer, n_head=self.n_head, n_embd=self.n_embd,
                         dropout=self.dropout, bias=self.bias, norm_first=self.norm_first,
                         activation=self.activation, attention=self.attention)


PRESETS = {
    # nanoGPT's CPU config: n_layer 4, n_head 4, n_embd 128, block 64, batch 12,
    # no dropout, no biases, 2000 iters, lr 1e-3 -> 1e-4, beta2 0.99.
    "baby": TrainConfig(),
    # Ours: a run that learns visibly (val loss ~1.5 nats, against 3.25 for the unigram
    # frequencies of the built-in corpus) in 2000 short steps.
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
    unknown = sorted(set(overrides) - {f.name for f in fields(TrainConfig)})
    if unknown:
        raise ValueError(f"unknown training settings {unknown}")
    return replace(PRESETS[name], **{k: v for k, v in overrides.items() if v is not None})


@dataclass
class TranslateConfig(Config):
    """Every setting of a `translate train` run; the defaults reach 100% exact match on the
    held-out dates within 1500 steps.

    Validation losses include the label smoothing: with ε = 0.1 they level off near 0.55,
    not 0, even when every translation is right.
    """

    # model
    d_model: int = 64
    n_heads: int = 4
    n_encoder_layers: int = 2
    n_decoder_layers: int = 2
    d_ff: int = 128
    dropout: float = 0.0
    norm_first: bool = False
    attention: str = "ordinary"
    # optimisation
    batch_size: int = 64
    max_iters: int = 1500
    learning_rate: float = 3e-3
    min_lr: float = 3e-4
    warmup_iters: int = 100
    lr_decay_iters: int = None
    weight_decay: float = 0.0
    beta1: float = 0.9
    beta2: float = 0.98
    grad_clip: float = 1.0
    label_smoothing: float = 0.1  # the paper's ε (§5.4)
    # data, evaluation and reproducibility
    n_train: int = 20000
    n_test: int = 500
    eval_interval: int = 250
    seed: int = 1337

    def validate(self):
        """Raise ValueError naming (by its command-line flag) the first setting out of range."""
        return check_settings(self, self.model_config,
                              at_least_1=("batch_size", "n_train", "n_test", "eval_interval"),
                              at_least_0=("max_iters", "warmup_iters", "min_lr", "weight_decay",
                                          "grad_clip", "seed"),
                              below_1=("beta1", "beta2", "label_smoothing"))

    def model_config(self):
        """The Seq2SeqConfig of the model these settings train on the dates task."""
        return Seq2SeqConfig(dates.source_tokenizer().vocab_size,
                             dates.target_tokenizer().vocab_size, dates.MAX_LEN, self.d_model,
                             self.n_heads, self.n_encoder_layers, self.n_decoder_layers,
                             self.d_ff, dropout=self.dropout, norm_first=self.norm_first,
                             attention=self.attention)
