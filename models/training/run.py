"""One training run (`microtensor train`, `translate train`): its --out directory, and the loop.

The loop is nanoGPT's: evaluate when it is time (log the losses, save the latest state and,
when its validation loss is the best so far, the model), then one step: batch -> forward ->
backward -> clip -> AdamW step at the rate of a warmup + cosine decay (Loshchilov & Hutter
2019; nn/optim). A trainer (train.py, translate.py) gives what is its own:

    run = TrainingRun(out_dir, resume=..., overwrite=...)   # refuses before anything changes
    config = run.settings(config)                          # on resume: the saved settings
    it = run.start(model, optimizer, info)                 # 0, or the restored iteration
    def evaluate(it): ... run.record_evaluation(record)    # logs, then saves latest (+ best)
    return run.loop(it, get_batch, forward_backward, evaluate, ...)

SIGINT/SIGTERM only set `stop_signal`: the loop stops at the next step boundary and saves, so
resuming gives the same weights as never stopping. A second Ctrl-C quits without saving.
"""
import json
import math
import os
import signal
import threading
import time
import weakref
from contextlib import contextmanager

from tqdm import tqdm

import microtensor
import nn

from ..schema import FileError, check
from . import checkpoint as ckpt
from .checkpoint import CONFIG_FILE, METRICS_FILE, CheckpointError, CheckpointExists  # noqa: F401
from .settings import resumed_settings

SIGNALS = {signal.SIGINT: "SIGINT", signal.SIGTERM: "SIGTERM"}

# What a resume needs from config.json, with its JSON type and range (models/schema.py specs,
# checkpoint.TRAINING_STATE): a hand-edited one is refused up front
RESUME_STATE = {(section, key): ckpt.TRAINING_STATE[key] for section, keys in (
    ("info", ("train_config", "data")),
    ("latest", ("rng", "param_groups", "best_val_loss", "last_eval", "elapsed_s")))
    for key in keys}


class NonFiniteLoss(RuntimeError):
    """The loss became NaN or infinite; the checkpoint on disk is the last good one."""


class Interrupted(KeyboardInterrupt):
    """Training stopped by a signal after saving; exit_status is 128 + the signal's number."""

    def __init__(self, signum, message):
        super().__init__(message)
        self.signum, self.exit_status = signum, 128 + signum


