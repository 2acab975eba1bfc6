"""Training the character-level GPT: `train` joins its text (data.py), model and evaluation
(`estimate_loss`) to a run (run.py: the loop, checkpoints, resume). References: Karpathy,
nanoGPT `train.py` (the same recipe, written from scratch); Radford et al. 2019 (GPT-2).
"""
import hashlib

import numpy as np

import microtensor
import nn

from ..gpt import GPT
from .data import encode_text, get_batch, split_ids
from .data_parallel import DataParallel
from .run import TrainingRun, configure_optimizer


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


def train(config, text, out_dir, source="the text", progress=True, resume=False,
          overwrite=False, data_path=None, log_grad_norms=False, processes=1,
          on_evaluation=None):
    """Train a GPT on `text` (a str, or the (tokenizer, ids) of data.load_corpus) as `config`
    (a TrainConfig) says; checkpoints go to out_dir (a path, or the TrainingRun the command
    line made on it). Returns the last evaluation {"iter", "train_loss", "val_loss",
    "best_val_loss", "elapsed_s"}.

    Each evaluation (iteration 0, every eval_interval, the end) is printed, logged to
    metrics.jsonl (log_grad_norms adds "grad_norms": {module: ‖∂L/∂θ‖} of the step before,
    before clipping) and saved. `source` names the text in messages; `data_path` is recorded
    for a resume to find it again. processes > 1 splits each batch's rows over processes
    (data_parallel.py): the same steps up to rounding (with dropout, other masks and batches),
    so a resume may use another count. resume continues the latest state in out_dir (the same
    settings but max_iters, the same text); overwrite starts afresh over our checkpoint.
    `on_evaluation(model, it)` runs after each evaluation (`train --explore` writes its page
    there); it must leave the model, its gradients and the random state as it found them.

    Raises ValueError for invalid settings, a text too short for block_size, a resume with
    other settings or text, processes outside [1, batch_size]; what TrainingRun raises;
    run.Interrupted after SIGINT/SIGTERM (saved); run.NonFiniteLoss for a NaN or infinite loss.
    """
    run = (out_dir if isinstance(out_dir, TrainingRun)
           else TrainingRun(out_dir, resume=resume, overwrite=overwrite))
    config = run.settings(config)
    tokenizer, ids = encode_text(text) if isinstance(text, str) else text  # ids [N] uint8/16
    data = {"source": source, "path": data_path, "sha256": _corpus_sha256(tokenizer, ids),
            "characters": len(ids)}
    if run.resuming and run.manifest["info"]["data"].get("sha256") != data["sha256"]:
        trained_on = run.manifest["info"]["data"]["source"]
        what = (f"{source} has changed since the checkpoint in {run.out_dir} was trained on it"
                if trained_on == source else f"{source} is not the text the checkpoint in "
                f"{run.out_dir} was trained on ({trained_on})")
        raise ValueError(f"{what}; a resumed run needs the same data (--data)")
    microtensor.manual_seed(config.seed)
    train_ids, val_ids = split_ids(ids, config.block_size, source)
    model = GPT(config.model_config(tokenizer.vocab_size))
    parallel = DataParallel(model, lambda x, y: model(x, y)[1], processes,
                            (config.batch_size, config.block_size), reseed=config.dropout > 0)
    info = {**tokenizer.to_info(), "train_config": config.to_dict(), "data": data,
            "processes": processes}
    about = (f"GPT on {source} ({len(train_ids):,} train / {len(val_ids):,} val characters, "
             f"vocabulary {tokenizer.vocab_size})")
    # a resumed state is loaded here, before `with parallel` forks the workers
    it = run.start(model, configure_optimizer(model, config), info, about, progress)
    grad_norms = None  # of the latest step, when log_grad_norms

    def keep_grad_norms():
        nonlocal grad_norms
        grad_norms = nn.utils.grad_norms_by_module(model)

    def evaluate(it):
        losses = estimate_loss(model, {"train": train_ids, "val": val_ids}, config.eval_iters,
                               config.batch_size, config.block_size, seed=config.seed + 1,
                               batch_loss=parallel.loss)
        run.record_evaluation(it, losses["train"], losses["val"],
                              logged={"grad_norms": grad_norms} if grad_norms else None)
        if on_evaluation is not None:
            on_evaluation(model, it)

    with parallel:  # workers (if any) live until the loop ends, however it ends
        return run.loop(it, lambda: get_batch(train_ids, config.batch_size, config.block_size),
                        parallel.forward_backward, evaluate, "train",
                        after_backward=keep_grad_norms if log_grad_norms else None)
