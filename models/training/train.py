"""Training the GPT, read top to bottom as nanoGPT's `train.py`: data -> model and AdamW -> the
loop (learning rate, batch, forward, loss.backward(), clip, step; evaluate and save).
Behind named calls: run.py (--out, checkpoints, resume, Ctrl-C, the progress bar) and
train_extras.py (the run's bookkeeping; --processes, --log-grad-norms, --explore).
References: Karpathy, nanoGPT `train.py` (the same recipe, written from scratch); Radford et
al. 2019 (GPT-2); Loshchilov & Hutter 2019 (AdamW).
"""
import numpy as np

import microtensor
import nn

from ..gpt import GPT
from .data import describe_data, get_batch, split_ids
from .run import configure_optimizer
from .train_extras import TrainExtras


def estimate_loss(model, splits, eval_iters, batch_size, block_size, seed=0, batch_loss=None):
    """{split name: mean loss over eval_iters random batches of ids [N]}, in eval mode, no graph;
    the same batches each time (their own generator, seeded). batch_loss(x, y) -> a float."""
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
    "elapsed_s"}. log_grad_norms, processes, on_evaluation: train_extras.py. ValueError
    (settings, text, processes), run.Interrupted (saved), run.NonFiniteLoss.

    `run` (run.py) holds the settings, the --out folder, the lr schedule and the progress bar;
    `extras` (train_extras.py) the run's bookkeeping. Neither touches a gradient."""
    # a TrainConfig (settings.py): the preset with the flags over it (block_size, lr, ...)
    config = run.resolved_settings("train", "TrainConfig, preset, flags")
    tokenizer, ids = corpus                                 # ids [N] uint8/16
    data = describe_data(run, tokenizer, ids, source, data_path)
    microtensor.manual_seed(config.seed)
    train_ids, val_ids = split_ids(ids, config.block_size, source, tokenizer.unit)  # 90/10

    model = GPT(config.model_config(tokenizer.vocab_size))
    # AdamW; weight decay on matrices (embeddings, Linear weights), not biases or LayerNorm gains
    optimizer = configure_optimizer(model, config)
    extras = TrainExtras(model, config, processes, log_grad_norms, on_evaluation)
    it = extras.start(run, optimizer, tokenizer, data, train_ids, val_ids, progress)  # 0 or resumed

    with extras:  # the progress bar, Ctrl-C stopping at a step's end, --processes' workers
        while True:
            if run.evaluation_due(it):          # at 0, every eval_interval, the end
                losses = estimate_loss(model, {"train": train_ids, "val": val_ids},
                                       config.eval_iters, config.batch_size, config.block_size,
                                       seed=config.seed + 1,
                                       batch_loss=extras.batch_loss)  # None: --processes 1
                extras.record_evaluation(it, losses)  # print, metrics.jsonl, save the checkpoint
            if it == config.max_iters:
                break
            run.stop_if_asked(it)               # after Ctrl-C: save, raise Interrupted
            # lr·(it + 1)/(warmup_iters + 1) while warming up, then min_lr + ½(1 + cos πp)(lr −
            # min_lr), p going 0 → 1 until lr_decay_iters (or max_iters), min_lr after;
            # written into each AdamW group's lr (nn/optim/schedule.py)
            lr = run.set_learning_rate(it)
            # x, y [B, T]: y[b, t] is the id after x[b, t], every position trained at once (3.7)
            x, y = get_batch(train_ids, config.batch_size, config.block_size)
            optimizer.zero_grad()
            if extras.parallel:                 # --processes > 1: the same, rows split over them
                loss = extras.parallel.forward_backward(x, y)
            else:
                _, loss = model(x, y)           # forward: the mean cross-entropy
                loss.backward()                 # backward: every parameter's .grad
                loss = loss.item()
            extras.after_backward(loss, it)     # a NaN loss stops here, before the step
            if config.grad_clip > 0:  # g ← g·min(1, grad_clip/(‖g‖ + 1e-6)), ‖g‖ over all at once
                nn.utils.clip_grad_norm_(model.parameters(), config.grad_clip)
            optimizer.step()                    # AdamW
            it += 1
            run.stepped(loss, lr)               # the progress bar
    return run.result()
