"""Checkpoints of models: which model kinds a checkpoint can hold, the --out directory policy,
and saving and loading them.

A checkpoint is a run's best model and latest training state, in one directory; its files
and how they are read back checked are checkpoint_format.py's. A save writes its new files
first (each a temporary file renamed into place), then replaces config.json, then deletes
the files the old config.json named. config.json is one file and `os.replace` is atomic,
so a crash at any point leaves either the old checkpoint or the new one, never a mix.

A model class names its kind and config class (`GPT.kind`, `GPT.config_class`), where it is
defined; the config class has `to_dict()` and `from_dict(d)`, the model is built as
`model_class(config)` and keeps it as `.config`. A config class with `schema()`
(models/config.py) has its JSON types checked before `from_dict`, and one with
`num_elements()` is compared with the snapshot's size before its model is built.
"""
import json
import os
from dataclasses import dataclass, field

import numpy as np

from ..gpt import GPT
from ..schema import Array, FileError, Object, Str, check
from ..seq2seq import Seq2SeqTransformer
from ..tokenizer import CharTokenizer
from .checkpoint_format import (
    CONFIG_FILE,
    FORMAT,
    SNAPSHOT_NOTES,
    VERSION,
    CheckpointError,
    atomic_write,
    load_snapshot,
    read_manifest,
    require_manifest,
    sha256,
)

MODELS = {model.kind: model for model in (GPT, Seq2SeqTransformer)}  # kind -> model class
METRICS_FILE = "metrics.jsonl"


class CheckpointExists(ValueError):
    """A run into an --out that holds a checkpoint, without --resume or --overwrite."""


def describe(manifest):
    """A summary for messages, e.g. "latest iter 300, best iter 250 (val loss 2.0500)"."""
    parts = []
    for which in ("latest", "best"):
        loss = manifest[which]["val_loss"]
        parts.append(f"{which} iter {manifest[which]['iter']}"
                     + ("" if loss is None else f" (val loss {loss:.4f})"))
    return ", ".join(parts)


def our_files(manifest):
    """The names of the files in a checkpoint directory that we wrote, as `manifest` (its
    config.json) records them, with the snapshots a crashed save may have left (that save's
    number) and the temporary files of atomic_write."""
    names = {CONFIG_FILE, manifest["best"]["file"], manifest["latest"]["file"],
             *manifest.get("files", [METRICS_FILE] if "train_config" in manifest["info"] else [])}
    names |= {f"{which}.{manifest.get('save', 0) + 1}.npz" for which in ("best", "latest")}
    return names


def _is_ours(name, ours):
    """`name` is one of `ours`, or atomic_write's temporary file of one (".NAME.xxxx.tmp")."""
    return name in ours or any(name.startswith(f".{o}.") and name.endswith(".tmp") for o in ours)


def open_out_dir(out_dir, resume=False, overwrite=False, flag="--out"):
    """The --out policy of every command that writes a checkpoint: the manifest of the
    checkpoint a resume continues (else None), or an error before anything is written.

    A directory that holds anything we did not write (as its config.json records it: no
    config.json of ours, and the directory is not empty, or a file it does not name) is
    refused, whatever the flags: a file of the user's is never deleted, moved or overwritten.
    A checkpoint of ours is refused unless resume (continue it) or overwrite (start afresh:
    our files are replaced). Raises CheckpointExists (refused), CheckpointError (names the
    foreign files; or resume of a broken checkpoint), FileNotFoundError (resume with nothing
    to continue), ValueError (both flags, or out_dir is a file).
    """
    out_dir = os.fspath(out_dir)
    if resume and overwrite:
        raise ValueError("--resume and --overwrite exclude each other: continue the "
                         "checkpoint, or start afresh")
    if os.path.exists(out_dir) and not os.path.isdir(out_dir):
        raise ValueError(f"{flag} {out_dir!r} is a file; give a directory")
    if not os.path.isdir(out_dir):
        if resume:
            raise FileNotFoundError(f"--resume: {out_dir} does not exist; drop --resume to "
                                    "start a new run there")
        return None
    try:
        manifest = read_manifest(out_dir)
    except CheckpointError as error:
        raise CheckpointError(f"{'--resume: ' if resume else ''}{error}; {flag} {out_dir} is "
                              "left as it is: choose another directory") from None
    names = sorted(os.listdir(out_dir))
    foreign = [n for n in names if manifest is None or not _is_ours(n, our_files(manifest))]
    if foreign:
        shown = ", ".join(foreign[:5]) + (f" and {len(foreign) - 5} more" if len(foreign) > 5
                                          else "")
        what = (f"and no checkpoint of ours (no {CONFIG_FILE})" if manifest is None
                else f"which its {CONFIG_FILE} does not name")
        raise CheckpointError(f"{flag} {out_dir} holds {shown} {what}: a file we did "
                              "not write is never replaced; choose another directory, or "
                              "move them")
    if resume and manifest is None:
        raise FileNotFoundError(f"--resume: no checkpoint in {out_dir} (no {CONFIG_FILE}); "
                                "drop --resume to start a new run there")
    if manifest is not None and not resume and not overwrite:
        raise CheckpointExists(f"{out_dir} already holds a checkpoint ({describe(manifest)}): "
                               "continue it with --resume, or start afresh with --overwrite")
    return manifest if resume else None


