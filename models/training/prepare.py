"""Prepare a UTF-8 text file once into a file of character ids, and read its ids back.

The id file, `<text file>.microtensor-ids`, is
    MAGIC | header length (8 bytes, little-endian) | JSON header, space-padded | ids [N]
whose header holds the format version, what the text file looked like when it was prepared
(`source_key`), the vocabulary, the dtype and N; the ids start at a multiple of 64.

References: Karpathy, nanoGPT `data/shakespeare_char/prepare.py` (a character-level corpus's
ids written once as uint16 to train.bin); RFC 3629 (UTF-8).
"""
import codecs
import hashlib
import json
import os
import warnings
import weakref

import numpy as np

from ..tokenizer import CharTokenizer
from .checkpoint import atomic_write

CHUNK_SIZE = 1 << 20          # bytes decoded per step: ~20 MB of work arrays at any corpus size
SAMPLE_SIZE = 1 << 20         # bytes hashed at each end of the text by source_key
CACHE_SUFFIX = ".microtensor-ids"
MAGIC = b"microtensor ids\n"
FORMAT_VERSION = 1
N_CODE_POINTS = 0x110000      # Unicode code points are 0 .. 0x10FFFF


# --- the vocabulary and the ids --------------------------------------------------------------

def code_points(text):
    """The Unicode code points of the str `text`: uint32 numpy array [len(text)]."""
    return np.frombuffer(text.encode("utf-32-le"), dtype="<u4")


def ids_dtype(vocab_size, source="the text"):
    """uint8 for a vocabulary of <= 256 characters, else uint16 (as nanoGPT's), so a stored
    corpus costs 1 or 2 bytes a character. Raises ValueError naming `source` for more than
    65536 characters, which uint16 cannot number."""
    if vocab_size > 1 << 16:
        raise ValueError(f"{source} has {vocab_size} distinct characters; a character-level "
                         "vocabulary holds at most 65536 (uint16 ids)")
    return np.dtype("<u1" if vocab_size <= 1 << 8 else "<u2")


def id_table(vocab, source="the text"):
    """(chars, table) for the sorted code points `vocab` [V]: table[code point] is its id, of
    ids_dtype(V); `table.take(points)` encodes code points."""
    table = np.zeros(N_CODE_POINTS, dtype=ids_dtype(len(vocab), source))
    table[vocab] = np.arange(len(vocab))
    return [chr(c) for c in vocab], table


def encode_text(text, source="the text"):
    """(CharTokenizer.from_text(text), its ids of `text`: uint8 or uint16 numpy array [N]): the
    same vocabulary and ids as CharTokenizer's encode, computed with numpy."""
    points = code_points(text)
    seen = np.zeros(N_CODE_POINTS, dtype=bool)
    seen[points] = True
    chars, table = id_table(np.flatnonzero(seen), source)
    return CharTokenizer(chars), table.take(points)


def read_text_chunks(path, chunk_size=CHUNK_SIZE):
    """The text of the UTF-8 file at `path` in str pieces of about chunk_size bytes; a character
    cut by a read waits for the next (codecs' incremental decoder).

    Raises ValueError naming the file, the byte and its offset for bytes that are not UTF-8.
    """
    decoder, offset = codecs.getincrementaldecoder("utf-8")(), 0
    with open(path, "rb") as f:
        while True:
            block = f.read(chunk_size)
            pending = decoder.getstate()[0]   # the start of a character cut by the last read
            try:
                text = decoder.decode(block, final=not block)
            except UnicodeDecodeError as error:  # error.start counts from pending's first byte
                raise ValueError(f"data file {path!r} is not UTF-8 text: byte "
                                 f"0x{error.object[error.start]:02x} at offset "
                                 f"{offset - len(pending) + error.start} cannot be decoded"
                                 ) from None
            yield text
            if not block:
                return
            offset += len(block)


# --- the id file -------------------------------------------------------------------------------

