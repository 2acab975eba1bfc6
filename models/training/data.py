"""Training text for the character-level GPT: a UTF-8 file's ids (from its id file, id_file.py)
or the built-in corpus's, the 90/10 split, and random batches.

References: Karpathy, nanoGPT `data/shakespeare_char/prepare.py` and `train.py`'s `get_batch`
(random windows of block_size + 1); course notes 3.7 (y is x shifted: every position trains).
"""
import hashlib
import os

import numpy as np

import microtensor

from .id_file import CHUNK_SIZE, IdFile, encode_text, load_ids

DEFAULT_CORPUS_NAME = "CPython's pydoc help topics"
VAL_FRACTION = 0.1


def default_corpus():
    """The built-in corpus: CPython's English help-topic pages (what `help("assert")` shows),
    joined in sorted topic order, ~465k characters that ship with CPython in
    `pydoc_data.topics` (the text varies with the Python version). Raises RuntimeError if
    this Python was built without pydoc_data."""
    try:
        from pydoc_data.topics import topics
    except ImportError:
        raise RuntimeError("the built-in corpus needs the standard-library module "
                           "pydoc_data, which this Python lacks; pass --data PATH "
                           "with a UTF-8 text file instead") from None
    return "".join(topics[key] for key in sorted(topics))


def load_corpus(path=None, cache_dir=None, chunk_size=CHUNK_SIZE):
    """(tokenizer, ids [N]) of the UTF-8 text file at `path`, or of the built-in corpus if None
    (a numpy array). A file's ids are an IdFile of its id file (id_file.load_ids); the ids are
    CharTokenizer.from_text(text)'s encode(text), uint8 for <= 256 characters, else uint16.

    Raises FileNotFoundError, IsADirectoryError, ValueError (empty), each naming the file, and
    what load_ids raises (not UTF-8, > 65536 characters, no writable place, a changing text).
    """
    if path is None:
        return encode_text(default_corpus(), DEFAULT_CORPUS_NAME)
    path = os.fspath(path)
    if not os.path.exists(path):
        raise FileNotFoundError(f"data file {path!r} does not exist")
    if os.path.isdir(path):
        raise IsADirectoryError(f"data path {path!r} is a directory; give a text file")
    if os.path.getsize(path) == 0:
        raise ValueError(f"data file {path!r} is empty")
    return load_ids(path, cache_dir, chunk_size)


def split_ids(ids, block_size, source="the text", unit="characters"):
    """(train, val): the first 90% and the last 10% of the ids [N] (views, nothing copied).
    Each must hold an example, block_size + 1 ids: ValueError naming `source` otherwise,
    counting the ids in `unit` (the tokenizer's: characters or tokens)."""
    n, need = len(ids), block_size + 1
    if n < need:
        raise ValueError(f"{source} has {n} {unit}, shorter than block_size + 1 = {need}; "
                         "use a longer text or a smaller --block-size")
    n_train = int(n * (1 - VAL_FRACTION))
    if n - n_train < need:
        raise ValueError(f"{source} has {n} {unit}; its 10% validation split holds "
                         f"{n - n_train}, fewer than block_size + 1 = {need}: use a text of at "
                         f"least {int(np.ceil(need / VAL_FRACTION))} {unit} or a smaller "
                         "--block-size")
    return ids[:n_train], ids[n_train:]


def get_batch(ids, batch_size, block_size, generator=None):
    """A random batch of windows of ids [N] (an integer array or an IdFile): x, y int64 [B, T],
    y[b, t] the id after x[b, t]. Offsets come from `generator`, by default microtensor's (so
    manual_seed repeats them). ValueError if ids is shorter than block_size + 1."""
    if len(ids) < block_size + 1:
        raise ValueError(f"get_batch: {len(ids)} tokens cannot fill a window of "
                         f"block_size + 1 = {block_size + 1}")
    generator = generator or microtensor.random.generator()
    starts = generator.integers(0, len(ids) - block_size, size=batch_size)
    if isinstance(ids, IdFile):
        windows = ids.windows(starts, block_size + 1)       # [B, T + 1]
    else:
        windows = np.asarray(ids)[starts[:, None] + np.arange(block_size + 1)]
    return windows[:, :-1].astype(np.int64), windows[:, 1:].astype(np.int64)  # [B, T] each


def corpus_sha256(tokenizer, ids):
    """A fingerprint of the corpus as the model sees it: its vocabulary and every id."""
    digest = hashlib.sha256(tokenizer.fingerprint().encode("utf-8"))
    for start in range(0, len(ids), 1 << 20):  # a million ids at a time: never the whole file
        digest.update(np.ascontiguousarray(ids[start:start + (1 << 20)]))
    return digest.hexdigest()


def describe_data(run, tokenizer, ids, source, data_path):
    """The checkpoint's record of the training text {"source", "path", "sha256", unit: count};
    ValueError when `run` resumes a checkpoint trained on other text (its sha256 differs)."""
    data = {"source": source, "path": data_path, "sha256": corpus_sha256(tokenizer, ids),
            tokenizer.unit: len(ids)}                                  # "characters" or "tokens"
    if run.resuming and run.manifest["info"]["data"].get("sha256") != data["sha256"]:
        trained_on = run.manifest["info"]["data"]["source"]
        what = (f"{source} has changed since the checkpoint in {run.out_dir} was trained on it"
                if trained_on == source else f"{source} is not the text the checkpoint in "
                f"{run.out_dir} was trained on ({trained_on})")
        raise ValueError(f"{what}; a resumed run needs the same data (--data)")
    return data
