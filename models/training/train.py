"""Training the GPT (on characters, or BPE tokens), read top to bottom: settings -> data ->
model -> the loop (batch, forward, loss.backward(), clip, step, evaluate, save). run.py keeps
the --out directory, checkpoints, resume and signals; data_parallel.py joins only for
processes > 1.
References: Karpathy, nanoGPT `train.py` (the same recipe, written from scratch); Radford et
al. 2019 (GPT-2).
"""
import contextlib
import hashlib

import numpy as np

import microtensor
import nn

from ..gpt import GPT
from .data import encode_text, get_batch, split_ids
from .data_parallel import DataParallel
from .run import TrainingRun, configure_optimizer
from .settings import TrainConfig


def estimate_loss(model, splits, eval_iters, batch_size, block_size, seed=0, batch_loss=None):
    """{split name: mean loss over eval_iters random batches of ids [N]}, in eval mode without
    a graph; batch_loss(x, y) is a batch's loss as a float (default: the model's). The batches
    come from a generator seeded with `seed`, not the run's: every evaluation sees the same
    ones, and --eval-interval does not change what is trained."""
    batch_loss = batch_loss or (lambda x, y: model(x, y)[1].item())
    model.eval()
    out = {}
    with microtensor.no_grad():
        for name, ids in splits.items():
            generator = np.random.default_rng(seed)
            out[name] = float(np.mean([batch_loss(*get_batch(ids, batch_size, block_size,
                                                             generator))
                                       for _ in range(eval_iters)]))
    model.train()
    return out


def _corpus_sha256(tokenizer, ids):
    """A fingerprint of the corpus as the model sees it: its vocabulary and every id."""
    digest = hashlib.sha256(tokenizer.fingerprint().encode("utf-8"))
    for start in range(0, len(ids), 1 << 20):  # a million ids at a time: never the whole file
        digest.update(np.ascontiguousarray(ids[start:start + (1 << 20)]))
    return digest.hexdigest()


