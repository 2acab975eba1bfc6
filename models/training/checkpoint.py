"""Checkpoints: a run's best model and latest training state in one directory (`--out`),
written atomically and read back checked, never unpickled:

    config.json      the manifest: model kind and config, the run's notes ("info": vocabulary,
                     settings, data), and for "best" and "latest" the snapshot's iter, val_loss,
                     file, bytes and SHA-256 ("latest" adds the JSON part of the training state)
    best.<n>.npz     the best model by validation loss: "model/<parameter name>" arrays
    latest.<n>.npz   the latest state: "model/<name>" and "optimizer/<index>/<buffer>" arrays
    metrics.jsonl    run.py's log; config.json's "files" names such other files of ours

<n> numbers the save. A save writes its new files (each atomically), then config.json, then
deletes what the old config.json named: a crash leaves the old checkpoint or the new, never a
mix. A model class names its kind and config class (`GPT.kind`, `GPT.config_class`); the config
has `to_dict()`, `from_dict(d)`, and may have `schema()` and `num_elements()`, checked before the
model is built. Every problem is a one-line `CheckpointError` naming the file.
"""
import hashlib
import json
import os
import re
import tempfile
import zipfile
from dataclasses import dataclass, field

import numpy as np

from ..gpt import GPT
from ..schema import (
    Array,
    Const,
    FileError,
    Int,
    Leaf,
    Nullable,
    Number,
    Object,
    Optional,
    Str,
    check,
    read_json,
    shown,
)
from ..seq2seq import Seq2SeqTransformer
from ..tokenizer import CharTokenizer

try:
    import fcntl  # POSIX file locks, for lock_directory
except ImportError:  # Windows: two runs into one --out are not kept apart
    fcntl = None

MODELS = {model.kind: model for model in (GPT, Seq2SeqTransformer)}  # kind -> model class
CONFIG_FILE, METRICS_FILE = "config.json", "metrics.jsonl"
FORMAT, VERSION = "microtensor-checkpoint", 2


CheckpointError = FileError  # a checkpoint that cannot be read (or written over), as any file


class CheckpointExists(ValueError):
    """A run into an --out that holds a checkpoint, without --resume or --overwrite."""


# What config.json holds (models/schema.py); a save checks the same before it writes.
SNAPSHOT_NOTES = {"iter": Int(0), "val_loss": Nullable(Number(0))}
SNAPSHOT_FILE = Leaf("best.<n>.npz or latest.<n>.npz", lambda v: type(v) is str and bool(
    re.fullmatch(r"(best|latest)\.\d+\.npz", v)))
FILE_NAME = Leaf("a file name in this directory", lambda v: type(v) is str
                 and v == os.path.basename(v) and v not in ("", ".", ".."))
ENTRY = Object({**SNAPSHOT_NOTES, "file": SNAPSHOT_FILE, "bytes": Int(0),
                "sha256": Str(length=64)})
# The latest snapshot's training state, which --resume reads (run.py): the random generator
# (numpy's PCG64 state), the optimizer's hyper-parameters, the last evaluation.
U128 = Int(0, 2 ** 128 - 1)
RNG_STATE = Object({"bit_generator": Const("PCG64"),
                    "state": Object({"state": U128, "inc": U128}),
                    "has_uint32": Int(0, 1), "uinteger": Int(0, 2 ** 32 - 1)})
PARAM_GROUP = Object({"params": Array(Int(0)), "lr": Number(0),
                      "weight_decay": Optional(Number(0)), "eps": Optional(Number(0)),
                      "momentum": Optional(Number(0)),
                      "betas": Optional(Array(Number(0, 1, high_open=True), max_items=2,
                                                    min_items=2))})
EVALUATION = Object({"iter": Int(0), "train_loss": Optional(Nullable(Number())),
                     "val_loss": Optional(Nullable(Number())), "elapsed_s": Optional(Number(0))})
TRAINING_STATE = {"rng": RNG_STATE, "param_groups": Array(PARAM_GROUP, min_items=1),
                  "best_val_loss": Nullable(Number()), "last_eval": Nullable(EVALUATION),
                  "elapsed_s": Number(0), "train_config": Object({}),
                  "data": Object({"source": Optional(Str()), "sha256": Optional(Str(length=64)),
                                  "path": Optional(Nullable(Str())),
                                  "characters": Optional(Int(0))})}
MANIFEST = Object({"format": Const(FORMAT), "version": Const(VERSION),
                   "save": Optional(Int(0), 0), "kind": Str(),
                   "model_config": Object({}), "info": Object({}), "best": ENTRY,
                   "latest": ENTRY, "files": Optional(Array(FILE_NAME), [])})
