"""The files of a checkpoint directory: what config.json and the snapshots hold, atomic writes,
and reading them back checked, without unpickling.

A checkpoint directory (`--out`) holds

    config.json         the manifest: model kind and config, the run's notes (vocabulary,
                        settings, data), and for "best" and "latest": iter, val_loss, file,
                        size and SHA-256 of that file; "latest" also holds the JSON part
                        of the training state (random generator, schedule, elapsed time)
    best.<n>.npz        the weights of the best model by validation loss: "model/<name>"
    latest.<n>.npz      the latest training state: "model/<name>" and the optimizer's
                        buffers "optimizer/<index>/<buffer>"
    metrics.jsonl       (written by models/training/run.py's TrainingRun.log, not here)

and nothing else: "files" in config.json names the other files of ours (metrics.jsonl), and
checkpoint.py's open_out_dir refuses a directory that holds a file it does not name.

<n> is the number of the save that wrote the file (checkpoint.py's save_checkpoint says in
what order a save writes them); the hashes catch a file damaged after the fact.

Loading uses `np.load(allow_pickle=False)`: a checkpoint holds only plain arrays and JSON,
so opening one cannot run code. Every problem is a `CheckpointError` (a ValueError) whose
one-line message names the file and what is wrong.
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
    Nullable,
    Number,
    Object,
    Optional,
    Str,
    check,
    json_type,
    read_json,
    shown,
)

try:
    import fcntl  # POSIX file locks, for lock_directory
except ImportError:  # Windows: runs into one --out are not kept apart
    fcntl = None

CONFIG_FILE = "config.json"
FORMAT = "microtensor-checkpoint"
VERSION = 2
SNAPSHOT_FILE = re.compile(r"(best|latest)\.\d+\.npz")  # the names of a directory's snapshots


class CheckpointError(FileError):
    """A checkpoint that cannot be read (or written over); the message names the file."""


# What config.json holds (models/schema.py). The same checks run when a checkpoint is saved
# (checkpoint.py), so whatever is written, `sample` reads.
SNAPSHOT_NOTES = {"iter": Int(0), "val_loss": Nullable(Number(0))}
ENTRY = Object({**SNAPSHOT_NOTES, "file": Str(max_length=100), "bytes": Int(0),
                "sha256": Str(length=64)})
# The latest snapshot's training state, which `--resume` reads (run.py): the random
# generator (numpy's PCG64 state), the optimizer's hyper-parameters, the last evaluation.
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
                   "save": Optional(Int(0), 0), "kind": Str(max_length=100),
                   "model_config": Object({}), "info": Object({}), "best": ENTRY,
                   "latest": ENTRY, "files": Optional(Array(Str(max_length=255)), [])})


# --- writing -----------------------------------------------------------------------------

def lock_directory(directory):
    """Create `directory` if needed and lock it for this process: returns the lock's file
    descriptor (close it to release), or None where POSIX locks do not exist (Windows).

    A second run into the same --out stops at its first write instead of mixing its files
    with ours. The lock (flock on the directory) lasts while any process holds the descriptor
    (forked children included) and goes when the last one closes it or exits, so a crash
    never leaves a stale one. Raises CheckpointError when another process holds it.
    """
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


def atomic_write(path, write):
    """Call write(file) on a temporary file next to `path`, then rename it onto `path`.

    os.replace is atomic on one filesystem, hence the temporary file in the same directory;
    fsync first, so that after a power cut the name never points at unwritten data.
    """
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=directory, prefix="." + os.path.basename(path) + ".",
                               suffix=".tmp")
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
        if os.path.exists(tmp):
            os.remove(tmp)
        raise


def sha256(path):
    """The SHA-256 of the file at `path`, as hex (config.json keeps one per snapshot)."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


# --- reading -----------------------------------------------------------------------------

