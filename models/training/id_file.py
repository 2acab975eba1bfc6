"""The id file of a training text: its characters' ids, prepared once beside it or in a cache,
reused while the text is unchanged, read window by window. MAGIC | header size (8 bytes,
little-endian) | JSON header | ids [N].

References: Karpathy, nanoGPT `data/shakespeare_char/prepare.py` (one long uint16 id array
written once); RFC 3629 (UTF-8).
"""
import codecs
import hashlib
import json
import os
import warnings
import weakref

import numpy as np

from ..tokenizer import CharTokenizer
from .out_dir import atomic_write

CHUNK_SIZE = 1 << 20          # bytes of text decoded at a time: ~20 MB of work arrays
SAMPLE_SIZE = 1 << 20         # bytes hashed at each end of the text by source_key
CACHE_SUFFIX = ".microtensor-ids"
MAGIC, FORMAT_VERSION = b"microtensor ids\n", 1
N_CODE_POINTS = 0x110000      # Unicode code points are 0 .. 0x10FFFF


# --- characters to ids -------------------------------------------------------------------------

def code_points(text):
    """The Unicode code points of the str `text`: uint32 numpy array [len(text)]."""
    return np.frombuffer(text.encode("utf-32-le"), dtype="<u4")


def ids_dtype(vocab_size, source="the text"):
    """uint8 for <= 256 characters, else uint16 (as nanoGPT's); ValueError naming `source` for
    more than 65536, which uint16 cannot number."""
    if vocab_size > 1 << 16:
        raise ValueError(f"{source} has {vocab_size} distinct characters; a character-level "
                         "vocabulary holds at most 65536 (uint16 ids)")
    return np.dtype("<u1" if vocab_size <= 1 << 8 else "<u2")


def id_table(seen, source="the text"):
    """(chars, table) for the code points marked in the bool array `seen` [N_CODE_POINTS]:
    table[code point] is its id in the sorted vocabulary `chars`, of ids_dtype."""
    vocab = np.flatnonzero(seen)
    table = np.zeros(N_CODE_POINTS, dtype=ids_dtype(len(vocab), source))
    table[vocab] = np.arange(len(vocab))
    return [chr(c) for c in vocab], table


def encode_text(text, source="the text"):
    """(CharTokenizer.from_text(text), its ids of `text`: uint8 or uint16 numpy array [N])."""
    points, seen = code_points(text), np.zeros(N_CODE_POINTS, dtype=bool)
    seen[points] = True
    chars, table = id_table(seen, source)
    return CharTokenizer(chars), table.take(points)


def read_text_chunks(path, chunk_size=CHUNK_SIZE):
    """The text of the UTF-8 file at `path` in str pieces of about chunk_size bytes (a character
    cut by a read waits for the next). Raises ValueError naming the file, the byte and its
    offset for bytes that are not UTF-8."""
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


def read_text(path):
    """The whole text of the UTF-8 file at `path`, exactly the characters training reads from it
    (read_text_chunks: bytes decoded as they are, so CRLF, a lone CR, a BOM and NUL are kept; no
    newline translation). Every file written from a corpus reads it here. ValueError as
    read_text_chunks."""
    return "".join(read_text_chunks(path))


# --- the id file -------------------------------------------------------------------------------

def source_key(path):
    """What identifies the text at `path`: its size, mtime (ns), and a blake2b hash of its first
    and last SAMPLE_SIZE bytes, which catches a same-size file copied over it with its mtime
    kept (cp -p), without reading all of a large corpus at each start."""
    stat, digest = os.stat(path), hashlib.blake2b(digest_size=16)
    with open(path, "rb") as f:
        digest.update(f.read(SAMPLE_SIZE))
        if stat.st_size > SAMPLE_SIZE:
            f.seek(max(SAMPLE_SIZE, stat.st_size - SAMPLE_SIZE))
            digest.update(f.read(SAMPLE_SIZE))
    return {"size": stat.st_size, "mtime_ns": stat.st_mtime_ns, "blake2b": digest.hexdigest()}


def cache_paths(path, cache_dir=None):
    """[beside the text, in cache_dir]: where the id file of the text at `path` may be. Beside
    it first, as nanoGPT's train.bin beside input.txt; cache_dir (default
    $XDG_CACHE_HOME/microtensor, or ~/.cache/microtensor) is for a read-only directory, the
    name there carrying a hash of the text's absolute path."""
    absolute = os.path.abspath(path)
    tag = hashlib.blake2b(absolute.encode("utf-8", "surrogateescape"), digest_size=8).hexdigest()
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    fallback = f"{os.path.basename(absolute)}-{tag}{CACHE_SUFFIX}"
    return [absolute + CACHE_SUFFIX,
            os.path.join(cache_dir or os.path.join(base, "microtensor"), fallback)]


