"""One training run (`microtensor train`, `translate train`): its --out directory, the optimizer,
and the loop, where each step happens: batch -> forward -> backward -> clip -> AdamW step at a
warmup + cosine learning rate (nanoGPT's `train.py`; Loshchilov & Hutter 2019; nn/optim).

A trainer's command (cli/train.py, cli/translate.py) resolves the settings, and the trainer
(train.py, translate.py) gives what is its model's:

    run = TrainingRun(out_dir, resume=..., overwrite=...)   # refuses before anything changes
    config = run.settings(TrainConfig, preset, flags)   # resolved once; on resume: saved
    it = run.start(model, configure_optimizer(model, config), info, "…")  # 0, or the saved iter
    def evaluate(it): ... run.record_evaluation(it, train_loss, val_loss)  # log, then save
    return run.loop(it, get_batch, forward_backward, evaluate, "translate")

train.py writes the same loop out, step by step, with the batch, forward, backward, the clip
and the step in sight and run's pieces around them (`evaluation_due`, `stop_if_asked`,
`set_learning_rate`, `stepped`, `result`; `running`, `record_evaluation`: train_extras.py).

SIGINT/SIGTERM only set `stop_signal`: the loop stops at the next step boundary and saves, so
resuming gives the same weights as never stopping. A second Ctrl-C quits without saving.
"""
import json
import math
import os
import signal
import sys
import threading
import time
import weakref
from contextlib import contextmanager

from tqdm import tqdm

import microtensor
import nn

from . import checkpoint as ckpt
from .out_dir import (
    CONFIG_FILE,
    METRICS_FILE,
    CheckpointError,
    check_resumable,
    describe,
    load_snapshot,
    lock_directory,
    open_out_dir,
    read_manifest,
    unlock_directory,
)
from .settings import resolve_settings

SIGNALS = {signal.SIGINT: "SIGINT", signal.SIGTERM: "SIGTERM"}


class NonFiniteLoss(RuntimeError):
    """The loss became NaN or infinite; the checkpoint on disk is the last good one."""


class Interrupted(KeyboardInterrupt):
    """Training stopped by a signal after saving; exit_status is 128 + the signal's number."""

    def __init__(self, signum, message):
        super().__init__(message)
        self.signum, self.exit_status = signum, 128 + signum


def configure_optimizer(model, config, matrices_only=True):
    """AdamW with weight decay on matrices (embeddings, Linear weights) only, as nanoGPT's:
    pulling a LayerNorm gain or a bias toward zero would shrink what it scales.
    matrices_only=False: one group, every parameter decayed (`translate train`'s AdamW)."""
    params = model.parameters()
    groups = ([{"params": [p for p in params if p.ndim >= 2], "weight_decay": config.weight_decay},
               {"params": [p for p in params if p.ndim < 2], "weight_decay": 0.0}]
              if matrices_only else [{"params": params}])
    return nn.optim.AdamW(groups, lr=config.learning_rate, betas=(config.beta1, config.beta2),
                          weight_decay=config.weight_decay)


