"""Training text for the character-level GPT: load a file (or the built-in corpus), split 90/10, draw random batches.

References: Karpathy, nanoGPT `data/shakespeare_char/prepare.py` and `train.py`'s
`get_batch` (the same recipe: one long id array, random windows of block_size + 1).
"""
import os

import numpy as np

import microtensor

DEFAULT_CORPUS_NAME = "CPython's pydoc help topics"
VAL_FRACTION = 0.1


def default_corpus():
    """The built-in corpus: CPython's English help-topic pages, joined in sorted topic order.

    They ship with every CPython in `pydoc_data.topics` (what `help("assert")` shows), so
    training needs no download: about 465k characters of technical English and code.
    The exact text depends on the Python version; checkpoints store their own vocabulary.
    Raises RuntimeError if this Python was built without `pydoc_data`.
    """
    try:
        from pydoc_data.topics import topics
    except ImportError:
        raise RuntimeError("the built-in corpus needs the standard-library module "
                           "pydoc_data, which this Python lacks; pass --data PATH "
                           "with a UTF-8 text file instead") from None
    return "".join(topics[key] for key in sorted(topics))


def load_text(path):
    """The contents of the UTF-8 text file at `path` as a str.

    Raises FileNotFoundError (missing), IsADirectoryError, or ValueError (empty, not
    UTF-8), each naming the file.
    """
    path = os.fspath(path)
    if not os.path.exists(path):
        raise FileNotFoundError(f"data file {path!r} does not exist")
    if os.path.isdir(path):
        raise IsADirectoryError(f"data path {path!r} is a directory; give a text file")
    with open(path, "rb") as f:
        raw = f.read()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        raise ValueError(f"data file {path!r} is not UTF-8 text: byte 0x{raw[error.start]:02x} "
                         f"at offset {error.start} cannot be decoded") from None
    if not text:
        raise ValueError(f"data file {path!r} is empty")
    return text


def split_ids(ids, block_size, source="the text"):
    """(train, val): the first 90% and the last 10% of the int64 id array `ids` [N].

    Every split must hold at least one example, block_size + 1 tokens (input and the
    shifted target). Raises ValueError naming `source`, its length and what it needs.
    """
    n, need = len(ids), block_size + 1
    if n < need:
        raise ValueError(f"{source} has {n} characters, shorter than block_size + 1 = {need}; "
                         "use a longer text or a smaller --block-size")
    n_train = int(n * (1 - VAL_FRACTION))
    train, val = ids[:n_train], ids[n_train:]
    if len(val) < need:
        minimum = int(np.ceil(need / VAL_FRACTION))
        raise ValueError(f"{source} has {n} characters; its 10% validation split holds "
                         f"{len(val)}, fewer than block_size + 1 = {need}: use a text of at "
                         f"least {minimum} characters or a smaller --block-size")
    return train, val


def get_batch(ids, batch_size, block_size, generator=None):
    """A random batch of windows from ids [N] (int): x, y int64 numpy arrays [B, T].

    y is x shifted left by one: y[b, t] is the token that follows x[b, t]. Offsets are
    drawn from `generator`, by default microtensor's package generator, so
    `manual_seed` repeats them. Raises ValueError if ids is shorter than block_size + 1.
    """
    if len(ids) < block_size + 1:
        raise ValueError(f"get_batch: {len(ids)} tokens cannot fill a window of "
                         f"block_size + 1 = {block_size + 1}")
    generator = generator or microtensor.random.generator()
    starts = generator.integers(0, len(ids) - block_size, size=batch_size)
    window = starts[:, None] + np.arange(block_size)        # [B, T] indices into ids
    ids = np.asarray(ids)
    x = ids[window].astype(np.int64)                        # [B, T]
    y = ids[window + 1].astype(np.int64)                    # [B, T]
    return x, y