def train(run, corpus, source="the text", progress=True, data_path=None, log_grad_norms=False,
          processes=1, on_evaluation=None):
    """Train a GPT on `corpus`, the (tokenizer, ids [N]) of data.load_corpus or
    id_file.encode_text, as `run` (a TrainingRun whose settings are resolved:
    `run.settings(TrainConfig, preset, flags)`) says; its checkpoints go to run's --out.
    Returns the last evaluation {"iter", "train_loss", "val_loss", "best_val_loss",
    "elapsed_s"}.

    Each evaluation (iteration 0, every eval_interval, the end) is printed, logged to
    metrics.jsonl (log_grad_norms adds "grad_norms": {module: ‖∂L/∂θ‖} of the step before,
    before clipping) and saved. `source` names the text in messages; `data_path` is recorded
    for a resume to find it again. processes > 1 splits each batch's rows over processes
    (data_parallel.py): the same steps up to rounding (with dropout, other masks and batches),
    so a resume may use another count. `on_evaluation(model, it)` runs after each evaluation
    (`train --explore` writes its page there); it must leave the model, its gradients and the
    random state as it found them.

    Raises ValueError for settings not resolved by run.settings, a text too short for
    block_size, a resume with other text, processes outside [1, batch_size]; what TrainingRun
    raises; run.Interrupted after SIGINT/SIGTERM (saved); run.NonFiniteLoss for a NaN or
    infinite loss.
    """
    # --- settings: resolved once, before (run.settings: on resume, the checkpoint's) ---------
    config = run.config
    if config is None:
        raise ValueError("train: the run's settings are not resolved; call "
                         "run.settings(TrainConfig, preset, flags)")

    # --- data: the text's ids, split 90/10 ---------------------------------------------------
    tokenizer, ids = corpus                                            # ids [N] uint8/16
    data = {"source": source, "path": data_path, "sha256": _corpus_sha256(tokenizer, ids),
            tokenizer.unit: len(ids)}                                  # "characters" or "tokens"
    if run.resuming and run.manifest["info"]["data"].get("sha256") != data["sha256"]:
        trained_on = run.manifest["info"]["data"]["source"]
        what = (f"{source} has changed since the checkpoint in {run.out_dir} was trained on it"
                if trained_on == source else f"{source} is not the text the checkpoint in "
                f"{run.out_dir} was trained on ({trained_on})")
        raise ValueError(f"{what}; a resumed run needs the same data (--data)")
    microtensor.manual_seed(config.seed)
    train_ids, val_ids = split_ids(ids, config.block_size, source, tokenizer.unit)

    # --- model and optimizer (on resume: the latest state loaded into them) ------------------
    model = GPT(config.model_config(tokenizer.vocab_size))
    optimizer = configure_optimizer(model, config)
    # several processes only when asked: each computes forward and backward on its rows
    parallel = (DataParallel(model, lambda x, y: model(x, y)[1], processes,
                             (config.batch_size, config.block_size), reseed=config.dropout > 0)
                if processes != 1 else None)  # DataParallel refuses a count out of range
    info = {**tokenizer.to_info(), "train_config": config.to_dict(), "data": data,
            "processes": processes}
    about = (f"GPT on {source} ({len(train_ids):,} train / {len(val_ids):,} val "
             f"{tokenizer.unit}, vocabulary {tokenizer.vocab_size})")
    it = run.start(model, optimizer, info, about, progress)  # before `parallel` forks workers
    grad_norms = None  # of the latest step, when log_grad_norms

    def evaluate(it):
        """Mean loss of each split, logged to metrics.jsonl, then the checkpoint saved."""
        losses = estimate_loss(model, {"train": train_ids, "val": val_ids}, config.eval_iters,
                               config.batch_size, config.block_size, seed=config.seed + 1,
                               batch_loss=parallel.loss if parallel else None)
        run.record_evaluation(it, losses["train"], losses["val"],
                              logged={"grad_norms": grad_norms} if grad_norms else None)
        if on_evaluation is not None:
            on_evaluation(model, it)

    # --- the loop ------------------------------------------------------------------------------
    # `running`: a progress bar, Ctrl-C stops at a step boundary, --out unlocked at the end;
    # `parallel`: its workers (if any) live until the loop ends, however it ends
    with parallel or contextlib.nullcontext(), run.running(it, "train"):
        while True:
            if run.evaluation_due(it):          # at 0, every eval_interval, at the end
                evaluate(it)
            if it == config.max_iters:
                break
            run.stop_if_asked(it)               # after Ctrl-C: save, raise Interrupted
            lr = run.set_learning_rate(it)      # warmup, then cosine decay
            x, y = get_batch(train_ids, config.batch_size, config.block_size)  # [B, T] each
            optimizer.zero_grad()
            if parallel is None:
                _, loss = model(x, y)           # forward: the mean cross-entropy
                loss.backward()                 # backward: every parameter's .grad
                loss = loss.item()
            else:                               # the same, the rows split over processes
                loss = parallel.forward_backward(x, y)
            run.check_finite(loss, it, "training loss")  # before a step spoils the weights
            if log_grad_norms:
                grad_norms = nn.utils.grad_norms_by_module(model)
            if config.grad_clip > 0:
                nn.utils.clip_grad_norm_(model.parameters(), config.grad_clip)  # clip
            optimizer.step()                    # AdamW step
            it += 1
            run.stepped(loss, lr)
    return run.result()


def train_on_text(config, text, out_dir, resume=False, overwrite=False, **options):
    """train() in one call for a script or a test: a TrainingRun on out_dir (resume or
    overwrite it), the settings `config` (a TrainConfig) resolved by it as if each were a flag
    given, the str `text` encoded (id_file.encode_text); `options` are train()'s. Returns
    what train() returns."""
    run = TrainingRun(out_dir, resume=resume, overwrite=overwrite)
    run.settings(TrainConfig, flags=config.to_dict())
    return train(run, encode_text(text), **options)
