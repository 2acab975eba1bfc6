"""What every training loop shares (`microtensor train`, `translate train`): the loop itself.

That is the --out policy, resume, the AdamW step with warmup + cosine decay and clipping,
SIGINT/SIGTERM, metrics.jsonl, best and latest checkpoints, and a stop on a non-finite loss.
A model's trainer keeps only what differs: its model, batches, evaluation and messages.

A trainer uses it so (models/train.py for the GPT, models/train_translation.py for the
encoder-decoder):

    run = TrainingRun(out_dir, resume=..., overwrite=...)   # refuses before anything changes
    config = run.settings(config, resumed_config)          # on resume: the saved settings
    ... build the model and optimizer ...
    it = run.start(model, optimizer, info)                 # 0, or the restored iteration
    def evaluate(it): ... run.record_evaluation(record)    # logs, then saves latest (+ best)
    return run.loop(it, config, batch_loss, evaluate, ...)  # batch_loss() -> loss of a batch

A signal only sets `stop_signal`; the loop stops at the next step boundary, so the saved
state is one a run passes through, and resuming it gives the same weights as never
stopping. A second Ctrl-C stops at once without saving (the last checkpoint stays).
"""
import json
import math
import os
import signal
import threading
import time
from contextlib import contextmanager

from tqdm import tqdm

import microtensor
import nn

from .checkpoint import (
    CONFIG_FILE,
    CheckpointError,
    Snapshot,
    atomic_write,
    load_model_arrays,
    load_optimizer,
    load_snapshot,
    model_arrays,
    optimizer_arrays,
    read_manifest,
    save_checkpoint,
)

METRICS_FILE = "metrics.jsonl"
SIGNALS = {signal.SIGINT: "SIGINT", signal.SIGTERM: "SIGTERM"}


def describe(manifest):
    """A summary for messages, e.g. "latest iter 300, best iter 250 (val loss 2.0500)"."""
    parts = []
    for which in ("latest", "best"):
        loss = manifest[which]["val_loss"]
        parts.append(f"{which} iter {manifest[which]['iter']}"
                     + ("" if loss is None else f" (val loss {loss:.4f})"))
    return ", ".join(parts)


class CheckpointExists(ValueError):
    """`train` into an --out that holds a checkpoint, without --resume or --overwrite."""


class Interrupted(KeyboardInterrupt):
    """Training stopped by a signal after saving its latest state.

    exit_status is the shell's 128 + signal number: 130 for SIGINT, 143 for SIGTERM.
    """

    def __init__(self, signum, message):
        super().__init__(message)
        self.signum, self.exit_status = signum, 128 + signum


class NonFiniteLoss(RuntimeError):
    """The loss became NaN or infinite; the checkpoint on disk is the last good one."""


# What `train` saves and needs to continue; another loop passes its own to TrainingRun.
RESUME_KEYS = {"info": ("train_config", "data"),
               "latest": ("rng", "param_groups", "best_val_loss", "last_eval", "elapsed_s")}


# The JSON types of those entries: a hand-edited or foreign config.json is refused up front.
STATE_TYPES = {"train_config": dict, "data": dict, "rng": dict, "param_groups": list,
               "best_val_loss": (int, float, type(None)), "last_eval": (dict, type(None)),
               "elapsed_s": (int, float)}


def _check_resumable(manifest, path, required):
    """CheckpointError unless `manifest` holds the training state `required` names."""
    for section, keys in required.items():
        for key in keys:
            if not isinstance(manifest[section], dict) or key not in manifest[section]:
                raise CheckpointError(f"--resume: {path} holds no training state to continue "
                                      f"({section}.{key} is missing): its model can be "
                                      "sampled, not resumed; start afresh with --overwrite")
            value, kinds = manifest[section][key], STATE_TYPES.get(key)
            if kinds is not None and (not isinstance(value, kinds) or isinstance(value, bool)):
                names = [k.__name__ for k in (kinds if isinstance(kinds, tuple) else (kinds,))]
                raise CheckpointError(f"--resume: {path}: {section}.{key} is a "
                                      f"{type(value).__name__}; expected {' or '.join(names)}")


