"""The --out directory of a run: its files, what config.json holds and a resume needs of it, its
lock, and the policy that never replaces a file we did not write; written atomically (fsync,
os.replace), read back checked, never unpickled (np.load(allow_pickle=False) of .npy members):

    config.json      the manifest: model kind and config, the run's notes ("info": vocabulary,
                     settings, data), and for "best" and "latest" the snapshot's iter, val_loss,
                     file, bytes and SHA-256 ("latest" adds the JSON part of the training state)
    best.<n>.npz     the best model by validation loss: "model/<parameter name>" arrays
    latest.<n>.npz   the latest state: "model/<name>" and "optimizer/<index>/<buffer>" arrays
    metrics.jsonl    run.py's log; config.json's "files" names such other files of ours

<n> numbers the save (checkpoint.save_checkpoint). Every problem is a one-line `CheckpointError`
naming the file.
"""
import hashlib
import os
import re
import tempfile
import zipfile

import numpy as np

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

try:
    import fcntl  # POSIX file locks, for lock_directory
except ImportError:  # Windows: two runs into one --out are not kept apart
    fcntl = None

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
# The training state a resume reads (run.py; RESUME_STATE: where each sits): the random generator
# (numpy's PCG64 state), the optimizer's hyper-parameters, the last evaluation, settings, data.
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
                                  "characters": Optional(Int(0)),
                                  "tokens": Optional(Int(0))})}
# What a resume needs from config.json: (section, key) -> its JSON type
RESUME_STATE = {(section, key): TRAINING_STATE[key] for section, keys in (
    ("info", ("train_config", "data")),
    ("latest", ("rng", "param_groups", "best_val_loss", "last_eval", "elapsed_s")))
    for key in keys}
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


def _holds_checkpoint(path):
    """Whether `path` is a directory holding a checkpoint of ours (`out/tiny` inside `out`): a
    save never touches a directory, so one of ours may sit inside another run's --out."""
    try:
        return os.path.isdir(path) and read_manifest(path) is not None
    except CheckpointError:
        return False


def open_out_dir(out_dir, resume=False, overwrite=False, flag="--out"):
    """The --out policy of every command that writes a checkpoint: the manifest of the
    checkpoint a resume continues (else None), or an error before anything is written.

    A directory holding a file we did not write (one its config.json does not name, or any
    file when it has no config.json of ours; a folder holding a checkpoint of ours is not
    one) is refused whatever the flags: a file of the user's is never deleted, moved or
    overwritten. A checkpoint of ours is refused unless resume (continue it) or overwrite
    (start afresh). Raises CheckpointExists (refused), CheckpointError (foreign files; a
    broken checkpoint), FileNotFoundError (resume with nothing to continue), ValueError (both
    flags, or out_dir is a file).
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
        n.startswith(f".{o}.") and n.endswith(".tmp") for o in ours)  # atomic_write's temporary
        and not _holds_checkpoint(os.path.join(out_dir, n))]
    if foreign:
        what = (f"and no checkpoint of ours (no {CONFIG_FILE})" if manifest is None
                else f"which its {CONFIG_FILE} does not name")
        more = f" and {len(foreign) - 5} more" if len(foreign) > 5 else ""
        raise CheckpointError(f"{flag} {out_dir} holds {', '.join(foreign[:5])}{more} {what}: "
                              "a file we did not write is never replaced; choose another "
                              f"directory (e.g. {flag} {out_dir.rstrip(os.sep)}-2), or move them")
    if resume and manifest is None:
        raise FileNotFoundError(f"--resume: no checkpoint in {out_dir} (no {CONFIG_FILE}); "
                                "drop --resume to start a new run there")
    if manifest is not None and not resume and not overwrite:
        raise CheckpointExists(f"{out_dir} already holds a checkpoint ({describe(manifest)}): "
                               "continue it with --resume, or start afresh with --overwrite")
    return manifest if resume else None


def check_resumable(manifest, kind, path):
    """CheckpointError naming `path` (its config.json) unless `manifest` holds a model of
    `kind` and the training state RESUME_STATE lists, each of its JSON type."""
    if manifest["kind"] != kind:
        raise CheckpointError(f"--resume: {path} holds a {shown(manifest['kind'])} model; this "
                              f"command continues {kind!r} models")
    for (section, key), spec in RESUME_STATE.items():
        entry = manifest[section]
        if not isinstance(entry, dict) or key not in entry:
            raise CheckpointError(f"--resume: {path} holds no training state to continue "
                                  f"({section}.{key} is missing): its model can be sampled, "
                                  "not resumed; start afresh with --overwrite")
        try:
            check(entry[key], spec, path, f"{section}.{key}")
        except FileError as error:
            raise CheckpointError(f"--resume: {error}") from None
