"""Saving and loading a trained GPT: weights in `model.npz`, config + vocabulary + training notes in `config.json`.

Each file is written atomically (a temporary file in the same directory, then
`os.replace`), so an interrupted save leaves the previous checkpoint intact, never a
half-written one. Weights are loaded with `allow_pickle=False`: a checkpoint holds only
plain arrays and JSON, so opening one cannot run code.
"""
import json
import os
import tempfile

import numpy as np

from .gpt import GPT, GPTConfig
from .tokenizer import CharTokenizer

WEIGHTS_FILE = "model.npz"
CONFIG_FILE = "config.json"
FORMAT = "microtensor-char-gpt"
VERSION = 1


def _umask():
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _atomic_write(path, write):
    """Call write(file) on a temporary file next to `path`, then rename it onto `path`.

    os.replace is atomic on one filesystem, hence the temporary file in the same directory.
    """
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=directory, prefix="." + os.path.basename(path) + ".",
                               suffix=".tmp")
    try:
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes it private; give it a normal file's mode
        with os.fdopen(fd, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:  # KeyboardInterrupt included: never leave the temporary behind
        if os.path.exists(tmp):
            os.remove(tmp)
        raise


def save_checkpoint(out_dir, model, tokenizer, train_state=None):
    """Write `model` (its state_dict), its config, the tokenizer's vocabulary and `train_state` into out_dir.

    train_state: a JSON-serialisable dict of training notes (e.g. iter, best_val_loss).
    Creates out_dir if needed. The weights go first, so config.json, written last,
    always describes weights that are complete.
    """
    os.makedirs(out_dir, exist_ok=True)
    state = model.state_dict()
    _atomic_write(os.path.join(out_dir, WEIGHTS_FILE), lambda f: np.savez(f, **state))
    meta = {"format": FORMAT, "version": VERSION, "model_config": model.config.to_dict(),
            "vocab": tokenizer.chars, "train": train_state or {}}
    text = json.dumps(meta, indent=2, ensure_ascii=False) + "\n"
    _atomic_write(os.path.join(out_dir, CONFIG_FILE), lambda f: f.write(text.encode("utf-8")))


def load_checkpoint(out_dir):
    """(model, tokenizer, train_state) from a directory written by `save_checkpoint`.

    The model is returned in eval mode. Raises FileNotFoundError for a missing
    directory or file, and ValueError for a file that is not a readable checkpoint,
    each naming the path.
    """
    out_dir = os.fspath(out_dir)
    if os.path.isfile(out_dir):
        raise FileNotFoundError(f"{out_dir!r} is a file; give the checkpoint directory that "
                                f"holds {WEIGHTS_FILE} and {CONFIG_FILE}")
    if not os.path.isdir(out_dir):
        raise FileNotFoundError(f"checkpoint directory {out_dir!r} does not exist "
                                "(train one with `microtensor train --out DIR`)")
    weights_path = os.path.join(out_dir, WEIGHTS_FILE)
    config_path = os.path.join(out_dir, CONFIG_FILE)
    if not os.path.exists(config_path) and not os.path.exists(weights_path):
        raise FileNotFoundError(f"no checkpoint in {out_dir!r} (no {CONFIG_FILE} or "
                                f"{WEIGHTS_FILE}); train one with `microtensor train --out DIR`")
    for path in (config_path, weights_path):
        if not os.path.isfile(path):
            raise FileNotFoundError(f"incomplete checkpoint in {out_dir!r}: "
                                    f"{os.path.basename(path)} is missing")
    try:
        with open(config_path, encoding="utf-8") as f:
            meta = json.load(f)
        if meta.get("format") != FORMAT:
            raise ValueError(f"format is {meta.get('format')!r}, expected {FORMAT!r}")
        config = GPTConfig.from_dict(meta["model_config"])
        tokenizer = CharTokenizer(meta["vocab"])
    except (ValueError, KeyError, TypeError, AttributeError) as error:
        raise ValueError(f"{config_path!r} is not a valid checkpoint config: {error}") from None
    if tokenizer.vocab_size != config.vocab_size:
        raise ValueError(f"{config_path!r}: vocabulary has {tokenizer.vocab_size} characters "
                         f"but model_config.vocab_size is {config.vocab_size}")
    try:
        with np.load(weights_path, allow_pickle=False) as npz:
            state = {name: npz[name] for name in npz.files}
    except (OSError, ValueError) as error:
        raise ValueError(f"{weights_path!r} is not a readable .npz file: {error}") from None
    model = GPT(config)
    try:
        model.load_state_dict(state)
    except (KeyError, ValueError) as error:
        raise ValueError(f"{weights_path!r} does not match {CONFIG_FILE}: "
                         f"{error.args[0]}") from None
    model.eval()
    return model, tokenizer, meta.get("train", {})
