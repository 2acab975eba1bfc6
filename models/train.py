"""The training loop of the character-level GPT: AdamW with warmup + cosine decay, gradient clipping, periodic evaluation and checkpoints.

References: Karpathy, nanoGPT `train.py` (the same recipe, written from scratch);
Loshchilov & Hutter 2019 (AdamW); Radford et al. 2019 (GPT-2).
"""
import json
import math
import os
import sys
import time

import numpy as np
from tqdm import tqdm

import microtensor
import nn

from .checkpoint import save_checkpoint
from .data import get_batch, split_ids
from .gpt import GPT, GPTConfig
from .tokenizer import CharTokenizer

METRICS_FILE = "metrics.jsonl"


def estimate_loss(model, splits, eval_iters, batch_size, block_size, seed=0):
    """{split name: mean loss over eval_iters random batches}, in eval mode without a graph.

    The batches come from a generator of their own, seeded with `seed`: every evaluation
    sees the same batches (so the points of a loss curve compare like with like), and
    evaluating does not consume the training run's random numbers (so changing
    --eval-interval does not change what is trained).
    """
    model.eval()
    out = {}
    with microtensor.no_grad():
        for name, ids in splits.items():
            generator = np.random.default_rng(seed)
            losses = [model(*get_batch(ids, batch_size, block_size, generator))[1].item()
                      for _ in range(eval_iters)]
            out[name] = float(np.mean(losses))
    model.train()
    return out


def configure_optimizer(model, config):
    """AdamW with weight decay on matrices (embeddings, Linear weights) only.

    Biases and LayerNorm gains are vectors (ndim < 2): decaying them toward zero would only
    fight the normalisation, so they form a second group with weight_decay 0 (as nanoGPT).
    """
    params = model.parameters()
    groups = [{"params": [p for p in params if p.ndim >= 2], "weight_decay": config.weight_decay},
              {"params": [p for p in params if p.ndim < 2], "weight_decay": 0.0}]
    return nn.optim.AdamW(groups, lr=config.learning_rate, betas=(config.beta1, config.beta2),
                          weight_decay=config.weight_decay)


def train(config, text, out_dir, source="the text", progress=True):
    """Train a GPT on `text` as configured by `config` (a TrainConfig); checkpoints go to out_dir.

    Evaluates at iteration 0, every eval_interval and at the end; each evaluation prints
    both losses, appends {"iter", "train_loss", "val_loss", "elapsed_s"} to
    out_dir/metrics.jsonl (truncated when the run starts) and saves a checkpoint.
    On KeyboardInterrupt it saves a checkpoint of the current weights and re-raises.
    `source` names the text in error messages.

    Returns {"iter", "train_loss", "val_loss", "best_val_loss", "elapsed_s"} of the last
    evaluation. Raises ValueError for invalid settings or a text too short for block_size.
    """
    config.validate()
    microtensor.manual_seed(config.seed)
    tokenizer = CharTokenizer.from_text(text)
    ids = np.array(tokenizer.encode(text), dtype=np.int64)  # [N]
    train_ids, val_ids = split_ids(ids, config.block_size, source)
    model = GPT(GPTConfig(vocab_size=tokenizer.vocab_size, block_size=config.block_size,
                          n_layer=config.n_layer, n_head=config.n_head, n_embd=config.n_embd,
                          dropout=config.dropout, bias=config.bias,
                          norm_first=config.norm_first, activation=config.activation))
    model.train()
    optimizer = configure_optimizer(model, config)
    decay_iters = config.lr_decay_iters or config.max_iters

    os.makedirs(out_dir, exist_ok=True)
    metrics_path = os.path.join(out_dir, METRICS_FILE)
    open(metrics_path, "w").close()  # a new run starts a new record
    say = tqdm.write if progress else print
    say(f"training a {model.num_parameters():,}-parameter GPT on {source} "
        f"({len(train_ids):,} train / {len(val_ids):,} val characters, "
        f"vocabulary {tokenizer.vocab_size})", file=sys.stdout)
    t0 = time.perf_counter()
    state = {"iter": 0, "best_val_loss": math.inf, "last": None}

    def evaluate_and_save(it):
        losses = estimate_loss(model, {"train": train_ids, "val": val_ids}, config.eval_iters,
                               config.batch_size, config.block_size, seed=config.seed + 1)
        record = {"iter": it, "train_loss": losses["train"], "val_loss": losses["val"],
                  "elapsed_s": round(time.perf_counter() - t0, 3)}
        with open(metrics_path, "a", encoding="utf-8") as f:
            f.write(json.dumps(record) + "\n")
        say(f"iter {it}: train loss {record['train_loss']:.4f}, "
            f"val loss {record['val_loss']:.4f}", file=sys.stdout)
        state["best_val_loss"] = min(state["best_val_loss"], record["val_loss"])
        state["last"] = record
        save(it)

    def save(it, **extra):
        best = state["best_val_loss"]
        save_checkpoint(out_dir, model, tokenizer, dict(
            iter=it, best_val_loss=best if math.isfinite(best) else None,
            train_config=config.to_dict(), data=source, **extra))

    tokens_per_iter = config.batch_size * config.block_size
    bar = tqdm(total=config.max_iters, desc="train", unit="it", disable=not progress,
               dynamic_ncols=True)
    it, tokens_per_s = 0, None
    try:
        while True:
            if it % config.eval_interval == 0 or it == config.max_iters:
                evaluate_and_save(it)
            if it == config.max_iters:
                break
            step_start = time.perf_counter()
            lr = nn.optim.warmup_cosine_lr(it, config.learning_rate, config.min_lr,
                                           config.warmup_iters, decay_iters)
            for group in optimizer.param_groups:
                group["lr"] = lr
            x, y = get_batch(train_ids, config.batch_size, config.block_size)  # [B, T]
            _, loss = model(x, y)
            optimizer.zero_grad()
            loss.backward()
            if config.grad_clip > 0:
                nn.utils.clip_grad_norm_(model.parameters(), config.grad_clip)
            optimizer.step()
            it += 1
            rate = tokens_per_iter / (time.perf_counter() - step_start)
            tokens_per_s = rate if tokens_per_s is None else 0.9 * tokens_per_s + 0.1 * rate
            bar.update(1)
            bar.set_postfix(loss=f"{loss.item():.4f}", lr=f"{lr:.2e}",
                            tok_s=f"{tokens_per_s:,.0f}", refresh=False)
    except KeyboardInterrupt:
        bar.close()
        save(it, interrupted=True)
        print(f"\ninterrupted at iter {it}: checkpoint saved to {out_dir}", file=sys.stderr)
        raise
    finally:
        bar.close()
    last = state["last"]
    return dict(last, best_val_loss=state["best_val_loss"],
                elapsed_s=round(time.perf_counter() - t0, 3))