def source_key(path):
    """What identifies the text at `path`: its size, mtime (ns) and a hash of its ends.

    Every ordinary change (an edit, an append, a copy over it) moves the size or the mtime;
    the blake2b hash of the first and last SAMPLE_SIZE bytes also catches a file replaced by
    one of the same size whose mtime was kept (cp -p, rsync, touch -r), without reading every
    byte of a large corpus at each start.
    """
    stat = os.stat(path)
    digest = hashlib.blake2b(digest_size=16)
    with open(path, "rb") as f:
        digest.update(f.read(SAMPLE_SIZE))
        if stat.st_size > SAMPLE_SIZE:
            f.seek(max(SAMPLE_SIZE, stat.st_size - SAMPLE_SIZE))
            digest.update(f.read(SAMPLE_SIZE))
    return {"size": stat.st_size, "mtime_ns": stat.st_mtime_ns, "blake2b": digest.hexdigest()}


class IdFile:
    """The ids [N] of an id file, read from it window by window when asked for.

    Why not np.memmap: a long-lived map keeps every page it touches in the process's RSS
    (random windows soon touch them all: 2.0 bytes a character for uint16 ids), and one map
    per batch as nanoGPT does costs ~9x the time of a seek and a read per window, with ~10x
    the peak RSS (`python benchmarks/data_speed.py --sizes 50 --wide` on this class and on one
    that maps per batch, 2-core AMD EPYC: 1.1 ms against 0.12 ms a batch, 0.26 against 0.02
    bytes a character). Reading each window into a small array keeps the corpus in the OS
    page cache, shared and reclaimable. Only the training process reads batches
    (data-parallel workers get their rows from it), so nothing else moves the file's offset
    between a seek and its read.

    len(ids) is N and ids.dtype uint8 or uint16; ids[a:b] is an IdFile of those ids (a view,
    nothing is read); ids.windows(starts, size) reads the windows of a batch; np.asarray(ids)
    reads all N ids. The file (opened unbuffered) stays open, the same file even if it is
    prepared again meanwhile, until the IdFile and its slices (`base`: the whole) are gone.
    """

    def __init__(self, file, dtype, offset, length, base=None):
        self._file, self.dtype, self._offset, self._length = file, np.dtype(dtype), offset, length
        self._base = base                     # a slice keeps alive the IdFile that closes the file
        if base is None:
            weakref.finalize(self, file.close)

    def __len__(self):
        return self._length

    def __repr__(self):
        return f"IdFile({self._file.name!r}, {self._length} ids of {self.dtype.name})"

    def __getitem__(self, key):
        """ids[a:b], an IdFile of those ids. Raises TypeError for an index that is not a slice,
        ValueError for a step other than 1."""
        if not isinstance(key, slice):
            raise TypeError(f"an IdFile is indexed by slices ids[a:b]; got {key!r} "
                            "(np.asarray(ids) reads all its ids into an array)")
        start, stop, step = key.indices(self._length)
        if step != 1:
            raise ValueError(f"an IdFile is sliced with step 1; got step {step}")
        return IdFile(self._file, self.dtype, self._offset + start * self.dtype.itemsize,
                      max(stop - start, 0), self if self._base is None else self._base)

    def windows(self, starts, size):
        """ids[s : s + size] for each s of `starts` (ints [B]): numpy array [B, size] of ids.dtype.

        Raises IndexError for a window that leaves the ids, OSError if the file ends early
        (it was truncated while open).
        """
        out = np.empty((len(starts), size), dtype=self.dtype)
        for row, start in zip(out, np.asarray(starts).tolist()):
            if not 0 <= start <= self._length - size:
                raise IndexError(f"the window of {size} ids at {start} leaves the "
                                 f"{self._length} ids of {self!r}")
            self._read_into(row, start)
        return out

    def __array__(self, dtype=None, copy=None):
        if copy is False:
            raise ValueError(f"{self!r} is on disk: an array of its ids is always a copy")
        out = np.empty(self._length, dtype=self.dtype)
        self._read_into(out, 0)
        return out if dtype is None else out.astype(dtype, copy=False)

    def _read_into(self, out, start):
        """Fill the contiguous array `out` with the ids from index `start` on."""
        self._file.seek(self._offset + start * self.dtype.itemsize)
        done = 0
        while done < out.nbytes:              # one read returns at most ~2 GB (Linux)
            count = self._file.readinto(memoryview(out).cast("B")[done:])
            if not count:
                raise OSError(f"the id file {self._file.name!r} ends early: it was truncated "
                              "while in use")
            done += count