class TrainingRun:
    """One training run: its --out directory, checked before anything is written
    (out_dir.open_out_dir: resume continues the checkpoint there, which must hold a model of
    `kind` and its training state, out_dir.check_resumable; overwrite starts afresh over
    ours), and its loop.

    Raises what open_out_dir raises, and CheckpointError for a resume of another kind of model
    or without training state."""

    def __init__(self, out_dir, resume=False, overwrite=False, kind="gpt"):
        self.out_dir, self.resuming = os.fspath(out_dir), resume
        self.manifest = open_out_dir(self.out_dir, resume, overwrite)
        self.config_path = os.path.join(self.out_dir, CONFIG_FILE)
        if resume:
            check_resumable(self.manifest, kind, self.config_path)
        self.metrics_path = os.path.join(self.out_dir, METRICS_FILE)
        # our other files in --out (config.json lists them): a caller writing one there adds it
        self.files = {METRICS_FILE, *(self.manifest.get("files", []) if resume else [])}
        self.config = self.stop_signal = self.saved_iter = self.last_eval = None
        self.best_val_loss, self.progress = math.inf, True
        # --out is untouched until the first write: the first save starts the checkpoint
        # afresh, the first line replaces metrics.jsonl, and --out is locked then (_claim)
        self._fresh = self._new_metrics = not resume
        self._claimed, self._started = False, time.perf_counter()
        self._elapsed_before = self.manifest["latest"].get("elapsed_s", 0.0) if resume else 0.0

    def saved_settings(self, config_class):
        """The settings the checkpoint being resumed was trained with (a config_class)."""
        try:
            return config_class.from_dict(self.manifest["info"]["train_config"])
        except ValueError as error:
            raise CheckpointError(f"--resume: {self.config_path}: info.train_config: "
                                  f"{error}") from None

    def settings(self, config_class, preset=None, flags=None):
        """Resolve this run's settings, once: settings.resolve_settings of `preset` and `flags`
        (on resume, against the checkpoint's saved settings and iteration). Keeps them as
        `run.config`, which the trainers read, and returns them."""
        saved = at_iter = None
        if self.resuming:
            saved, at_iter = self.saved_settings(config_class), self.manifest["latest"]["iter"]
        self.config = resolve_settings(config_class, preset, flags, saved, at_iter,
                                       f"the checkpoint in {self.out_dir}")
        return self.config

    def resolved_settings(self, trainer, call):
        """run.config, or ValueError naming `trainer` and the `call` that resolves it."""
        if self.config is None:
            raise ValueError(f"{trainer}: the run's settings are not resolved; call "
                             f"run.settings({call})")
        return self.config

    def start(self, model, optimizer, info, about=None, progress=True):
        """Take the model, its optimizer and the checkpoint's `info`; return the first iteration:
        0, or on resume the latest state's (loaded into model, optimizer, random generator).
        Prints "training a N-parameter `about`" when given; progress=False: no tqdm bar."""
        self.model, self.optimizer, self.info, self.progress = model, optimizer, info, progress
        it = 0
        if self.resuming:
            arrays, path = load_snapshot(self.out_dir, "latest", self.manifest)
            latest = self.manifest["latest"]
            ckpt.load_model_arrays(model, arrays, path)
            ckpt.load_optimizer(optimizer, arrays, latest["param_groups"], path)
            microtensor.random.set_rng_state(latest["rng"])
            it, self.last_eval = latest["iter"], latest["last_eval"]
            best = latest["best_val_loss"]
            self.best_val_loss = math.inf if best is None else best
            self.start_metrics()
        if about:
            resuming = f"resuming at iter {it}: " if self.resuming else ""
            self.say(f"{resuming}training a {model.num_parameters():,}-parameter {about}")
        return it

    def say(self, text):
        """Print a line to stdout, above the progress bar."""
        (tqdm.write if self.progress else print)(text, file=sys.stdout)

    # --- the loop ---------------------------------------------------------------------------

    def loop(self, it, get_batch, forward_backward, evaluate, desc):
        """The loop of a trainer that needs nothing of its own in a step (translate.py; the
        GPT's, train.py, writes it out with the same pieces): from iteration `it` to max_iters,
        evaluate(it) when due, forward_backward(*get_batch()) -> the batch's loss (a float,
        its gradients computed), clip, step. Returns `result()`."""
        config = self.config
        with self.running(it, desc):
            while True:
                if self.evaluation_due(it):
                    evaluate(it)
                if it == config.max_iters:
                    break
                self.stop_if_asked(it)
                lr = self.set_learning_rate(it)
                self.optimizer.zero_grad()
                loss = forward_backward(*get_batch())         # batch -> forward -> backward
                self.check_finite(loss, it, "training loss")
                if config.grad_clip > 0:                       # clip
                    nn.utils.clip_grad_norm_(self.model.parameters(), config.grad_clip)
                self.optimizer.step()                          # step
                it += 1
                self.stepped(loss, lr)
        return self.result()

    @contextmanager
    def running(self, it, desc):
        """While the loop runs from iteration `it`: a progress bar (`desc`), SIGINT/SIGTERM
        only ask it to stop (`signals`), and the lock on --out is released however it ends."""
        self._bar = tqdm(total=self.config.max_iters, initial=it, desc=desc, unit="it",
                         disable=not self.progress, dynamic_ncols=True)
        self._evaluated = it if self.resuming else None  # a resumed state was evaluated
        try:
            with self.signals():
                yield
        finally:
            self._bar.close()
            self.release()

    def evaluation_due(self, it):
        """Whether to evaluate at iteration `it`: at 0, every eval_interval and at max_iters,
        once each (not again for the iteration a resumed state was saved at)."""
        config = self.config
        due = (it % config.eval_interval == 0 or it == config.max_iters) and it != self._evaluated
        if due:
            self._evaluated = it
        return due

    def stop_if_asked(self, it):
        """At a step boundary after SIGINT/SIGTERM: save the latest state (what a resume
        needs) and raise Interrupted."""
        if self.stop_signal is None:
            return
        if self.saved_iter != it:
            self.save_state(it)
        raise Interrupted(self.stop_signal, f"{SIGNALS[self.stop_signal]} at iter {it}: latest "
                          f"state saved in {self.out_dir}; continue with --resume")

    def set_learning_rate(self, it):
        """Set and return the learning rate of iteration `it`: linear warmup, then cosine decay
        to min_lr (nn.optim.warmup_cosine_lr)."""
        config = self.config
        lr = nn.optim.warmup_cosine_lr(it, config.learning_rate, config.min_lr,
                                       config.warmup_iters,
                                       config.lr_decay_iters or config.max_iters)
        for group in self.optimizer.param_groups:
            group["lr"] = lr
        return lr

    def stepped(self, loss, lr):
        """One step done: the progress bar moves and shows its loss and learning rate."""
        self._bar.update(1)
        self._bar.set_postfix(loss=f"{loss:.4f}", lr=f"{lr:.2e}", refresh=False)

    def result(self):
        """The last evaluation's record with "best_val_loss" and the total "elapsed_s"."""
        return dict(self.last_eval, best_val_loss=self.best_val_loss, elapsed_s=self.elapsed())

    @contextmanager
    def signals(self):
        """While inside, SIGINT and SIGTERM set `stop_signal` (in the main thread; elsewhere
        nothing changes); the previous handlers come back on leaving."""
        if threading.current_thread() is not threading.main_thread():
            yield
            return

        def handler(signum, frame):
            if self.stop_signal is not None:  # asked twice: stop now, without saving
                raise KeyboardInterrupt
            self.stop_signal = signum
            print(f"\n{SIGNALS[signum]}: stopping after this step and saving the latest state "
                  "(Ctrl-C again: quit at once, without saving)", flush=True)

        previous = {s: signal.signal(s, handler) for s in SIGNALS}
        try:
            yield
        finally:
            for s, h in previous.items():
                signal.signal(s, h)

    # --- evaluations, metrics, saving -------------------------------------------------------

    def elapsed(self):
        """Seconds of training so far, the time before a resume included."""
        return round(self._elapsed_before + time.perf_counter() - self._started, 3)

    def check_finite(self, value, it, what):
        """Raise NonFiniteLoss naming `what` and iteration `it` if value is NaN or infinite."""
        if math.isfinite(value):
            return
        kept = "nothing was saved"
        if self.saved_iter is not None or self.resuming:
            kept = (f"{self.out_dir} keeps the last good checkpoint "
                    f"({describe(read_manifest(self.out_dir))})")
        raise NonFiniteLoss(f"the {what} is {value} at iter {it}: training stopped; {kept}. "
                            "Try a lower --learning-rate or a --grad-clip")

    def record_evaluation(self, it, train_loss, val_loss, shown="", logged=None, **extra):
        """The evaluation at iteration `it`: raise NonFiniteLoss for a loss that is not finite;
        print both losses (and `shown`); append {"iter", "train_loss", "val_loss", **extra,
        "elapsed_s"} (and `logged`, for metrics.jsonl only) to metrics.jsonl; then save the
        latest state, and the model when its val_loss is the best yet. The line goes first:
        a crash between the two is undone by --resume (start_metrics)."""
        self.check_finite(train_loss, it, "train loss")
        self.check_finite(val_loss, it, "val loss")
        self.last_eval = {"iter": it, "train_loss": train_loss, "val_loss": val_loss, **extra,
                          "elapsed_s": self.elapsed()}
        self.say(f"iter {it}: train loss {train_loss:.4f}, val loss {val_loss:.4f}{shown}")
        self.log(dict(self.last_eval, **(logged or {})))
        new_best = val_loss < self.best_val_loss
        self.best_val_loss = min(self.best_val_loss, val_loss)
        self.save_state(it, val_loss, new_best)

    def start_metrics(self):
        """On resume, keep the metrics.jsonl lines up to the latest state's iteration: a line
        written after it (its save cut off by a crash) is written again once; a damaged line
        (not JSON, no int "iter") goes, bytes that are not UTF-8 become U+FFFD."""
        if not os.path.exists(self.metrics_path):
            return
        self._claim()  # this rewrites metrics.jsonl: the first write of a resumed run
        last, kept = self.manifest["latest"]["iter"], []
        with open(self.metrics_path, encoding="utf-8", errors="replace") as f:
            for line in f:
                try:
                    record = json.loads(line)
                except json.JSONDecodeError:
                    continue
                if (isinstance(record, dict) and type(record.get("iter")) is int
                        and record["iter"] <= last):
                    kept.append(json.dumps(record) + "\n")
        text = "".join(kept).encode("utf-8")
        ckpt.atomic_write(self.metrics_path, lambda f: f.write(text))

    def log(self, record):
        """Append one JSON line to metrics.jsonl (the first line of a new run replaces the file)."""
        self._claim()
        with open(self.metrics_path, "w" if self._new_metrics else "a", encoding="utf-8") as f:
            f.write(json.dumps(record) + "\n")
        self._new_metrics = False

    def save_state(self, it, val_loss=None, new_best=False):
        """Save the latest state of iteration `it` (model, optimizer, random generator, best
        loss, last evaluation, elapsed time), and the model as best when new_best."""
        arrays, param_groups = ckpt.optimizer_arrays(self.optimizer)
        best = self.best_val_loss
        state = {"rng": microtensor.random.get_rng_state(), "param_groups": param_groups,
                 "best_val_loss": best if math.isfinite(best) else None,
                 "last_eval": self.last_eval, "elapsed_s": self.elapsed()}
        weights = ckpt.model_arrays(self.model)
        self._claim()
        ckpt.save_checkpoint(self.out_dir, self.model, self.info,
                             best=ckpt.Snapshot(it, val_loss, weights) if new_best else None,
                             latest=ckpt.Snapshot(it, val_loss, {**weights, **arrays}, state),
                             replace=self._fresh, files=self.files)
        self._fresh = False
        self.saved_iter = it

    def _claim(self):
        """Before the first write: make --out and lock it until the loop ends (`release`);
        a run that never gets there lets go when it is garbage-collected."""
        if not self._claimed:
            fd = lock_directory(self.out_dir)  # None where there are no locks
            self._claimed, self._unlock = True, weakref.finalize(self, unlock_directory, fd)

    def release(self):
        """Let another run write into --out (the loop calls this however it ends)."""
        if self._claimed:
            self._unlock()
        self._claimed = False