@dataclass
class Snapshot:
    """One of the two things a checkpoint keeps: arrays from iteration `iter`.

    arrays: {name: numpy array}, e.g. `model_arrays(model)`; state: JSON-safe notes that
    go into config.json beside it (the latest training state's random generator, ...).
    val_loss: the validation loss at `iter`, or None when it was not measured there.
    """

    iter: int
    val_loss: object
    arrays: dict
    state: dict = field(default_factory=dict)


def model_arrays(model):
    """{"model/<parameter name>": array} of `model`'s state_dict."""
    return {f"model/{name}": array for name, array in model.state_dict().items()}


def optimizer_arrays(optimizer):
    """(arrays, param_groups) of `optimizer.state_dict()`: buffers as "optimizer/<i>/<name>"."""
    snapshot = optimizer.state_dict()
    arrays = {f"optimizer/{index}/{name}": np.asarray(value)
              for index, buffers in snapshot["state"].items() for name, value in buffers.items()}
    return arrays, snapshot["param_groups"]


def _check_optimizer_buffers(optimizer, state, path):
    """CheckpointError unless `state` ({index: {buffer: array}}) has the structure our
    optimizers write: every parameter the same buffers, "step" a 0-d count, every other
    buffer a float array of its parameter's shape (a 0-d one would broadcast silently)."""
    params = [p for group in optimizer.param_groups for p in group["params"]]
    names = {frozenset(buffers) for buffers in state.values()}
    if len(names) > 1:
        raise CheckpointError(f"{path}: the parameters' optimizer buffers differ "
                              f"({sorted(sorted(n) for n in names)}); expected the same for each")
    for index, buffers in state.items():
        for key, array in buffers.items():
            name = f"optimizer/{index}/{key}"
            if key == "step":
                if array.ndim != 0:
                    raise CheckpointError(f"{path}: {name} has shape {array.shape}; expected "
                                          "a count (0-d)")
            elif index < len(params) and (array.shape != params[index].shape
                                          or array.dtype.kind != "f"):
                raise CheckpointError(f"{path}: {name} is {array.dtype} of shape "
                                      f"{array.shape}; expected floats of its parameter's "
                                      f"shape {params[index].shape}")


def load_optimizer(optimizer, arrays, param_groups, path):
    """Inverse of `optimizer_arrays`: restore `optimizer` from the arrays read from `path`."""
    state = {}
    for name, array in arrays.items():
        if name.startswith("optimizer/"):
            parts = name.split("/", 2)
            if len(parts) != 3 or not parts[1].isdigit():
                raise CheckpointError(f"{path}: unexpected array {name!r}; expected "
                                      "optimizer/<index>/<buffer>")
            if (array.dtype.kind not in "fiu" or not np.isfinite(array).all()
                    or (array.dtype.kind == "i" and (array < 0).any())):
                raise CheckpointError(f"{path}: {name} holds {array.dtype} values; expected "
                                      "finite numbers (a step count >= 0)")
            state.setdefault(int(parts[1]), {})[parts[2]] = array
    _check_optimizer_buffers(optimizer, state, path)
    try:
        optimizer.load_state_dict({"state": state, "param_groups": param_groups})
    except (ValueError, KeyError, TypeError) as error:
        raise CheckpointError(f"{path}: the optimizer state does not fit the model: "
                              f"{error}") from None


# --- writing -----------------------------------------------------------------------------

def _write_snapshot(out_dir, which, number, snapshot):
    name = f"{which}.{number}.npz"
    path = os.path.join(out_dir, name)
    atomic_write(path, lambda f: np.savez(f, **snapshot.arrays))
    return {"iter": int(snapshot.iter), "val_loss": snapshot.val_loss, "file": name,
            "bytes": os.path.getsize(path), "sha256": sha256(path), **snapshot.state}


