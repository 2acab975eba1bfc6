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
import json
import os
import re
import tempfile
import zipfile

import numpy as np

try:
    import fcntl  # POSIX file locks, for lock_directory
except ImportError:  # Windows: runs into one --out are not kept apart
    fcntl = None

CONFIG_FILE = "config.json"
FORMAT = "microtensor-checkpoint"
VERSION = 2
SNAPSHOT_FILE = re.compile(r"(best|latest)\.\d+\.npz")  # the names of a directory's snapshots


class CheckpointError(ValueError):
    """A checkpoint that cannot be read (or written over); the message names the file."""


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

def read_manifest(out_dir):
    """config.json of the checkpoint in out_dir, checked; None when out_dir holds none.

    Raises CheckpointError naming config.json when it is not JSON, not a microtensor
    checkpoint, of another version, or lacks an entry.
    """
    path = os.path.join(os.fspath(out_dir), CONFIG_FILE)
    if not os.path.exists(path):
        return None
    try:
        with open(path, encoding="utf-8") as f:
            manifest = json.load(f)
    except UnicodeDecodeError:
        raise CheckpointError(f"{path} is not UTF-8 text") from None
    except json.JSONDecodeError as error:
        raise CheckpointError(f"{path} is not JSON ({error})") from None
    except OSError as error:  # e.g. a directory of that name
        raise CheckpointError(f"{path} cannot be read ({error.strerror})") from None
    if isinstance(manifest, dict) and manifest.get("format") == "microtensor-char-gpt":
        raise CheckpointError(f"{path} is a checkpoint of an older microtensor (model.npz, "
                              "format version 1, no training state); train it again")
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        found = manifest.get("format") if isinstance(manifest, dict) else type(manifest).__name__
        raise CheckpointError(f"{path} is not a microtensor checkpoint (format {found!r}, "
                              f"expected {FORMAT!r})")
    if manifest.get("version") != VERSION:
        raise CheckpointError(f"{path} is format version {manifest.get('version')!r}; this "
                              f"microtensor reads version {VERSION}")
    for key in ("kind", "model_config", "info", "best", "latest"):
        if key not in manifest:
            raise CheckpointError(f"{path} lacks the entry {key!r}")
    for which in ("best", "latest"):
        entry = manifest[which]
        if not isinstance(entry, dict) or not {"iter", "val_loss", "file", "bytes",
                                               "sha256"} <= set(entry):
            raise CheckpointError(f"{path}: entry {which!r} needs iter, val_loss, file, bytes "
                                  "and sha256")
        iter_, loss = entry["iter"], entry["val_loss"]  # bool is an int to isinstance
        if (type(iter_) is not int or iter_ < 0 or isinstance(loss, bool)
                or not isinstance(loss, (int, float, type(None)))):
            raise CheckpointError(f"{path}: {which} has iter {iter_!r} and val_loss "
                                  f"{loss!r}; expected an int >= 0 and a number")
        if not SNAPSHOT_FILE.fullmatch(str(entry["file"])):
            raise CheckpointError(f"{path}: {which} names the file {entry['file']!r}, not a "
                                  "snapshot of this directory")
    files, save = manifest.get("files", []), manifest.get("save", 0)
    if not isinstance(files, list) or not all(
            isinstance(n, str) and n == os.path.basename(n) and n not in ("", ".", "..")
            for n in files):
        raise CheckpointError(f"{path}: files is {files!r}; expected a list of names of files "
                              "in this directory")
    if type(save) is not int or save < 0:
        raise CheckpointError(f"{path}: save is {save!r}; expected an int >= 0")
    return manifest


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
        with np.load(path, allow_pickle=False) as npz:
            arrays = {name: npz[name] for name in npz.files}
    except ValueError as error:
        if "allow_pickle" in str(error):
            raise CheckpointError(f"{path} holds an object array (a pickle), which is never "
                                  "loaded") from None
        raise CheckpointError(f"{path} is not a readable .npz file: {error}") from None
    except (OSError, EOFError, zipfile.BadZipFile) as error:
        raise CheckpointError(f"{path} is not a readable .npz file: {error}") from None
    return arrays, path