class TrainingRun:
    """One training run: its --out directory (what it holds, what is written to it, and
    when) and, once `start` has its model and optimizer, its loop (`loop`, `step`).

    resume=True continues the checkpoint in out_dir (`manifest` is its config.json), which
    must hold a model of `kind` and the entries `required` names ({"info": keys, ...});
    overwrite=True starts afresh over it; with neither, a checkpoint there is refused.
    Raises CheckpointExists (refused: nothing in out_dir changes), FileNotFoundError
    (resume with no checkpoint), ValueError (out_dir is a file, or both flags), and
    CheckpointError (resume from a broken checkpoint).
    """

    def __init__(self, out_dir, resume=False, overwrite=False, kind="gpt", required=RESUME_KEYS):
        self.out_dir = os.fspath(out_dir)
        self.kind, self.required = kind, required
        if resume and overwrite:
            raise ValueError("--resume and --overwrite exclude each other: continue the "
                             "checkpoint, or start afresh")
        if os.path.exists(self.out_dir) and not os.path.isdir(self.out_dir):
            raise ValueError(f"--out {self.out_dir!r} is a file; give a directory")
        self.manifest = self._existing(resume, overwrite)
        self.resuming = resume
        self.metrics_path = os.path.join(self.out_dir, METRICS_FILE)
        self.stop_signal = None
        self.saved_iter = None      # the iteration of the last save of this process
        self.best_val_loss, self.last_eval = math.inf, None  # the last evaluation's record
        # Until the first save and the first metrics line, --out stays as it was: the first
        # save starts the checkpoint afresh, the first line replaces metrics.jsonl.
        self._fresh = not resume
        self._new_metrics = not resume
        self._started = time.perf_counter()
        self._elapsed_before = self.manifest["latest"].get("elapsed_s", 0.0) if resume else 0.0

    def _existing(self, resume, overwrite):
        if not os.path.isdir(self.out_dir):
            if resume:
                raise FileNotFoundError(f"--resume: {self.out_dir} does not exist; drop "
                                        "--resume to start a new run there")
            return None
        try:
            manifest = read_manifest(self.out_dir)
        except CheckpointError as error:
            if resume:
                raise CheckpointError(f"--resume: {error}") from None
            if overwrite:
                return None
            raise CheckpointExists(f"{self.out_dir} holds a checkpoint that cannot be read "
                                   f"({error}); start afresh with --overwrite") from None
        if resume and manifest is None:
            raise FileNotFoundError(f"--resume: no checkpoint in {self.out_dir} (no "
                                    f"{CONFIG_FILE}); drop --resume to start a new run there")
        if resume:
            path = os.path.join(self.out_dir, CONFIG_FILE)
            if manifest["kind"] != self.kind:
                raise CheckpointError(f"--resume: {path} holds a {manifest['kind']!r} model; "
                                      f"this command continues {self.kind!r} models")
            _check_resumable(manifest, path, self.required)
        if manifest is not None and not resume and not overwrite:
            raise CheckpointExists(f"{self.out_dir} already holds a checkpoint "
                                   f"({describe(manifest)}): continue it with --resume, "
                                   f"or start afresh with --overwrite")
        return manifest if resume else None

    # --- time, metrics, checks ------------------------------------------------------------

    def elapsed(self):
        """Seconds of training so far, the time before a resume included."""
        return round(self._elapsed_before + time.perf_counter() - self._started, 3)

    def start_metrics(self):
        """On resume, keep the metrics.jsonl lines up to the latest state's iteration.

        Lines written after that state (an evaluation whose save a crash cut off) go, so
        the resumed run writes them again exactly once; a half-written or damaged line goes too.
        """
        if not self.resuming or not os.path.exists(self.metrics_path):
            return
        last = self.manifest["latest"]["iter"]
        kept = []
        with open(self.metrics_path, encoding="utf-8", errors="replace") as f:
            for line in f:  # a damaged line (not JSON, not UTF-8, no int "iter") goes
                try:
                    record = json.loads(line)
                except json.JSONDecodeError:
                    continue
                if (isinstance(record, dict) and type(record.get("iter")) is int
                        and record["iter"] <= last):
                    kept.append(json.dumps(record) + "\n")
        text = "".join(kept).encode("utf-8")
        atomic_write(self.metrics_path, lambda f: f.write(text))

    def log(self, record):
        """Append one JSON line to metrics.jsonl (the first line of a new run replaces the file)."""
        os.makedirs(self.out_dir, exist_ok=True)
        with open(self.metrics_path, "w" if self._new_metrics else "a", encoding="utf-8") as f:
            f.write(json.dumps(record) + "\n")
        self._new_metrics = False

    def check_finite(self, value, it, what):
        """Raise NonFiniteLoss naming `what` and iteration `it` if value is NaN or infinite."""
        if math.isfinite(value):
            return
        if self.saved_iter is not None or self.resuming:
            kept = f"{self.out_dir} keeps the last good checkpoint ({self._on_disk()})"
        else:
            kept = "nothing was saved"
        raise NonFiniteLoss(f"the {what} is {value} at iter {it}: training stopped; {kept}. "
                            "Try a lower --learning-rate or a --grad-clip")

    def _on_disk(self):
        return describe(read_manifest(self.out_dir))

    # --- saving -----------------------------------------------------------------------------

    def save(self, model, info, it, val_loss, latest_arrays, latest_state, best_arrays=None):
        """Write the latest state (and, when given, a new best model) of iteration `it`.

        latest_state: the JSON-safe part of the state (random generator, ...); the elapsed
        time is added. best_arrays: the model's arrays when `val_loss` is a new best.
        """
        latest = Snapshot(it, val_loss, latest_arrays, dict(latest_state, elapsed_s=self.elapsed()))
        best = None if best_arrays is None else Snapshot(it, val_loss, best_arrays)
        save_checkpoint(self.out_dir, model, info, best=best, latest=latest, replace=self._fresh)
        self._fresh = False
        self.saved_iter = it

    # --- signals ----------------------------------------------------------------------------

    @contextmanager
    def signals(self):
        """While inside, SIGINT and SIGTERM set `stop_signal` instead of stopping the process.

        Only the main thread can install handlers; elsewhere this does nothing. The
        previous handlers come back on leaving.
        """
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

    def interrupted(self, it):
        """The Interrupted exception to raise once the state of iteration `it` is saved."""
        name = SIGNALS[self.stop_signal]
        return Interrupted(self.stop_signal, f"{name} at iter {it}: latest state saved in "
                                             f"{self.out_dir}; continue with --resume")

    # --- the loop ---------------------------------------------------------------------------

    def settings(self, config, resumed_config):
        """The validated settings of this run: `config`, or on resume
        resumed_config(the saved settings as a dict, config).

        Raises ValueError for a setting out of range, and on resume for a --max-iters the
        checkpoint has reached already.
        """
        if self.resuming:
            config = resumed_config(self.manifest["info"]["train_config"], config)
        config.validate()
        if self.resuming and self.manifest["latest"]["iter"] >= config.max_iters:
            raise ValueError(f"--max-iters {config.max_iters}: the checkpoint in {self.out_dir} "
                             f"is at iter {self.manifest['latest']['iter']} already; give a "
                             "larger --max-iters to train on")
        return config

    def start(self, model, optimizer, info):
        """Take the model, its optimizer and the checkpoint's `info`; return the first iteration.

        A fresh run starts at 0. On resume, the latest state goes into model, optimizer and
        the random generator (with the best validation loss and last evaluation so far), and
        metrics.jsonl keeps its lines up to that state's iteration (start_metrics).
        """
        self.model, self.optimizer, self.info = model, optimizer, info
        it = 0
        if self.resuming:
            arrays, path = load_snapshot(self.out_dir, "latest", self.manifest)
            latest = self.manifest["latest"]
            load_model_arrays(model, arrays, path)
            load_optimizer(optimizer, arrays, latest["param_groups"], path)
            microtensor.random.set_rng_state(latest["rng"])
            best = latest["best_val_loss"]
            it, self.last_eval = latest["iter"], latest["last_eval"]
            self.best_val_loss = math.inf if best is None else best
        self.start_metrics()
        return it

    def save_state(self, it, val_loss=None, new_best=False):
        """Save the latest state of iteration `it` (and the model as best when new_best)."""
        arrays, param_groups = optimizer_arrays(self.optimizer)
        best = self.best_val_loss
        state = {"rng": microtensor.random.get_rng_state(), "param_groups": param_groups,
                 "best_val_loss": best if math.isfinite(best) else None,
                 "last_eval": self.last_eval}
        self.save(self.model, self.info, it, val_loss, {**model_arrays(self.model), **arrays},
                  state, best_arrays=model_arrays(self.model) if new_best else None)

    def record_evaluation(self, record, metrics_line=None):
        """Log an evaluation, then save: the latest state, and the model if its loss is best.

        record: {"iter", "val_loss", ...}, kept in the checkpoint as the last evaluation;
        metrics_line (default: record) is what metrics.jsonl gets. The line goes first: a
        crash between the two is undone by --resume (start_metrics drops the line).
        """
        self.last_eval = record
        self.log(record if metrics_line is None else metrics_line)
        new_best = record["val_loss"] < self.best_val_loss
        self.best_val_loss = min(self.best_val_loss, record["val_loss"])
        self.save_state(record["iter"], record["val_loss"], new_best)

    def step(self, it, config, batch_loss, after_backward=None):
        """One AdamW step at iteration `it`; returns (the loss before it, the learning rate).

        The rate follows nn.optim.warmup_cosine_lr over config.lr_decay_iters (default
        config.max_iters); batch_loss() draws a batch and returns its loss (a scalar
        Tensor); after_backward(), when given, sees the gradients before clipping to
        config.grad_clip (0: off). A non-finite loss raises NonFiniteLoss before the step
        spoils the weights.
        """
        lr = nn.optim.warmup_cosine_lr(it, config.learning_rate, config.min_lr,
                                       config.warmup_iters,
                                       config.lr_decay_iters or config.max_iters)
        for group in self.optimizer.param_groups:
            group["lr"] = lr
        loss = batch_loss()
        loss_value = loss.item()
        self.check_finite(loss_value, it, "training loss")
        self.optimizer.zero_grad()
        loss.backward()
        if after_backward is not None:
            after_backward()
        if config.grad_clip > 0:
            nn.utils.clip_grad_norm_(self.model.parameters(), config.grad_clip)
        self.optimizer.step()
        return loss_value, lr

    def loop(self, it, config, batch_loss, evaluate, desc, progress=True, tokens_per_step=None,
             after_backward=None):
        """Train from iteration `it` to config.max_iters, one `step` at a time, with a tqdm bar.

        evaluate(it) runs at iteration 0, every config.eval_interval and at the end (not
        again for the state a resume starts from) and ends in record_evaluation. A signal
        stops the loop at the next step boundary: the state is saved and run.Interrupted
        raised. tokens_per_step adds a smoothed tokens/s to the bar. Returns the last
        evaluation's record with "best_val_loss" and the total "elapsed_s".
        """
        bar = tqdm(total=config.max_iters, initial=it, desc=desc, unit="it",
                   disable=not progress, dynamic_ncols=True)
        evaluated = it if self.resuming else None  # a saved state has had its evaluation
        tokens_per_s = None
        with self.signals():
            try:
                while True:
                    if ((it % config.eval_interval == 0 or it == config.max_iters)
                            and it != evaluated):
                        evaluate(it)
                        evaluated = it
                    if it == config.max_iters:
                        break
                    if self.stop_signal is not None:  # a step boundary: what a resume needs
                        if self.saved_iter != it:
                            self.save_state(it)
                        bar.close()
                        raise self.interrupted(it)
                    step_start = time.perf_counter()
                    loss_value, lr = self.step(it, config, batch_loss, after_backward)
                    it += 1
                    postfix = {"loss": f"{loss_value:.4f}", "lr": f"{lr:.2e}"}
                    if tokens_per_step is not None:
                        rate = tokens_per_step / (time.perf_counter() - step_start)
                        tokens_per_s = rate if tokens_per_s is None else (
                            0.9 * tokens_per_s + 0.1 * rate)
                        postfix["tok_s"] = f"{tokens_per_s:,.0f}"
                    bar.update(1)
                    bar.set_postfix(postfix, refresh=False)
            finally:
                bar.close()
        return dict(self.last_eval, best_val_loss=self.best_val_loss, elapsed_s=self.elapsed())