def _check_before_writing(out_dir, model, kind, *snapshots):
    """What `load_model` will check, checked before anything is written: the snapshots'
    iter and val_loss, their model arrays, and that the model's config reads back."""
    path = os.path.join(out_dir, CONFIG_FILE)
    for which, snapshot in zip(("best", "latest"), snapshots):
        if snapshot is not None:
            if isinstance(snapshot.iter, np.integer):
                snapshot.iter = int(snapshot.iter)
            if isinstance(snapshot.val_loss, np.floating):
                snapshot.val_loss = float(snapshot.val_loss)
            try:
                check({"iter": snapshot.iter, "val_loss": snapshot.val_loss},
                      Object(SNAPSHOT_NOTES), path, which)
            except FileError as error:
                raise CheckpointError(str(error)) from None
            check_model_arrays(model, snapshot.arrays, f"{path} ({which} snapshot)")
    _config_from_dict(MODELS[kind].config_class, model.config.to_dict(), path)


def save_checkpoint(out_dir, model, info, best=None, latest=None, replace=False, files=()):
    """Write `model`'s checkpoint into out_dir: its kind and config, `info`, and the snapshots.

    info: JSON-safe notes about the run (for a GPT: "vocab", the settings, the data).
    best, latest: `Snapshot`s; one left None keeps the one already in out_dir (so a save
    after an evaluation that did not improve rewrites only the latest state).
    replace=True starts afresh: nothing is kept from out_dir, even a broken checkpoint.
    files: the names of other files of ours in out_dir (metrics.jsonl), recorded so that
    `open_out_dir` knows them. Creates out_dir if needed; deletes only files of the old
    checkpoint that config.json named, and the snapshots of a crashed save. Raises
    CheckpointError if a snapshot is None and out_dir has none to keep, or if out_dir's
    config.json is broken (unless replace).
    """
    out_dir = os.fspath(out_dir)
    kind = getattr(type(model), "kind", None)
    if MODELS.get(kind) is not type(model):
        raise TypeError(f"save_checkpoint: {type(model).__name__} is no model kind of "
                        f"checkpoints ({sorted(MODELS)})")
    try:  # before any file is written: config.json must be able to hold `info`
        json.dumps(info, ensure_ascii=False).encode("utf-8")
    except (TypeError, ValueError) as error:
        raise CheckpointError(f"save_checkpoint: info cannot be written as UTF-8 JSON "
                              f"({error})") from None
    _check_before_writing(out_dir, model, kind, best, latest)
    os.makedirs(out_dir, exist_ok=True)
    try:
        old = read_manifest(out_dir) or {}
    except CheckpointError:
        if not replace:
            raise
        old = {}
    number = old.get("save", 0) + 1  # new file names, so the old checkpoint stays whole
    replaced = our_files(old) if old else {f"{w}.{number}.npz" for w in ("best", "latest")}
    if replace:
        old = {}
    manifest = {"format": FORMAT, "version": VERSION, "save": number, "kind": kind,
                "model_config": model.config.to_dict(), "info": info, "files": sorted(files)}
    for which, snapshot in (("best", best), ("latest", latest)):
        if snapshot is not None:
            manifest[which] = _write_snapshot(out_dir, which, number, snapshot)
        elif which in old:
            manifest[which] = old[which]
        else:
            raise CheckpointError(f"save_checkpoint: {out_dir} has no {which} snapshot to keep; "
                                  f"pass one")
    text = json.dumps(manifest, indent=2, ensure_ascii=False) + "\n"
    atomic_write(os.path.join(out_dir, CONFIG_FILE), lambda f: f.write(text.encode("utf-8")))
    keep = our_files(manifest) - {f"{w}.{number + 1}.npz" for w in ("best", "latest")}
    for name in sorted(replaced - keep):  # old snapshots (or a crashed save's), old files
        if os.path.isfile(os.path.join(out_dir, name)):
            os.remove(os.path.join(out_dir, name))
    return manifest


def save_model(out_dir, model, tokenizer, iter=0, info=None):
    """A GPT checkpoint of `model` alone, without training state (e.g. an imported model).

    Its best and latest are these weights: `sample`, `graph`, `attention` and `export`
    read it; `train --resume` cannot continue it. Replaces a checkpoint in out_dir.
    """
    snapshot = Snapshot(iter, None, model_arrays(model))
    return save_checkpoint(out_dir, model, {"vocab": tokenizer.chars, **(info or {})},
                           best=snapshot, latest=snapshot, replace=True)


# --- reading -----------------------------------------------------------------------------