def read_ids(cache_path, key):
    """(tokenizer, ids) from the id file at cache_path, ids an IdFile [N] of uint8/uint16.

    None when there is no such file, or it was prepared from another version of the text
    (its source key differs from `key`) or in another format; None with a warning when it is
    corrupt or cannot be read: it is never trusted. The file checked is the file read.
    """
    try:
        file = open(cache_path, "rb", buffering=0)
    except FileNotFoundError:
        return None
    except OSError as error:
        warnings.warn(f"cannot read the id file {cache_path!r} ({error.strerror}); preparing "
                      "it again", stacklevel=3)
        return None
    try:
        magic, header_size = file.read(len(MAGIC)), int.from_bytes(file.read(8), "little")
        if magic != MAGIC:
            raise ValueError("it does not start with the id file's magic bytes")
        meta = json.loads(file.read(min(header_size, 1 << 24)))
        if meta.get("version") != FORMAT_VERSION or meta.get("source") != key:
            file.close()
            return None                       # another format or another text: stale
        chars, length = list(meta["chars"]), meta["length"]
        dtype = ids_dtype(len(chars))
        offset = len(MAGIC) + 8 + header_size
        if chars != sorted(chars) or meta["dtype"] != dtype.str:
            raise ValueError("its vocabulary is unsorted or its dtype does not fit it")
        if not isinstance(length, int) or length < 1:
            raise ValueError(f"its length {length!r} is not a positive number of ids")
        if os.fstat(file.fileno()).st_size != offset + length * dtype.itemsize:
            raise ValueError(f"it holds {os.fstat(file.fileno()).st_size} bytes, not {length} "
                             "ids after the header")
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as error:
        file.close()
        warnings.warn(f"the id file {cache_path!r} is corrupt ({error}); preparing it again",
                      stacklevel=3)
        return None
    return CharTokenizer(chars), IdFile(file, dtype, offset, length)


def write_ids(path, cache_path, key, chunk_size=CHUNK_SIZE):
    """Encode the text file at `path` into the id file cache_path, atomically; (tokenizer, ids).

    Two passes over the text in chunks, so memory stays ~20 MB whatever its size: the first
    collects the vocabulary (every code point seen), the second looks each code point's id
    up in a table and appends the ids, to a temporary file renamed into place (atomic_write:
    a reader never sees half of it; fsync'd first, so after a crash the name never holds a
    file of the right size whose ids were not yet written). Raises ValueError (not UTF-8,
    > 65536 characters) naming the file, OSError if the directory is not writable,
    RuntimeError if the text changes while being read.
    """
    seen, length = np.zeros(N_CODE_POINTS, dtype=bool), 0
    for text in read_text_chunks(path, chunk_size):
        points = code_points(text)
        seen[points] = True
        length += len(points)
    chars, table = id_table(np.flatnonzero(seen), f"data file {path!r}")
    meta = json.dumps({"version": FORMAT_VERSION, "source": key, "chars": "".join(chars),
                       "dtype": table.dtype.str, "length": length}).encode("ascii")
    padding = b" " * (-(len(MAGIC) + 8 + len(meta)) % 64)
    os.makedirs(os.path.dirname(os.path.abspath(cache_path)), exist_ok=True)

    def write(f):
        f.write(MAGIC + (len(meta) + len(padding)).to_bytes(8, "little") + meta + padding)
        for text in read_text_chunks(path, chunk_size):
            f.write(table.take(code_points(text)))
        if source_key(path) != key:
            raise RuntimeError(f"data file {path!r} changed while its ids were being prepared; "
                               "run again once it is complete")

    atomic_write(cache_path, write)
    return read_ids(cache_path, key)
