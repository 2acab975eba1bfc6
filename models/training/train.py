"""Training the character-level GPT: its optimizer groups, batches, evaluation and resume rules.

The loop itself (AdamW with warmup + cosine decay and gradient clipping, periodic
evaluation, best and latest checkpoints, exact resume, signals, metrics) is models/training/run.py's
and models/training/loop.py's, shared with the encoder-decoder's trainer; this file gives it what is
the GPT's.

References: Karpathy, nanoGPT `train.py` (the same recipe, written from scratch);
Loshchilov & Hutter 2019 (AdamW); Radford et al. 2019 (GPT-2).
"""
import hashlib
import sys
from dataclasses import replace

import numpy as np
from tqdm import tqdm

import microtensor
import nn

from ..gpt import GPT
from .data import encode_text, get_batch, split_ids
from .data_parallel import DataParallel
from .run import TrainingRun
from .settings import TrainConfig, check_same_settings


def estimate_loss(model, splits, eval_iters, batch_size, block_size, seed=0, batch_loss=None):
    """{split name: mean loss over eval_iters random batches}, in eval mode without a graph.

    batch_loss(x, y) gives a batch's loss as a float (default: the model's; train passes
    DataParallel.loss, which splits the batch over its processes).

    The batches come from a generator of their own, seeded with `seed`: every evaluation
    sees the same batches (so the points of a loss curve compare like with like), and
    evaluating does not consume the training run's random numbers (so changing
    --eval-interval does not change what is trained, and resuming needs no state for it).
    """
    batch_loss = batch_loss or (lambda x, y: model(x, y)[1].item())
    model.eval()
    out = {}
    with microtensor.no_grad():
        for name, ids in splits.items():
            generator = np.random.default_rng(seed)
            losses = [batch_loss(*get_batch(ids, batch_size, block_size, generator))
                      for _ in range(eval_iters)]
            out[name] = float(np.mean(losses))
    model.train()
    return out


def configure_optimizer(model, config):
    """AdamW with weight decay on matrices (embeddings, Linear weights) only.

    Biases and LayerNorm weights are vectors (ndim < 2) and form a second group with
    weight_decay 0, as in nanoGPT: they hold few parameters, so decaying them regularises
    little, and pulling a LayerNorm gain toward zero would shrink its whole output.
    """
    params = model.parameters()
    groups = [{"params": [p for p in params if p.ndim >= 2], "weight_decay": config.weight_decay},
              {"params": [p for p in params if p.ndim < 2], "weight_decay": 0.0}]
    return nn.optim.AdamW(groups, lr=config.learning_rate, betas=(config.beta1, config.beta2),
                          weight_decay=config.weight_decay)


def resumed_config(saved, config):
    """The settings a resumed run trains with: `saved` (a dict), with `config`'s max_iters.

    Any other setting of `config` that differs from the saved one would change the model
    or what it is trained on: ValueError naming its flag. When the run is extended and
    its learning rate decayed over max_iters, the decay keeps the saved length (the extra
    steps run at min_lr), so the steps already taken follow the same schedule.
    """
    saved = TrainConfig.from_dict(saved)
    check_same_settings(saved, config)
    if config.max_iters != saved.max_iters and saved.lr_decay_iters is None:
        return replace(saved, max_iters=config.max_iters, lr_decay_iters=saved.max_iters)
    return replace(saved, max_iters=config.max_iters)


def _corpus_sha256(tokenizer, ids):
    """A fingerprint of the corpus as the model sees it: its vocabulary and every id."""
    digest = hashlib.sha256("".join(tokenizer.chars).encode("utf-8"))
    for start in range(0, len(ids), 1 << 20):  # a million ids at a time: never the whole file
        digest.update(np.ascontiguousarray(ids[start:start + (1 << 20)]))
    return digest.hexdigest()