class IdFile:
    """The ids [N] of an id file, read window by window: len(ids), ids.dtype (uint8 or uint16),
    ids[a:b] (an IdFile: a view, nothing read), ids.windows(starts, size), np.asarray(ids).

    Not np.memmap, as measured (`python benchmarks/id_file_vs_memmap.py`, 2-core AMD EPYC, 50
    MB of uint8 ids): a long-lived map's RSS grew by the whole file (17 us a batch) and a map
    per batch cost 105 us, against 43 us and no growth here; and a file truncated while
    mapped kills the process (SIGBUS) where this raises OSError. The file stays open, the same file
    even if prepared again, until the IdFile and its slices are gone; only the training
    process reads it (nothing else moves its offset between a seek and a read).
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
        """ids[a:b]; TypeError for an index that is not a slice, ValueError for a step not 1."""
        if not isinstance(key, slice):
            raise TypeError(f"an IdFile is indexed by slices ids[a:b]; got {key!r} "
                            "(np.asarray(ids) reads all its ids into an array)")
        start, stop, step = key.indices(self._length)
        if step != 1:
            raise ValueError(f"an IdFile is sliced with step 1; got step {step}")
        return IdFile(self._file, self.dtype, self._offset + start * self.dtype.itemsize,
                      max(stop - start, 0), self if self._base is None else self._base)

    def windows(self, starts, size):
        """ids[s : s + size] for each s of `starts` (ints [B]): array [B, size] of ids.dtype.
        IndexError for a window that leaves the ids, OSError if the file was truncated."""
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
        self._file.seek(self._offset + start * self.dtype.itemsize)
        done = 0
        while done < out.nbytes:              # one read returns at most ~2 GB (Linux)
            count = self._file.readinto(memoryview(out).cast("B")[done:])
            if not count:
                raise OSError(f"the id file {self._file.name!r} ends early: it was truncated "
                              "while in use")
            done += count


def read_ids(cache_path, key):
    """(tokenizer, ids: an IdFile) from the id file at cache_path; None when it is missing or
    prepared from another text (source key `key`) or format, and with a warning when it is
    corrupt or unreadable: it is never trusted. The file checked is the file read."""
    try:
        file = open(cache_path, "rb", buffering=0)
    except FileNotFoundError:
        return None
    except OSError as error:
        warnings.warn(f"cannot read the id file {cache_path!r} ({error.strerror}); preparing "
                      "it again", stacklevel=4)
        return None
    try:
        if file.read(len(MAGIC)) != MAGIC:   # not written by us: left as it is (load_ids)
            file.close()
            warnings.warn(f"{cache_path!r} is not an id file of ours; it is left as it is",
                          stacklevel=4)
            return None
        header_size = int.from_bytes(file.read(8), "little")
        meta = json.loads(file.read(min(header_size, 1 << 24)))
        if meta.get("version") != FORMAT_VERSION or meta.get("source") != key:
            file.close()
            return None                       # another format or another text: stale
        chars, length, offset = list(meta["chars"]), meta["length"], len(MAGIC) + 8 + header_size
        dtype = ids_dtype(len(chars))
        if chars != sorted(chars) or meta["dtype"] != dtype.str:
            raise ValueError("its vocabulary is unsorted or its dtype does not fit it")
        if not isinstance(length, int) or length < 1:
            raise ValueError(f"its length {length!r} is not a positive number of ids")
        if os.fstat(file.fileno()).st_size != offset + length * dtype.itemsize:
            raise ValueError(f"it does not hold {length} ids after the header")
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as error:
        file.close()
        warnings.warn(f"the id file {cache_path!r} is corrupt ({error}); preparing it again",
                      stacklevel=4)
        return None
    return CharTokenizer(chars), IdFile(file, dtype, offset, length)


def write_ids(path, cache_path, key, chunk_size=CHUNK_SIZE):
    """Encode the text file at `path` into the id file cache_path; return read_ids's pair.

    Two passes over the text in chunks, so memory stays bounded: the vocabulary first, then
    the ids, written atomically (out_dir.atomic_write). Raises ValueError (not UTF-8, > 65536
    characters) naming the file, OSError if the directory is not writable, RuntimeError if
    the text changes meanwhile.
    """
    seen, length = np.zeros(N_CODE_POINTS, dtype=bool), 0
    for text in read_text_chunks(path, chunk_size):
        points = code_points(text)
        seen[points] = True
        length += len(points)
    chars, table = id_table(seen, f"data file {path!r}")
    meta = json.dumps({"version": FORMAT_VERSION, "source": key, "chars": "".join(chars),
                       "dtype": table.dtype.str, "length": length}).encode("ascii")
    meta += b" " * (-(len(MAGIC) + 8 + len(meta)) % 64)    # the ids start at a multiple of 64
    os.makedirs(os.path.dirname(os.path.abspath(cache_path)), exist_ok=True)

    def write(f):
        f.write(MAGIC + len(meta).to_bytes(8, "little") + meta)
        for text in read_text_chunks(path, chunk_size):
            f.write(table.take(code_points(text)))
        if source_key(path) != key:
            raise RuntimeError(f"data file {path!r} changed while its ids were being prepared; "
                               "run again once it is complete")

    atomic_write(cache_path, write)
    return read_ids(cache_path, key)


def _not_ours(place):
    """Whether `place` holds a file that does not start as ours do: it is never replaced."""
    try:
        with open(place, "rb") as f:
            return f.read(len(MAGIC)) != MAGIC
    except FileNotFoundError:
        return False


def load_ids(path, cache_dir=None, chunk_size=CHUNK_SIZE):
    """read_ids's pair for the UTF-8 text file at `path`: its id file beside it or in cache_dir
    (cache_paths), read if prepared from this text, else prepared now (write_ids). Raises what
    write_ids raises; OSError naming each place when none is writable."""
    key, places = source_key(path), cache_paths(path, cache_dir)
    for place in places:
        found = read_ids(place, key)
        if found is not None:
            return found
    failures = []
    for place in places:
        if _not_ours(place):
            failures.append(f"{place!r} (a file that is not an id file of ours)")
            continue
        try:
            return write_ids(path, place, key, chunk_size)
        except OSError as error:
            failures.append(f"{place!r} ({error.strerror or error})")
    raise OSError(f"cannot store the prepared ids of data file {path!r}: " + "; ".join(failures))
