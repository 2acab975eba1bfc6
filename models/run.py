"""The bookkeeping every training loop shares (`microtensor train`, `translate train`).

That is the --out policy, SIGINT/SIGTERM, metrics.jsonl, best and latest checkpoints, and a
stop on a non-finite loss.

A loop uses it so (see models/train.py for the GPT's):

    run = TrainingRun(out_dir, resume=..., overwrite=...)   # refuses before anything changes
    if run.resuming: restore the model, optimizer, generator and iter from run.manifest
    with run.signals():
        while ...:
            run.check_finite(loss_value, it, "training loss")
            ... at an evaluation: run.log(record); run.save(model, info, ...)
            if run.stop_signal: run.save(...); raise run.interrupted(it)

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

from .checkpoint import (
    CONFIG_FILE,
    CheckpointError,
    Snapshot,
    atomic_write,
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
    """One training run's --out directory: what it holds, what is written to it, and when.

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