def train(config, text, out_dir, source="the text", progress=True, resume=False,
          overwrite=False, data_path=None, log_grad_norms=False, processes=1):
    """Train a GPT on `text` as configured by `config` (a TrainConfig); checkpoints go to out_dir.

    `text` is a str or the (tokenizer, ids) pair of models.training.data.load_corpus.

    Evaluates at iteration 0, every eval_interval and at the end; each evaluation prints
    both losses, appends {"iter", "train_loss", "val_loss", "elapsed_s"} to
    out_dir/metrics.jsonl (with log_grad_norms, also "grad_norms": {module: ‖∂L/∂θ‖} of
    the last step before it, before clipping, per `nn.utils.grad_norms_by_module`; none at
    iter 0) and saves the latest state (and the model, when its validation
    loss is the best so far). `source` names the text in messages; `data_path` (the file
    it came from) is recorded so that a resume can find it again.

    processes > 1 splits each batch's rows over that many processes, one BLAS thread each
    (models/training/data_parallel.py): the same gradient up to float32 rounding. It is how the run
    is computed, not what is trained: it is recorded as info["processes"] of the
    checkpoint, and a resume may use another count (the same math, other float32
    rounding; with dropout, other random masks and, from the second step on, other batches:
    the workers' seeds and the parent's masks come from the generator that draws batches).

    resume=True continues the latest state in out_dir (config must equal its settings
    but for max_iters, and text must be the same text); overwrite=True replaces a
    checkpoint there; with neither, a checkpoint in out_dir is refused before anything
    is written. SIGINT/SIGTERM save the latest state and raise `run.Interrupted`; a NaN
    or infinite loss raises `run.NonFiniteLoss` and keeps the last good checkpoint.

    Returns {"iter", "train_loss", "val_loss", "best_val_loss", "elapsed_s"} of the last
    evaluation. Raises ValueError for invalid settings, a text too short for block_size,
    a resume with other settings or text, processes outside [1, batch_size], or
    `run.CheckpointExists`.
    """
    run = TrainingRun(out_dir, resume=resume, overwrite=overwrite)
    config = run.settings(config, resumed_config)
    tokenizer, ids = encode_text(text) if isinstance(text, str) else text  # ids [N] uint8/16
    data = {"source": source, "path": data_path, "sha256": _corpus_sha256(tokenizer, ids),
            "characters": len(ids)}
    if resume and run.manifest["info"]["data"]["sha256"] != data["sha256"]:
        trained_on = run.manifest["info"]["data"]["source"]
        what = (f"{source} has changed since the checkpoint in {out_dir} was trained on it"
                if trained_on == source else
                f"{source} is not the text the checkpoint in {out_dir} was trained on "
                f"({trained_on})")
        raise ValueError(f"{what}; a resumed run needs the same data (--data)")
    microtensor.manual_seed(config.seed)
    train_ids, val_ids = split_ids(ids, config.block_size, source)
    model = GPT(config.gpt_config(tokenizer.vocab_size))
    model.train()
    optimizer = configure_optimizer(model, config)
    parallel = DataParallel(model, lambda x, y: model(x, y)[1], processes,
                            (config.batch_size, config.block_size), reseed=config.dropout > 0)
    info = {"vocab": tokenizer.chars, "train_config": config.to_dict(), "data": data,
            "processes": processes}
    it = run.start(model, optimizer, info)  # loaded before the workers fork (`with` below)

    say = tqdm.write if progress else print
    resuming = f"resuming at iter {it}: " if resume else ""
    say(f"{resuming}training a {model.num_parameters():,}-parameter GPT on {source} "
        f"({len(train_ids):,} train / {len(val_ids):,} val characters, "
        f"vocabulary {tokenizer.vocab_size})", file=sys.stdout)

    def forward_backward():
        x, y = get_batch(train_ids, config.batch_size, config.block_size)  # [B, T]
        return parallel.forward_backward(x, y)

    grad_norms = None  # of the latest step, when log_grad_norms

    def keep_grad_norms():
        nonlocal grad_norms
        grad_norms = nn.utils.grad_norms_by_module(model)

    def evaluate(it):
        losses = estimate_loss(model, {"train": train_ids, "val": val_ids}, config.eval_iters,
                               config.batch_size, config.block_size, seed=config.seed + 1,
                               batch_loss=parallel.loss)
        for split, value in losses.items():
            run.check_finite(value, it, f"{split} loss")
        last = {"iter": it, "train_loss": losses["train"], "val_loss": losses["val"],
                "elapsed_s": run.elapsed()}
        say(f"iter {it}: train loss {last['train_loss']:.4f}, "
            f"val loss {last['val_loss']:.4f}", file=sys.stdout)
        run.record_evaluation(last, dict(last, grad_norms=grad_norms) if grad_norms else None)

    with parallel:  # workers (if any) live until the loop ends, however it ends
        return run.loop(it, config, forward_backward, evaluate, "train", progress,
                        tokens_per_step=config.batch_size * config.block_size,
                        after_backward=keep_grad_norms if log_grad_norms else None)