VOCAB = Array(Str(length=1), min_items=1)  # a vocabulary in info: one character each


# --- the files ----------------------------------------------------------------------------

def atomic_write(path, write):
    """Call write(file) on a temporary file beside `path`, then rename it onto `path`:
    os.replace is atomic on one filesystem, and fsync first means that after a power cut the
    name never points at unwritten data."""
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(path)),
                               prefix="." + os.path.basename(path) + ".", suffix=".tmp")
    try:
        mask = os.umask(0)
        os.umask(mask)
        os.chmod(tmp, 0o666 & ~mask)  # mkstemp makes it private; give it a normal file's mode
        with os.fdopen(fd, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:  # KeyboardInterrupt included: never leave the temporary behind
        os.remove(tmp)
        raise


def sha256(path):
    """The SHA-256 of the file at `path`, as hex."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def lock_directory(directory):
    """Create `directory` if needed and flock it, so that a second run into it stops at its
    first write: the descriptor (the lock ends when every process holding it closes it or
    exits), or None without POSIX locks. CheckpointError when another process holds it."""
    os.makedirs(directory, exist_ok=True)
    if fcntl is None:
        return None
    fd = os.open(directory, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise CheckpointError(f"{directory}: another training run is writing there; wait for "
                              "it to end or choose another --out") from None
    return fd


def unlock_directory(fd):
    """Release what lock_directory returned (None: nothing to release)."""
    if fd is not None:
        os.close(fd)


def read_manifest(out_dir):
    """config.json of the checkpoint in out_dir, checked against MANIFEST; None when there is
    none. Raises CheckpointError naming it (not JSON, not a checkpoint of ours, a field that
    does not fit)."""
    path = os.path.join(os.fspath(out_dir), CONFIG_FILE)
    if not os.path.exists(path):
        return None
    manifest = read_json(path)
    found = manifest.get("format") if isinstance(manifest, dict) else None
    if found == "microtensor-char-gpt":
        raise CheckpointError(f"{path} is a checkpoint of an older microtensor (model.npz, "
                              "format version 1, no training state); train it again")
    if found != FORMAT:
        raise CheckpointError(f"{path} is not a microtensor checkpoint (format {shown(found)}, "
                              f"expected {FORMAT!r})")
    check(manifest, MANIFEST, path)
    return manifest  # as written: our_files tells a config.json without "files" by its absence


def load_snapshot(out_dir, which, manifest):
    """({name: array}, path) of the "best" or "latest" snapshot that `manifest` names, its size
    and SHA-256 checked before it is read."""
    entry = manifest[which]
    path = os.path.join(os.fspath(out_dir), entry["file"])
    if not os.path.isfile(path):
        raise CheckpointError(f"{path} is missing ({CONFIG_FILE} names it as the {which} "
                              "snapshot)")
    size = os.path.getsize(path)
    if size != entry["bytes"] or sha256(path) != entry["sha256"]:
        raise CheckpointError(f"{path} does not match its size ({entry['bytes']} bytes) and "
                              f"SHA-256 in {CONFIG_FILE}: the file is damaged or was changed "
                              "after saving")
    try:  # np.savez writes stored .npy members: a compressed one could unpack 1000x larger
        with zipfile.ZipFile(path) as archive:
            for info in archive.infolist():
                if (info.compress_type != zipfile.ZIP_STORED
                        or not info.filename.endswith(".npy") or info.file_size > size):
                    raise CheckpointError(f"{path}: member {info.filename!r} is not a stored "
                                          ".npy array as np.savez writes it")
        with np.load(path, allow_pickle=False) as npz:
            return {name: npz[name] for name in npz.files}, path
    except CheckpointError:
        raise
    except (ValueError, OSError, EOFError, MemoryError, zipfile.BadZipFile) as error:
        raise CheckpointError(f"{path} is not a readable .npz file: {error}") from None


# --- the --out policy ----------------------------------------------------------------------

def describe(manifest):
    """A summary for messages: "latest iter 300, best iter 250 (val loss 2.0500)"."""
    return ", ".join(f"{which} iter {manifest[which]['iter']}"
                     + ("" if manifest[which]["val_loss"] is None
                        else f" (val loss {manifest[which]['val_loss']:.4f})")
                     for which in ("latest", "best"))


def our_files(manifest):
    """The names of our files in a checkpoint directory, as its config.json (`manifest`)
    records them, with the snapshots a crashed next save may have left."""
    names = {CONFIG_FILE, manifest["best"]["file"], manifest["latest"]["file"],
             *manifest.get("files", [METRICS_FILE] if "train_config" in manifest["info"] else [])}
    return names | {f"{which}.{manifest.get('save', 0) + 1}.npz" for which in ("best", "latest")}


def open_out_dir(out_dir, resume=False, overwrite=False, flag="--out"):
    """The --out policy of every command that writes a checkpoint: the manifest of the
    checkpoint a resume continues (else None), or an error before anything is written.

    A directory holding a file we did not write (one its config.json does not name, or any
    file when it has no config.json of ours) is refused whatever the flags: a file of the
    user's is never deleted, moved or overwritten. A checkpoint of ours is refused unless
    resume (continue it) or overwrite (start afresh). Raises CheckpointExists (refused),
    CheckpointError (foreign files; a broken checkpoint), FileNotFoundError (resume with
    nothing to continue), ValueError (both flags, or out_dir is a file).
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
    ours = our_files(manifest) if manifest else set()
    foreign = [n for n in sorted(os.listdir(out_dir)) if n not in ours and not any(
        n.startswith(f".{o}.") and n.endswith(".tmp") for o in ours)]  # atomic_write's temporary
    if foreign:
        what = (f"and no checkpoint of ours (no {CONFIG_FILE})" if manifest is None
                else f"which its {CONFIG_FILE} does not name")
        more = f" and {len(foreign) - 5} more" if len(foreign) > 5 else ""
        raise CheckpointError(f"{flag} {out_dir} holds {', '.join(foreign[:5])}{more} {what}: "
                              "a file we did not write is never replaced; choose another "
                              "directory, or move them")
    if resume and manifest is None:
        raise FileNotFoundError(f"--resume: no checkpoint in {out_dir} (no {CONFIG_FILE}); "
                                "drop --resume to start a new run there")
    if manifest is not None and not resume and not overwrite:
        raise CheckpointExists(f"{out_dir} already holds a checkpoint ({describe(manifest)}): "
                               "continue it with --resume, or start afresh with --overwrite")
    return manifest if resume else None


# --- saving --------------------------------------------------------------------------------

@dataclass
class Snapshot:
    """The best or latest of a checkpoint: {name: array} at iteration `iter`, its val_loss (None
    when not measured) and `state`, JSON notes for config.json (the training state)."""
    iter: int
    val_loss: object
    arrays: dict
    state: dict = field(default_factory=dict)

    def __post_init__(self):  # numpy's scalars (np.int64(7)) as the JSON numbers they hold
        self.iter, self.val_loss = (v.item() if isinstance(v, np.generic) else v
                                    for v in (self.iter, self.val_loss))


def model_arrays(model):
    """{"model/<parameter name>": array} of `model`'s state_dict."""
    return {f"model/{name}": array for name, array in model.state_dict().items()}


def optimizer_arrays(optimizer):
    """(arrays, param_groups) of `optimizer.state_dict()`: buffers as "optimizer/<i>/<name>"."""
    snapshot = optimizer.state_dict()
    arrays = {f"optimizer/{index}/{name}": np.asarray(value)
              for index, buffers in snapshot["state"].items() for name, value in buffers.items()}
    return arrays, snapshot["param_groups"]


def save_checkpoint(out_dir, model, info, best=None, latest=None, replace=False, files=()):
    """Write `model`'s checkpoint into out_dir (created if needed); returns its manifest.

    info: JSON-safe notes about the run (for a GPT: "vocab", the settings, the data).
    best, latest: `Snapshot`s; None keeps the one in out_dir (an evaluation that did not
    improve rewrites only the latest). replace=True keeps nothing of out_dir, even a broken
    checkpoint. files: other files of ours in out_dir (metrics.jsonl), recorded for
    open_out_dir. Deletes only what the old config.json named. Raises, before anything is
    written, TypeError for a model of no registered kind; CheckpointError for what load_model
    would refuse, a None snapshot with none to keep, or a broken config.json (unless replace).
    """
    out_dir = os.fspath(out_dir)
    path, kind = os.path.join(out_dir, CONFIG_FILE), getattr(type(model), "kind", None)
    if MODELS.get(kind) is not type(model):
        raise TypeError(f"save_checkpoint: {type(model).__name__} is no model kind of "
                        f"checkpoints ({sorted(MODELS)})")
    try:
        json.dumps(info, ensure_ascii=False).encode("utf-8")
    except (TypeError, ValueError) as error:
        raise CheckpointError(f"save_checkpoint: info cannot be written as UTF-8 JSON "
                              f"({error})") from None
    try:
        old = read_manifest(out_dir) or {}
    except CheckpointError:
        if not replace:
            raise
        old = {}
    for which, snapshot in (("best", best), ("latest", latest)):
        if snapshot is not None:
            check({"iter": snapshot.iter, "val_loss": snapshot.val_loss},
                  Object(SNAPSHOT_NOTES), path, which)
            check_model_arrays(model, snapshot.arrays, f"{path} ({which} snapshot)")
        elif replace or which not in old:
            raise CheckpointError(f"save_checkpoint: {out_dir} has no {which} snapshot to keep; "
                                  "pass one")
    _model_config(type(model).config_class, model.config.to_dict(), path)
    os.makedirs(out_dir, exist_ok=True)
    number = old.get("save", 0) + 1  # new file names, so the old checkpoint stays whole
    manifest = {"format": FORMAT, "version": VERSION, "save": number, "kind": kind,
                "model_config": model.config.to_dict(), "info": info, "files": sorted(files),
                "best": old.get("best"), "latest": old.get("latest")}
    for which, snapshot in (("best", best), ("latest", latest)):
        if snapshot is not None:
            name = f"{which}.{number}.npz"
            file = os.path.join(out_dir, name)
            atomic_write(file, lambda f, arrays=snapshot.arrays: np.savez(f, **arrays))
            manifest[which] = {"iter": snapshot.iter, "val_loss": snapshot.val_loss, "file": name,
                               "bytes": os.path.getsize(file), "sha256": sha256(file),
                               **snapshot.state}
    text = json.dumps(manifest, indent=2, ensure_ascii=False) + "\n"
    atomic_write(path, lambda f: f.write(text.encode("utf-8")))
    keep = our_files(manifest) - {f"{w}.{number + 1}.npz" for w in ("best", "latest")}
    for name in sorted(our_files(old) - keep if old else ()):  # the old files, a crash's strays
        if os.path.isfile(os.path.join(out_dir, name)):
            os.remove(os.path.join(out_dir, name))
    return manifest


def save_model(out_dir, model, tokenizer, iter=0, info=None):
    """A GPT checkpoint of `model` alone, its best and latest these weights, without training
    state (an imported model): `sample`, `graph` and `export` read it, `train --resume` cannot.
    Replaces a checkpoint in out_dir."""
    snapshot = Snapshot(iter, None, model_arrays(model))
    return save_checkpoint(out_dir, model, {"vocab": tokenizer.chars, **(info or {})},
                           best=snapshot, latest=snapshot, replace=True)


# --- loading -------------------------------------------------------------------------------

def _model_config(config_class, d, path):
    """config_class.from_dict(d), its JSON types checked first when it has a schema()."""
    if hasattr(config_class, "schema"):
        check(d, config_class.schema(), path, "model_config")
    try:
        return config_class.from_dict(d)
    except FileError:
        raise
    except (ValueError, TypeError) as error:
        raise CheckpointError(f"{path}: model_config is not valid: {error}") from None


def check_model_arrays(model, arrays, path):
    """The "model/..." arrays as {parameter name: array}, checked against `model`:
    CheckpointError naming `path` for a missing, extra, misshapen, non-float or non-finite one."""
    weights = {name[len("model/"):]: a for name, a in arrays.items() if name.startswith("model/")}
    expected = dict(model.named_parameters())
    missing, extra = sorted(set(expected) - set(weights)), sorted(set(weights) - set(expected))
    if missing or extra:
        raise CheckpointError(f"{path} does not fit its model_config: missing arrays "
                              f"{missing[:3]}, unexpected arrays {extra[:3]}")
    for name, array in weights.items():
        if array.shape != expected[name].shape or array.dtype.kind != "f":
            raise CheckpointError(f"{path}: {name} is {array.dtype} of shape {array.shape}; "
                                  f"its model_config needs floats of shape {expected[name].shape}")
        if not np.isfinite(array).all():  # training never saves these; sampling would be noise
            raise CheckpointError(f"{path}: {name} holds NaN or infinite values")
    return weights


def load_model_arrays(model, arrays, path):
    """Copy the "model/..." arrays into `model`, checked (check_model_arrays)."""
    model.load_state_dict(check_model_arrays(model, arrays, path))


def load_optimizer(optimizer, arrays, param_groups, path):
    """Inverse of `optimizer_arrays`: restore `optimizer` from the arrays read from `path`,
    checked to be as our optimizers write them: the same buffers for every parameter, "step"
    a 0-d count >= 0, the others finite floats of their parameter's shape (a 0-d one would
    broadcast silently)."""
    params = [p for group in optimizer.param_groups for p in group["params"]]
    state = {}
    for name, array in arrays.items():
        if not name.startswith("optimizer/"):
            continue
        index, _, key = name[len("optimizer/"):].partition("/")
        if not index.isdigit() or not key:
            raise CheckpointError(f"{path}: unexpected array {name!r}; expected "
                                  "optimizer/<index>/<buffer>")
        index, step = int(index), key == "step"
        shape = () if step else params[index].shape if index < len(params) else array.shape
        if (array.shape != shape or array.dtype.kind not in ("fiu" if step else "f")
                or not np.isfinite(array).all() or (step and array < 0)):
            raise CheckpointError(f"{path}: {name} is {array.dtype} of shape {array.shape}; "
                                  "expected " + ("a count >= 0 (0-d)" if step else
                                                 f"floats of its parameter's shape {shape}"))
        state.setdefault(index, {})[key] = array
    names = {frozenset(buffers) for buffers in state.values()}
    if len(names) > 1:
        raise CheckpointError(f"{path}: the parameters' optimizer buffers differ "
                              f"({sorted(sorted(n) for n in names)}); expected the same for each")
    try:
        optimizer.load_state_dict({"state": state, "param_groups": param_groups})
    except (ValueError, KeyError, TypeError) as error:
        raise CheckpointError(f"{path}: the optimizer state does not fit the model: "
                              f"{error}") from None


def load_model(out_dir, which="best", kind=None):
    """(model, manifest): the "best" (default) or "latest" model in out_dir, in eval mode.

    kind: the model kind the caller needs ("gpt", ...), or None for any registered one. Raises
    FileNotFoundError when there is no checkpoint, CheckpointError when it is broken (a
    model_config far larger than the snapshot included, before anything is allocated).
    """
    out_dir = os.fspath(out_dir)
    manifest = read_manifest(out_dir) if os.path.isdir(out_dir) else None
    if manifest is None:
        raise FileNotFoundError(f"no checkpoint in {out_dir} ("
                                + (f"no {CONFIG_FILE}" if os.path.isdir(out_dir) else
                                   "a file" if os.path.exists(out_dir) else "it does not exist")
                                + "): train one with `microtensor train --out DIR`")
    arrays, snapshot_path = load_snapshot(out_dir, which, manifest)
    path, found = os.path.join(os.fspath(out_dir), CONFIG_FILE), manifest["kind"]
    if kind is not None and found != kind:
        raise CheckpointError(f"{path} holds a {shown(found)} model, not a {kind!r} one")
    if found not in MODELS:
        raise CheckpointError(f"{path}: unknown model kind {shown(found)}; known: {sorted(MODELS)}")
    config = _model_config(MODELS[found].config_class, manifest["model_config"], path)
    elements = sum(a.size for name, a in arrays.items() if name.startswith("model/"))
    if hasattr(config, "num_elements") and config.num_elements() > 2 * elements + (1 << 20):
        raise CheckpointError(f"{path}: model_config describes a model of "
                              f"{config.num_elements():,} numbers; the snapshot holds "
                              f"{elements:,}")
    model = MODELS[found](config)
    load_model_arrays(model, arrays, snapshot_path)
    return model.eval(), manifest


def load_vocabularies(out_dir, model, manifest, tokenizer_class, **sizes):
    """{info field: tokenizer_class(its vocabulary)} for each `sizes` {info field: the
    model_config field of its size}; CheckpointError naming config.json for a vocabulary that is
    not one (VOCAB, or a repeated character) or does not fit the model."""
    path = os.path.join(os.fspath(out_dir), CONFIG_FILE)
    info = check(manifest["info"], Object({name: VOCAB for name in sizes}), path, "info")
    tokenizers = {}
    for name, size in sizes.items():
        try:
            tokenizers[name] = tokenizer_class(info[name])
        except ValueError as error:
            raise CheckpointError(f"{path}: info.{name}: {error}") from None
        if tokenizers[name].vocab_size != getattr(model.config, size):
            raise CheckpointError(f"{path}: info.{name} has {tokenizers[name].vocab_size} "
                                  f"characters but model_config.{size} is "
                                  f"{getattr(model.config, size)}")
    return tokenizers


def load_checkpoint(out_dir, which="best"):
    """(GPT, CharTokenizer, manifest) of a GPT checkpoint (by default its best model)."""
    model, manifest = load_model(out_dir, which, kind="gpt")
    vocab = load_vocabularies(out_dir, model, manifest, CharTokenizer, vocab="vocab_size")
    return model, vocab["vocab"], manifest