def check_manifest(manifest, path):
    """`manifest` (config.json's value) checked against MANIFEST; CheckpointError naming
    `path` and the field otherwise. Also what a save checks before it writes."""
    if isinstance(manifest, dict) and manifest.get("format") == "microtensor-char-gpt":
        raise CheckpointError(f"{path} is a checkpoint of an older microtensor (model.npz, "
                              "format version 1, no training state); train it again")
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        found = manifest.get("format") if isinstance(manifest, dict) else json_type(manifest)
        raise CheckpointError(f"{path} is not a microtensor checkpoint (format {shown(found)}, "
                              f"expected {FORMAT!r})")
    if manifest.get("version") != VERSION or type(manifest.get("version")) is not int:
        raise CheckpointError(f"{path} is format version {shown(manifest.get('version'))}; "
                              f"this microtensor reads version {VERSION}")
    try:
        check(manifest, MANIFEST, path)
    except FileError as error:
        raise CheckpointError(str(error)) from None
    for which in ("best", "latest"):
        if not SNAPSHOT_FILE.fullmatch(manifest[which]["file"]):
            raise CheckpointError(f"{path}: {which}.file is {shown(manifest[which]['file'])}, "
                                  "not a snapshot of this directory (best.<n>.npz or "
                                  "latest.<n>.npz)")
    for name in manifest.get("files", []):
        if name != os.path.basename(name) or name in ("", ".", ".."):
            raise CheckpointError(f"{path}: files names {shown(name)}; expected the names of "
                                  "files in this directory")
    return manifest


def read_manifest(out_dir):
    """config.json of the checkpoint in out_dir, checked; None when out_dir holds none.

    Raises CheckpointError naming config.json when it is not JSON, not a microtensor
    checkpoint, of another version, or an entry is missing or of the wrong type or range.
    """
    path = os.path.join(os.fspath(out_dir), CONFIG_FILE)
    if not os.path.exists(path):
        return None
    try:
        manifest = read_json(path)
    except FileError as error:
        raise CheckpointError(str(error)) from None
    return check_manifest(manifest, path)


def require_manifest(out_dir):
    """read_manifest, but a missing directory or checkpoint is a FileNotFoundError saying so."""
    out_dir = os.fspath(out_dir)
    if os.path.isfile(out_dir):
        raise FileNotFoundError(f"{out_dir} is a file; give the checkpoint directory "
                                f"(the --out of `microtensor train`)")
    if not os.path.isdir(out_dir):
        raise FileNotFoundError(f"checkpoint directory {out_dir} does not exist "
                                "(train one with `microtensor train --out DIR`)")
    manifest = read_manifest(out_dir)
    if manifest is None:
        raise FileNotFoundError(f"no checkpoint in {out_dir} (no {CONFIG_FILE}); train one "
                                "with `microtensor train --out DIR`")
    return manifest


def _check_npz_members(path, size):
    """CheckpointError unless every member of the .npz is a stored (uncompressed) .npy whose
    bytes lie inside the file: what np.savez writes. So reading it never unpacks more than
    the file's own size (a compressed member could unpack a thousand times larger)."""
    with zipfile.ZipFile(path) as archive:
        for info in archive.infolist():
            if (info.compress_type != zipfile.ZIP_STORED or not info.filename.endswith(".npy")
                    or info.file_size > size):
                raise CheckpointError(f"{path}: member {info.filename!r} is not a stored .npy "
                                      "array as np.savez writes it")


def load_snapshot(out_dir, which, manifest):
    """({name: array}, path) of the "best" or "latest" snapshot that `manifest` names.

    Checks size and SHA-256 against config.json before reading, and never unpickles.
    """
    entry = manifest[which]
    path = os.path.join(os.fspath(out_dir), entry["file"])
    if not os.path.isfile(path):
        raise CheckpointError(f"{path} is missing ({CONFIG_FILE} names it as the {which} "
                              "snapshot)")
    size = os.path.getsize(path)
    if size != entry["bytes"]:
        raise CheckpointError(f"{path} is {size} bytes, {CONFIG_FILE} says {entry['bytes']}: "
                              "the file is truncated or was changed after saving")
    if sha256(path) != entry["sha256"]:
        raise CheckpointError(f"{path} does not match its SHA-256 in {CONFIG_FILE}: the file "
                              "is damaged or was changed after saving")
    try:
        _check_npz_members(path, size)
        with np.load(path, allow_pickle=False) as npz:
            arrays = {name: npz[name] for name in npz.files}
    except CheckpointError:
        raise
    except MemoryError:  # a header whose shape is far larger than the file
        raise CheckpointError(f"{path}: an array's header asks for more memory than there "
                              "is") from None
    except ValueError as error:
        if "allow_pickle" in str(error):
            raise CheckpointError(f"{path} holds an object array (a pickle), which is never "
                                  "loaded") from None
        raise CheckpointError(f"{path} is not a readable .npz file: {error}") from None
    except (OSError, EOFError, zipfile.BadZipFile) as error:
        raise CheckpointError(f"{path} is not a readable .npz file: {error}") from None
    return arrays, path
