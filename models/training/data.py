"""Training text for the character-level GPT: the corpus's ids (a text file's prepared once
by prepare.py, or the built-in corpus's), the 90/10 split, random batches.

References: Karpathy, nanoGPT `data/shakespeare_char/prepare.py` and `train.py`'s `get_batch`
(the same recipe: one long id array, random windows of block_size + 1).
"""
import hashlib
import os

import numpy as np

import microtensor

from .prepare import CACHE_SUFFIX, CHUNK_SIZE, IdFile, encode_text, read_ids, source_key, write_ids

DEFAULT_CORPUS_NAME = "CPython's pydoc help topics"
VAL_FRACTION = 0.1


def default_corpus():
    """The built-in corpus: CPython's English help-topic pages (what `help("assert")` shows),
    joined in sorted topic order: about 465k characters of technical English and code that ship
    with every CPython in `pydoc_data.topics`, so training needs no download. The exact text
    depends on the Python version; checkpoints store their own vocabulary. Raises RuntimeError
    if this Python was built without `pydoc_data`.
    """
    try:
        from pydoc_data.topics import topics
    except ImportError:
        raise RuntimeError("the built-in corpus needs the standard-library module "
                           "pydoc_data, which this Python lacks; pass --data PATH "
                           "with a UTF-8 text file instead") from None
    return "".join(topics[key] for key in sorted(topics))


def cache_paths(path, cache_dir=None):
    """[beside the text, in cache_dir]: where the id file of the text at `path` may be.

    Beside the text first, as nanoGPT keeps train.bin beside input.txt: the ids move and are
    deleted with it. cache_dir (default $XDG_CACHE_HOME/microtensor, by default
    ~/.cache/microtensor) is the fallback for a read-only directory; there the name carries a
    hash of the text's absolute path.
    """
    absolute = os.path.abspath(path)
    tag = hashlib.blake2b(absolute.encode("utf-8", "surrogateescape"), digest_size=8).hexdigest()
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    fallback = f"{os.path.basename(absolute)}-{tag}{CACHE_SUFFIX}"
    return [absolute + CACHE_SUFFIX,
            os.path.join(cache_dir or os.path.join(base, "microtensor"), fallback)]


# --- what training reads -----------------------------------------------------------------------

def load_corpus(path=None, cache_dir=None, chunk_size=CHUNK_SIZE):
    """(tokenizer, ids) for the UTF-8 text file at `path`, or the built-in corpus if None.

    ids [N] are the character ids of the whole text (uint8 for <= 256 characters, else
    uint16), equal to CharTokenizer.from_text(text)'s encode(text): for the built-in corpus a
    numpy array; for a file an IdFile, so memory holds only the windows of each batch whatever
    the corpus's size. The first call on a file prepares the ids (write_ids) beside it, or in
    cache_dir when its directory is not writable (cache_paths); later calls reuse them while
    the file's source_key is unchanged. chunk_size: bytes of text decoded at a time.

    Raises FileNotFoundError, IsADirectoryError, ValueError (empty, not UTF-8, more than
    65536 distinct characters), each naming the file; OSError if no place is writable.
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
    key, places = source_key(path), cache_paths(path, cache_dir)
    for place in places:
        found = read_ids(place, key)
        if found is not None:
            return found
    failures = []
    for place in places:
        try:
            return write_ids(path, place, key, chunk_size)
        except OSError as error:
            failures.append(f"{place!r} ({error.strerror or error})")
    raise OSError(f"cannot store the prepared ids of data file {path!r}: " + "; ".join(failures))


def split_ids(ids, block_size, source="the text"):
    """(train, val): the first 90% and the last 10% of the ids [N] (a numpy array of any
    integer dtype or an IdFile: the splits are views, nothing is copied).

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
    """A random batch of windows from ids [N] (a numpy array of any integer dtype or an
    IdFile): x, y int64 numpy arrays [B, T]; y is x shifted left by one (y[b, t] is the token
    that follows x[b, t]), both from one window of T + 1 ids. Offsets are drawn from
    `generator`, by default microtensor's package generator, so `manual_seed` repeats them.
    Raises ValueError if ids is shorter than block_size + 1.
    """
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
