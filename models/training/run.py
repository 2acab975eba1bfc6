"""What every training run shares (`microtensor train`, `translate train`): its --out directory.

That is the --out policy, resume, metrics.jsonl, best and latest checkpoints, and a stop on
a non-finite loss; the loop itself (AdamW steps with warmup + cosine decay and clipping,
SIGINT/SIGTERM) is loop.py's `TrainingLoop`, which `TrainingRun` extends. A model's trainer
keeps only what differs: its model, batches, evaluation and messages.

A trainer uses it so (models/training/train.py for the GPT, models/training/translate.py for the
encoder-decoder):

    run = TrainingRun(out_dir, resume=..., overwrite=...)   # refuses before anything changes
    config = run.settings(config, resumed_config)          # on resume: the saved settings
    ... build the model and optimizer ...
    it = run.start(model, optimizer, info)                 # 0, or the restored iteration
    def evaluate(it): ... run.record_evaluation(record)    # logs, then saves latest (+ best)
    forward_backward = backward_of(batch_loss)   # loop.py's; batch_loss() -> a batch's loss
                                  # (models/training/train.py passes DataParallel.forward_backward)
    return run.loop(it, config, forward_backward, evaluate, ...)

A signal stops the loop at a step boundary after saving (loop.py says how); `run.Interrupted`
is what the caller catches.
"""
import json
import math
import os
import time
import weakref

import microtensor

from .checkpoint import (
    Snapshot,
    load_model_arrays,
    load_optimizer,
    model_arrays,
    optimizer_arrays,
    save_checkpoint,
)
from .checkpoint_format import (
    CONFIG_FILE,
    CheckpointError,
    atomic_write,
    load_snapshot,
    lock_directory,
    read_manifest,
    unlock_directory,
)
from .loop import Interrupted, TrainingLoop

# Interrupted is raised by the loop (loop.py); callers catch it as run.Interrupted
__all__ = ["METRICS_FILE", "RESUME_KEYS", "STATE_TYPES", "CheckpointExists", "Interrupted",
           "NonFiniteLoss", "TrainingRun", "describe"]

METRICS_FILE = "metrics.jsonl"


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


class TrainingRun(TrainingLoop):
    """One training run: its --out directory (what it holds, what is written to it, and
    when) and, once `start` has its model and optimizer, its loop (`loop`, `step`: loop.py).

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
        self._claimed, self._lock_fd = False, None  # the lock on --out: see _claim
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
        self._claim()  # this rewrites metrics.jsonl: the first write of a resumed run
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

    def _claim(self):
        """Before the first write: make --out and lock it until the loop ends (`release`)."""
        if not self._claimed:
            self._lock_fd = lock_directory(self.out_dir)  # None where there are no locks
            self._claimed = True
            # a run that never reaches the loop's end lets go when it is garbage-collected
            self._unlock = weakref.finalize(self, unlock_directory, self._lock_fd)

    def release(self):
        """Let another run write into --out (the loop calls this however it ends)."""
        if self._claimed:
            self._unlock()
        self._claimed, self._lock_fd = False, None

    def loop(self, *args, **kwargs):
        """TrainingLoop.loop (loop.py), then the lock on --out released, however it ends."""
        try:
            return super().loop(*args, **kwargs)
        finally:
            self.release()

    def log(self, record):
        """Append one JSON line to metrics.jsonl (the first line of a new run replaces the file)."""
        self._claim()
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
        self._claim()
        save_checkpoint(self.out_dir, model, info, best=best, latest=latest, replace=self._fresh)
        self._fresh = False
        self.saved_iter = it

    # --- settings, start, evaluations --------------------------------------------------------

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