def _config_from_dict(config_class, d, path):
    """config_class.from_dict(d), its JSON types checked first when it has a schema()."""
    try:
        if hasattr(config_class, "schema"):
            check(d, config_class.schema(), path, "model_config")
        return config_class.from_dict(d)
    except FileError as error:
        raise CheckpointError(str(error)) from None
    except (ValueError, TypeError) as error:
        raise CheckpointError(f"{path}: model_config is not valid: {error}") from None


def build_model(manifest, kind=None, path=CONFIG_FILE, elements=None):
    """A fresh model of the kind and config that `manifest` records (kind: the one expected).

    elements: how many numbers the snapshot's model arrays hold; a config that asks for a
    model much larger is refused before anything is allocated.
    """
    found = manifest["kind"]
    if kind is not None and found != kind:
        raise CheckpointError(f"{path} holds a {found!r} model, not a {kind!r} one")
    if found not in MODELS:
        raise CheckpointError(f"{path}: unknown model kind {found!r}; known: {sorted(MODELS)}")
    model_class = MODELS[found]
    config = _config_from_dict(model_class.config_class, manifest["model_config"], path)
    if (elements is not None and hasattr(config, "num_elements")
            and config.num_elements() > 2 * elements + (1 << 20)):
        raise CheckpointError(f"{path}: model_config describes a model of "
                              f"{config.num_elements():,} numbers; the snapshot holds "
                              f"{elements:,}")
    try:
        return model_class(config)
    except MemoryError:
        raise CheckpointError(f"{path}: model_config describes a model larger than memory"
                              ) from None


def check_model_arrays(model, arrays, path):
    """The "model/..." arrays of a snapshot as {parameter name: array}, checked against
    `model`: CheckpointError naming `path` for a missing, extra, misshapen, non-float or
    non-finite one. Saving checks the same before it writes."""
    weights = {name[len("model/"):]: a for name, a in arrays.items() if name.startswith("model/")}
    expected = dict(model.named_parameters())
    missing = sorted(set(expected) - set(weights))
    extra = sorted(set(weights) - set(expected))
    if missing or extra:
        raise CheckpointError(f"{path} does not fit its model_config: missing arrays "
                              f"{missing[:3]}, unexpected arrays {extra[:3]}")
    for name, array in weights.items():
        if array.shape != expected[name].shape:
            raise CheckpointError(f"{path}: {name} has shape {array.shape}, its model_config "
                                  f"needs {expected[name].shape}")
        if array.dtype.kind != "f":
            raise CheckpointError(f"{path}: {name} has dtype {array.dtype}, expected floats")
        if not np.isfinite(array).all():  # training never saves these; sampling would be noise
            raise CheckpointError(f"{path}: {name} holds NaN or infinite values")
    return weights


def load_model_arrays(model, arrays, path):
    """Copy the "model/..." arrays into `model`, checked (check_model_arrays)."""
    model.load_state_dict(check_model_arrays(model, arrays, path))


def model_elements(arrays):
    """How many numbers the "model/..." arrays hold."""
    return sum(a.size for name, a in arrays.items() if name.startswith("model/"))


def load_model(out_dir, which="best", kind=None):
    """(model, manifest): the "best" (default) or "latest" model in out_dir, in eval mode.

    kind: the model kind the caller needs ("gpt", ...), or None for any registered one.
    Reads config.json and the snapshot, checked, before it builds the model. Raises
    FileNotFoundError when there is no checkpoint, CheckpointError when it is broken.
    """
    manifest = require_manifest(out_dir)
    arrays, path = load_snapshot(out_dir, which, manifest)
    model = build_model(manifest, kind, os.path.join(os.fspath(out_dir), CONFIG_FILE),
                        model_elements(arrays))
    load_model_arrays(model, arrays, path)
    model.eval()
    return model, manifest


# What a GPT checkpoint's info must hold for `sample`: its vocabulary, one character each.
VOCAB = Array(Str(length=1), min_items=1)
GPT_INFO = Object({"vocab": VOCAB})


def load_checkpoint(out_dir, which="best"):
    """(GPT, CharTokenizer, manifest) of a GPT checkpoint (by default its best model)."""
    model, manifest = load_model(out_dir, which, kind="gpt")
    path = os.path.join(os.fspath(out_dir), CONFIG_FILE)
    try:
        info = check(manifest["info"], GPT_INFO, path, "info")
        tokenizer = CharTokenizer(info["vocab"])
    except ValueError as error:
        raise CheckpointError(f"{path}: info.vocab: {error}" if not isinstance(error, FileError)
                              else str(error)) from None
    if tokenizer.vocab_size != model.config.vocab_size:
        raise CheckpointError(f"{path}: the vocabulary has {tokenizer.vocab_size} characters "
                              f"but model_config.vocab_size is {model.config.vocab_size}")
    return model, tokenizer, manifest
