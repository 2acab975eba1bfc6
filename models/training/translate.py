"""Training the encoder-decoder on the built-in dates task: settings (`TranslateConfig`),
teacher-forced steps with AdamW, warmup + cosine decay, and evaluation by exact match on
held-out dates.

The loop, the AdamW step, the --out directory, resume, signals and checkpoints are those of
`microtensor train` (models/training/run.py, models/training/loop.py, models/training/checkpoint.py); the model is
registered there as kind "seq2seq".
References: Vaswani et al. 2017 §5 (Adam with β₂ = 0.98 and warmup, label smoothing,
dropout); course notes 3.7 (teacher forcing: one forward trains every target position).
"""
import sys
from dataclasses import dataclass, replace

import numpy as np
from tqdm import tqdm

import microtensor
import nn

from ..seq2seq import Seq2SeqConfig, Seq2SeqTransformer
from ..tasks import dates as task
from .checkpoint import (
    CheckpointError,
    load_model,
    register_model,
)
from .loop import backward_of
from .run import TrainingRun
from .settings import Settings, check_same_settings, check_settings

KIND = "seq2seq"
register_model(KIND, Seq2SeqTransformer, Seq2SeqConfig)


@dataclass
class TranslateConfig(Settings):
    """Every setting of a `translate train` run; the defaults reach 100% exact match on the
    held-out dates within 1500 steps (about 90 s of one CPU core).

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
        check_settings(self, at_least_1=("d_model", "n_heads", "n_encoder_layers",
                                          "n_decoder_layers", "d_ff", "batch_size", "n_train",
                                          "n_test", "eval_interval"),
                       at_least_0=("max_iters", "warmup_iters", "min_lr", "weight_decay",
                                   "grad_clip", "seed"),
                       below_1=("dropout", "beta1", "beta2", "label_smoothing"))
        if self.d_model % self.n_heads:
            raise ValueError(f"--d-model {self.d_model} must be divisible by "
                             f"--n-heads {self.n_heads}")
        return self

    def model_config(self, src_vocab_size, tgt_vocab_size):
        return Seq2SeqConfig(src_vocab_size, tgt_vocab_size, task.MAX_LEN, self.d_model,
                             self.n_heads, self.n_encoder_layers, self.n_decoder_layers,
                             self.d_ff, dropout=self.dropout, norm_first=self.norm_first)


def evaluate(model, pairs, src_tokenizer, tgt_tokenizer, label_smoothing=0.0, exact=True,
             batch_size=250):
    """{"loss": mean teacher-forced loss over `pairs`, "exact_match": fraction or None} (eval mode).

    exact=False skips the greedy translations (the slow part) and gives exact_match None.
    """
    model.eval()
    losses, weights = [], []
    with microtensor.no_grad():
        for i in range(0, len(pairs), batch_size):
            chunk = pairs[i:i + batch_size]
            _, loss = model(*task.encode_batch(chunk, src_tokenizer, tgt_tokenizer),
                            label_smoothing=label_smoothing)
            losses.append(loss.item())
            weights.append(len(chunk))
        match = task.exact_match(model, pairs, src_tokenizer, tgt_tokenizer) if exact else None
    model.train()
    return {"loss": float(np.average(losses, weights=weights)), "exact_match": match}


def resumed_config(saved, config):
    """The settings a resumed run trains with: `saved` (a dict) with `config`'s max_iters.

    Any other difference would change the model or its data: ValueError naming the flag.
    When max_iters grows, the cosine decay keeps its saved length (the extra steps run at
    min_lr), so the steps already taken follow the same schedule.
    """
    saved = TranslateConfig.from_dict(saved)
    check_same_settings(saved, config)
    decay = saved.lr_decay_iters or saved.max_iters
    return replace(saved, max_iters=config.max_iters, lr_decay_iters=decay)


def load_translator(out_dir, which="best"):
    """(model in eval mode, source and target tokenizers, manifest) of a `translate train` run.

    Raises FileNotFoundError when out_dir holds no checkpoint, CheckpointError (a
    ValueError naming the file) when it is broken or holds another kind of model.
    """
    model, manifest = load_model(out_dir, which, kind=KIND)
    try:
        src_tok = task.Seq2SeqTokenizer(manifest["info"]["src_vocab"])
        tgt_tok = task.Seq2SeqTokenizer(manifest["info"]["tgt_vocab"])
    except (KeyError, TypeError, ValueError) as error:
        raise CheckpointError(f"{out_dir}: info.src_vocab / info.tgt_vocab are not "
                              f"vocabularies ({error})") from None
    if (src_tok.vocab_size, tgt_tok.vocab_size) != (model.config.src_vocab_size,
                                                     model.config.tgt_vocab_size):
        raise CheckpointError(f"{out_dir}: the vocabularies do not match model_config")
    return model, src_tok, tgt_tok, manifest


def train_translation(config, out_dir, progress=True, resume=False, overwrite=False):
    """Train a Seq2SeqTransformer on the dates task; evaluations and checkpoints go to out_dir.

    Evaluates at iteration 0, every eval_interval and at the end: the teacher-forced loss
    on the first n_test training pairs and on the held-out pairs, and the exact match of
    greedy translations of the held-out pairs. Each evaluation appends {"iter",
    "train_loss", "val_loss", "exact_match", "elapsed_s"} to metrics.jsonl and saves the
    latest state (and the model, when its validation loss is the best so far).

    The rules of `microtensor train` (models/training/run.py): a checkpoint in out_dir is refused
    unless resume (continue its latest state; only max_iters may change; the result is
    bit-identical to an uninterrupted run) or overwrite; SIGINT/SIGTERM save the latest
    state and raise run.Interrupted; a NaN or infinite loss raises run.NonFiniteLoss.
    Returns the last evaluation's record plus "best_val_loss".
    """
    run = TrainingRun(out_dir, resume=resume, overwrite=overwrite, kind=KIND)
    config = run.settings(config, resumed_config)
    microtensor.manual_seed(config.seed)
    src_tok, tgt_tok = task.source_tokenizer(), task.target_tokenizer()
    train_pairs, test_pairs = task.date_pairs(config.n_train, config.n_test, seed=config.seed)
    model = Seq2SeqTransformer(config.model_config(src_tok.vocab_size, tgt_tok.vocab_size))
    model.train()
    optimizer = nn.optim.AdamW(model.parameters(), lr=config.learning_rate,
                               betas=(config.beta1, config.beta2),
                               weight_decay=config.weight_decay)
    info = {"src_vocab": src_tok.chars.chars, "tgt_vocab": tgt_tok.chars.chars,
            "train_config": config.to_dict(),
            "data": {"source": "the built-in dates task (models/tasks/dates.py)"}}
    it = run.start(model, optimizer, info)
    say = tqdm.write if progress else print
    resuming = f"resuming at iter {it}: " if resume else ""
    say(f"{resuming}training a {model.num_parameters():,}-parameter encoder-decoder on dates "
        f"in words -> ISO ({len(train_pairs):,} train / {len(test_pairs):,} held-out pairs)",
        file=sys.stdout)

    def batch_loss():
        """The teacher-forced loss of a random batch of training pairs."""
        rows = microtensor.random.generator().integers(len(train_pairs), size=config.batch_size)
        batch = task.encode_batch([train_pairs[i] for i in rows], src_tok, tgt_tok)
        return model(*batch, label_smoothing=config.label_smoothing)[1]

    def evaluate_at(it):
        val = evaluate(model, test_pairs, src_tok, tgt_tok, config.label_smoothing)
        trn = evaluate(model, train_pairs[:config.n_test], src_tok, tgt_tok,
                       config.label_smoothing, exact=False)
        for what, value in (("train loss", trn["loss"]), ("val loss", val["loss"])):
            run.check_finite(value, it, what)
        last = {"iter": it, "train_loss": trn["loss"], "val_loss": val["loss"],
                "exact_match": val["exact_match"], "elapsed_s": run.elapsed()}
        say(f"iter {it}: train loss {last['train_loss']:.4f}, val loss {last['val_loss']:.4f}, "
            f"exact match {last['exact_match']:.1%}", file=sys.stdout)
        run.record_evaluation(last)

    return run.loop(it, config, backward_of(batch_loss), evaluate_at, "translate", progress)
