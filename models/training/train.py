"""Training the GPT, read top to bottom as nanoGPT's `train.py`: data -> model and AdamW -> the
loop (schedule, batch, forward, loss.backward(), clip, step; evaluate and save the checkpoint).
run.py keeps the --out directory, the checkpoint files, resume, the lock, Ctrl-C and the
progress bar; data_parallel.py joins only for --processes > 1.
References: Karpathy, nanoGPT `train.py` (the same recipe, written from scratch); Radford et
al. 2019 (GPT-2); Loshchilov & Hutter 2019 (AdamW).
"""
import contextlib

import numpy as np

import microtensor
import nn

from ..gpt import GPT
from .data import describe_data, get_batch, split_ids
from .data_parallel import data_parallel
from .run import configure_optimizer


def estimate_loss(model, splits, eval_iters, batch_size, block_size, seed=0, batch_loss=None):
    """{split name: mean loss over eval_iters random batches of ids [N]}, in eval mode without a
    graph; batch_loss(x, y): a batch's loss, a float (default: the model's). The batches come
    from their own generator seeded with `seed`: the same each time, the run's left alone."""
    batch_loss = batch_loss or (lambda x, y: model(x, y)[1].item())
    model.eval()
    out = {}
    with microtensor.no_grad():
        for name, ids in splits.items():
            generator = np.random.default_rng(seed)
            batches = (get_batch(ids, batch_size, block_size, generator) for _ in range(eval_iters))
            out[name] = float(np.mean([batch_loss(x, y) for x, y in batches]))
    model.train()
    return out


def train(run, corpus, source="the text", progress=True, data_path=None, log_grad_norms=False,
          processes=1, on_evaluation=None):
    """Train a GPT on `corpus` (tokenizer, ids [N]) as the TrainingRun `run` says, saving into
    its --out; returns the last evaluation {"iter", "train_loss", "val_loss", "best_val_loss",
    "elapsed_s"}. log_grad_norms: each module's ‖∂L/∂θ‖ (before clipping) into metrics.jsonl;
    processes > 1: each batch's rows split over processes (data_parallel.py); on_evaluation(model,
    it) after each evaluation (`train --explore`), leaving the model as it found it. Errors:
    ValueError (settings, text, processes), run.Interrupted (saved), run.NonFiniteLoss.
    """
    config = run.resolved_settings("train", "TrainConfig, preset, flags")
    tokenizer, ids = corpus                                 # ids [N] uint8/16
    data = describe_data(run, tokenizer, ids, source, data_path)
    microtensor.manual_seed(config.seed)
    train_ids, val_ids = split_ids(ids, config.block_size, source, tokenizer.unit)  # 90/10

    model = GPT(config.model_config(tokenizer.vocab_size))
    optimizer = configure_optimizer(model, config)          # AdamW, decay on matrices only
    parallel = data_parallel(model, processes, (config.batch_size, config.block_size),
                             reseed=config.dropout > 0)  # None for one process
    info = {**tokenizer.to_info(), "train_config": config.to_dict(), "data": data,
            "processes": processes}
    about = (f"GPT on {source} ({len(train_ids):,} train / {len(val_ids):,} val "
             f"{tokenizer.unit}, vocabulary {tokenizer.vocab_size})")
    it = run.start(model, optimizer, info, about, progress)  # 0, or the resumed state's
    grad_norms = None

    # run.running: the progress bar, Ctrl-C asking for a stop at a step's end, --out locked
    with parallel or contextlib.nullcontext(), run.running(it, "train"):
        while True:
            if run.evaluation_due(it):          # at 0, every eval_interval, the end
                losses = estimate_loss(model, {"train": train_ids, "val": val_ids},
                                       config.eval_iters, config.batch_size, config.block_size,
                                       seed=config.seed + 1,
                                       batch_loss=parallel.loss if parallel else None)
                # print, append to metrics.jsonl, save the checkpoint (and the best model)
                run.record_evaluation(it, losses["train"], losses["val"],
                                      logged={"grad_norms": grad_norms} if grad_norms else None)
                if on_evaluation is not None:
                    on_evaluation(model, it)
            if it == config.max_iters:
                break
            run.stop_if_asked(it)               # after Ctrl-C: save, raise Interrupted
            lr = run.set_learning_rate(it)      # warmup, then cosine decay to min_lr
            # x, y [B, T]: y is x shifted one position left, each target the next id, every
            # position scored in one forward (teacher forcing, 3.7; data.py's get_batch)
            x, y = get_batch(train_ids, config.batch_size, config.block_size)
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
                nn.utils.clip_grad_norm_(model.parameters(), config.grad_clip)
            optimizer.step()                    # AdamW
            it += 1
            run.stepped(loss, lr)               # the progress bar
    return run.result()