class TrainingRun:
    """One training run: its --out directory, checked before anything is written
    (checkpoint.open_out_dir: resume continues the checkpoint there, which must hold a model
    of `kind` and RESUME_STATE; overwrite starts afresh over ours), and its loop.

    Raises what open_out_dir raises, and CheckpointError for a resume without training state.
    """

    def __init__(self, out_dir, resume=False, overwrite=False, kind="gpt"):
        self.out_dir, self.resuming = os.fspath(out_dir), resume
        self.manifest = ckpt.open_out_dir(self.out_dir, resume, overwrite)
        self.config_path = os.path.join(self.out_dir, CONFIG_FILE)
        if resume:
            self._check_resumable(kind)
        self.metrics_path = os.path.join(self.out_dir, METRICS_FILE)
        # the other files of ours in --out, recorded in config.json (checkpoint.open_out_dir):
        # a caller that writes one there (a picture, say) adds its name
        self.files = {METRICS_FILE, *(self.manifest.get("files", []) if resume else [])}
        self.config = self.stop_signal = self.saved_iter = self.last_eval = None
        self.best_val_loss = math.inf
        # --out stays as it was until the first write: the first save starts the checkpoint
        # afresh, the first line replaces metrics.jsonl; the lock is taken then (_claim)
        self._fresh = self._new_metrics = not resume
        self._claimed, self._started = False, time.perf_counter()
        self._elapsed_before = self.manifest["latest"].get("elapsed_s", 0.0) if resume else 0.0

    def _check_resumable(self, kind):
        if self.manifest["kind"] != kind:
            raise CheckpointError(f"--resume: {self.config_path} holds a "
                                  f"{self.manifest['kind']!r} model; this command continues "
                                  f"{kind!r} models")
        for (section, key), spec in RESUME_STATE.items():
            entry = self.manifest[section]
            if not isinstance(entry, dict) or key not in entry:
                raise CheckpointError(f"--resume: {self.config_path} holds no training state to "
                                      f"continue ({section}.{key} is missing): its model can "
                                      "be sampled, not resumed; start afresh with --overwrite")
            try:
                check(entry[key], spec, self.config_path, f"{section}.{key}")
            except FileError as error:
                raise CheckpointError(f"--resume: {error}") from None

    def saved_settings(self, config_class):
        """The settings the checkpoint being resumed was trained with (a config_class)."""
        try:
            return config_class.from_dict(self.manifest["info"]["train_config"])
        except ValueError as error:
            raise CheckpointError(f"--resume: {self.config_path}: info.train_config: "
                                  f"{error}") from None

    def settings(self, config):
        """The validated settings of this run: `config`, or on resume the saved ones with its
        max_iters (settings.resumed_settings). Raises ValueError for a setting out of range or
        changed, or a --max-iters the checkpoint has reached already."""
        if config is self.config:  # asked again (the command line, then train): known
            return config
        if self.resuming:
            self.saved_settings(type(config))
            config = resumed_settings(self.manifest["info"]["train_config"], config)
        config.validate()
        if self.resuming and self.manifest["latest"]["iter"] >= config.max_iters:
            raise ValueError(f"--max-iters {config.max_iters}: the checkpoint in {self.out_dir} "
                             f"is at iter {self.manifest['latest']['iter']} already; give a "
                             "larger --max-iters to train on")
        self.config = config
        return config

    def start(self, model, optimizer, info):
        """Take the model, its optimizer and the checkpoint's `info`; return the first iteration:
        0, or on resume the latest state's (loaded into model, optimizer, random generator)."""
        self.model, self.optimizer, self.info = model, optimizer, info
        it = 0
        if self.resuming:
            arrays, path = ckpt.load_snapshot(self.out_dir, "latest", self.manifest)
            latest = self.manifest["latest"]
            ckpt.load_model_arrays(model, arrays, path)
            ckpt.load_optimizer(optimizer, arrays, latest["param_groups"], path)
            microtensor.random.set_rng_state(latest["rng"])
            it, self.last_eval = latest["iter"], latest["last_eval"]
            self.best_val_loss = math.inf if latest["best_val_loss"] is None else \
                latest["best_val_loss"]
            self.start_metrics()
        return it

    # --- the loop ---------------------------------------------------------------------------

    def step(self, it, get_batch, forward_backward, after_backward=None):
        """One AdamW step at iteration `it`; returns (the loss before it, the learning rate).

        forward_backward(*get_batch()) computes a batch's loss and gradients and returns the
        loss (a float); after_backward() sees the gradients before clipping (grad_clip 0: off).
        A non-finite loss raises NonFiniteLoss before the step spoils the weights.
        """
        config = self.config
        lr = nn.optim.warmup_cosine_lr(it, config.learning_rate, config.min_lr,
                                       config.warmup_iters,
                                       config.lr_decay_iters or config.max_iters)
        for group in self.optimizer.param_groups:
            group["lr"] = lr
        self.optimizer.zero_grad()
        loss = forward_backward(*get_batch())                   # batch -> forward -> backward
        self.check_finite(loss, it, "training loss")
        if after_backward is not None:
            after_backward()
        if config.grad_clip > 0:                                 # clip
            nn.utils.clip_grad_norm_(self.model.parameters(), config.grad_clip)
        self.optimizer.step()                                    # step
        return loss, lr

    def loop(self, it, get_batch, forward_backward, evaluate, desc, progress=True,
             tokens_per_step=None, after_backward=None):
        """Train from iteration `it` to max_iters with a tqdm bar (tokens_per_step adds a
        smoothed tokens/s); the lock on --out is released however it ends.

        evaluate(it) runs at iteration 0, every eval_interval and at the end (not again for
        a resumed state) and must end with record_evaluation. After a signal the state is
        saved and Interrupted raised. Returns the last evaluation's record with
        "best_val_loss" and the total "elapsed_s".
        """
        config = self.config
        bar = tqdm(total=config.max_iters, initial=it, desc=desc, unit="it",
                   disable=not progress, dynamic_ncols=True)
        evaluated, tokens_per_s = it if self.resuming else None, None
        try:
            with self.signals():
                while True:
                    if (it % config.eval_interval == 0 or it == config.max_iters) \
                            and it != evaluated:
                        evaluate(it)
                        evaluated = it
                    if it == config.max_iters:
                        break
                    if self.stop_signal is not None:  # a step boundary: what a resume needs
                        if self.saved_iter != it:
                            self.save_state(it)
                        raise Interrupted(self.stop_signal, f"{SIGNALS[self.stop_signal]} at "
                                          f"iter {it}: latest state saved in {self.out_dir}; "
                                          "continue with --resume")
                    started = time.perf_counter()
                    loss, lr = self.step(it, get_batch, forward_backward, after_backward)
                    it += 1
                    postfix = {"loss": f"{loss:.4f}", "lr": f"{lr:.2e}"}
                    if tokens_per_step is not None:
                        rate = tokens_per_step / (time.perf_counter() - started)
                        tokens_per_s = rate if tokens_per_s is None else \
                            0.9 * tokens_per_s + 0.1 * rate
                        postfix["tok_s"] = f"{tokens_per_s:,.0f}"
                    bar.update(1)
                    bar.set_postfix(postfix, refresh=False)
        finally:
            bar.close()
            self.release()
        return dict(self.last_eval, best_val_loss=self.best_val_loss, elapsed_s=self.elapsed())

    @contextmanager
    def signals(self):
        """While inside, SIGINT and SIGTERM set `stop_signal` (main thread only; elsewhere
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
                    f"({ckpt.describe(ckpt.read_manifest(self.out_dir))})")
        raise NonFiniteLoss(f"the {what} is {value} at iter {it}: training stopped; {kept}. "
                            "Try a lower --learning-rate or a --grad-clip")

    def record_evaluation(self, record, metrics_line=None):
        """Log an evaluation record {"iter", "val_loss", ...} (metrics_line, if given, is what
        metrics.jsonl gets), then save the latest state, and the model if its loss is best.
        The line goes first: a crash between the two is undone by --resume (start_metrics)."""
        self.last_eval = record
        self.log(record if metrics_line is None else metrics_line)
        new_best = record["val_loss"] < self.best_val_loss
        self.best_val_loss = min(self.best_val_loss, record["val_loss"])
        self.save_state(record["iter"], record["val_loss"], new_best)

    def start_metrics(self):
        """On resume, keep the metrics.jsonl lines up to the latest state's iteration: a line
        written after it (its save cut off by a crash) is written again once; a damaged line
        (not JSON, not UTF-8, no int "iter") goes."""
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
            fd = ckpt.lock_directory(self.out_dir)  # None where there are no locks
            self._claimed, self._unlock = True, weakref.finalize(self, ckpt.unlock_directory, fd)

    def release(self):
        """Let another run write into --out (the loop calls this however it ends)."""
        if self._claimed:
            self._unlock()
        self._claimed = False
