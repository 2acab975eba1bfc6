"""Prepare a UTF-8 text file once into a file of character ids, and read its ids back.

The ids are uint8 or uint16, and the file is reused while the text is unchanged.

References: Karpathy, nanoGPT `data/shakespeare_char/prepare.py` (the ids of a character-level
corpus written once as uint16 to train.bin; its train.py maps it with np.memmap, where we
read each window from the file, see IdFile); RFC 3629 (UTF-8: a lead byte, then 0-3
continuation bytes 10xxxxxx).

The id file, `<text file>.microtensor-ids`, is one header and the ids:
    MAGIC | header length (8 bytes, little-endian) | JSON header, space-padded | ids [N]
The JSON header holds the format version, what the text file looked like when it was
prepared (`source_key`), the vocabulary, the dtype and N. The ids start at a multiple of 64.
"""
import hashlib
import json
import os
import warnings
import weakref

import numpy as np

from .checkpoint_format import atomic_write
from .tokenizer import CharTokenizer

CHUNK_SIZE = 1 << 20          # bytes decoded per step: ~20 MB of work arrays at any corpus size
SAMPLE_SIZE = 1 << 20         # bytes hashed at each end of the text by source_key
CACHE_SUFFIX = ".microtensor-ids"
MAGIC = b"microtensor ids\n"
FORMAT_VERSION = 1
N_CODE_POINTS = 0x110000      # Unicode code points are 0 .. 0x10FFFF


def code_points(text):
    """The Unicode code points of the str `text`: uint32 numpy array [len(text)]."""
    return np.frombuffer(text.encode("utf-32-le"), dtype="<u4")


def ids_dtype(vocab_size, source="the text"):
    """The dtype of stored ids: uint8 for a vocabulary of <= 256 characters, else uint16
    (as nanoGPT's prepare.py), so a stored corpus costs 1 or 2 bytes per character.

    Raises ValueError naming `source` for more than 65536 characters, which uint16 cannot number.
    """
    if vocab_size > 1 << 16:
        raise ValueError(f"{source} has {vocab_size} distinct characters; a character-level "
                         "vocabulary holds at most 65536 (uint16 ids)")
    return np.dtype("<u1" if vocab_size <= 1 << 8 else "<u2")


def id_table(vocab, source="the text"):
    """(chars, table) for the sorted code points `vocab` [V]: table[code point] is its id.

    `table` is a numpy array [0x110000] of ids_dtype(V); the code points not in vocab map
    to 0 and are never looked up. `table.take(points)` encodes code points (the same as
    table[points], about twice as fast). Raises ValueError naming `source` when V > 65536.
    """
    table = np.zeros(N_CODE_POINTS, dtype=ids_dtype(len(vocab), source))
    table[vocab] = np.arange(len(vocab))
    return [chr(c) for c in vocab], table


def encode_text(text, source="the text"):
    """(CharTokenizer.from_text(text), its ids of `text`: uint8 or uint16 numpy array [N]).

    The same vocabulary and ids as CharTokenizer's encode, computed with numpy.
    Raises ValueError for an empty text or more than 65536 distinct characters.
    """
    points = code_points(text)
    seen = np.zeros(N_CODE_POINTS, dtype=bool)
    seen[points] = True
    chars, table = id_table(np.flatnonzero(seen), source)
    return CharTokenizer(chars), table.take(points)


def source_key(path):
    """What identifies the text at `path`: its size, mtime (ns) and a hash of its ends.

    Every ordinary change (an edit, an append, a copy over it) moves the size or the mtime.
    The blake2b hash of the first and last SAMPLE_SIZE bytes also catches a file replaced
    by one of the same size whose mtime was kept (cp -p, rsync, touch -r), and whole small
    files. It stops short of hashing all of a large corpus, which would read every byte at
    each start.
    """
    stat = os.stat(path)
    digest = hashlib.blake2b(digest_size=16)
    with open(path, "rb") as f:
        digest.update(f.read(SAMPLE_SIZE))
        if stat.st_size > SAMPLE_SIZE:
            f.seek(max(SAMPLE_SIZE, stat.st_size - SAMPLE_SIZE))
            digest.update(f.read(SAMPLE_SIZE))
    return {"size": stat.st_size, "mtime_ns": stat.st_mtime_ns, "blake2b": digest.hexdigest()}


def complete_length(data):
    """How many leading bytes of `data` form whole UTF-8 characters, cutting off a last
    character that `data` ends in the middle of (its rest is in the next chunk)."""
    for back in range(1, min(4, len(data)) + 1):
        byte = data[-back]
        if byte & 0xC0 != 0x80:               # a lead byte (or ASCII), not a continuation
            size = 1 if byte < 0x80 else 2 if byte < 0xE0 else 3 if byte < 0xF0 else 4
            return len(data) - back if size > back else len(data)
    return len(data)                          # four continuation bytes: let the decoder say


def read_text_chunks(path, chunk_size=CHUNK_SIZE):
    """The text of the UTF-8 file at `path` as successive str pieces, each from about
    chunk_size bytes cut at a character boundary, so a character is never split.

    Raises ValueError naming the file, the byte and its offset for bytes that are not UTF-8.
    """
    offset, pending = 0, b""                  # pending: bytes of a character cut by the read
    with open(path, "rb") as f:
        while True:
            block = f.read(chunk_size)
            data = pending + block
            end = complete_length(data) if block else len(data)
            try:
                yield data[:end].decode("utf-8")
            except UnicodeDecodeError as error:
                raise ValueError(f"data file {path!r} is not UTF-8 text: byte "
                                 f"0x{data[error.start]:02x} at offset {offset + error.start} "
                                 "cannot be decoded") from None
            if not block:
                return
            offset, pending = offset + end, data[end:]


class IdFile:
    """The ids [N] of an id file, read from it window by window when asked for.

    Why not a long-lived np.memmap: every page a mapping touches counts in the process's RSS
    while it stays mapped (nanoGPT re-creates its memmap for each batch to avoid this), and
    random windows soon touch them all, so a long run would hold the whole corpus (2 bytes a
    character for uint16 ids). Reading each window (a seek and a read) into a small array
    keeps the corpus in the OS page cache, shared and reclaimable: the process holds only its
    windows. Only the training process reads batches (data-parallel workers get their rows
    from it), so nothing else moves the file's offset between a seek and its read.

    len(ids) is N and ids.dtype uint8 or uint16; ids[a:b] is an IdFile of those ids (a view,
    nothing is read); ids.windows(starts, size) reads the windows of a batch; np.asarray(ids)
    reads all N ids into memory. The file stays open, the same file even if it is prepared
    again meanwhile, until the IdFile and its slices are gone.
    """

    def __init__(self, file, dtype, offset, length, base=None):
        """`length` ids of `dtype` from byte `offset` of `file`, the id file opened unbuffered
        (open(path, "rb", buffering=0)). base: the IdFile this one is a slice of; without
        one, this IdFile closes the file when it is gone."""
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

        A seek and a read per window (os.pread would save the seek, but Windows lacks it).
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
        """All the ids, read into a numpy array [N] (N * itemsize bytes of memory)."""
        if copy is False:
            raise ValueError(f"{self!r} is on disk: an array of its ids is always a copy")
        out = np.empty(self._length, dtype=self.dtype)
        self._read_into(out, 0)
        return out if dtype is None else out.astype(dtype, copy=False)

    def _read_into(self, out, start):
        """Fill the contiguous array `out` with the ids from index `start` on."""
        self._file.seek(self._offset + start * self.dtype.itemsize)
        done = self._file.readinto(out)
        while done < out.nbytes:              # one read returns at most ~2 GB (Linux)
            count = self._file.readinto(memoryview(out).cast("B")[done:])
            if not count:
                raise OSError(f"the id file {self._file.name!r} ends early: it was truncated "
                              "while in use")
            done += count


def read_header(file, key):
    """(tokenizer, dtype, offset, length) of the ids in the open id file `file`.

    None when it was prepared from another version of the text (its source key differs
    from `key`) or in another format. Raises ValueError saying what is corrupt (wrong
    magic, bad header, size that does not match the header).
    """
    magic, header_size = file.read(len(MAGIC)), int.from_bytes(file.read(8), "little")
    header = file.read(min(header_size, 1 << 24))
    if magic != MAGIC:
        raise ValueError("it does not start with the id file's magic bytes")
    meta = json.loads(header)
    if meta.get("version") != FORMAT_VERSION or meta.get("source") != key:
        return None                           # another format or another text: stale
    chars, length = list(meta["chars"]), meta["length"]
    tokenizer, dtype = CharTokenizer(chars), ids_dtype(len(chars))
    offset = len(MAGIC) + 8 + header_size
    if chars != sorted(chars) or meta["dtype"] != dtype.str:
        raise ValueError("its vocabulary is unsorted or its dtype does not fit it")
    if not isinstance(length, int) or length < 1:
        raise ValueError(f"its length {length!r} is not a positive number of ids")
    file_size = os.fstat(file.fileno()).st_size
    if file_size != offset + length * dtype.itemsize:
        raise ValueError(f"it holds {file_size} bytes, not {length} ids after the header")
    return tokenizer, dtype, offset, length


def read_ids(cache_path, key):
    """(tokenizer, ids) from the id file at cache_path, ids an IdFile [N] of uint8/uint16.

    None when there is no such file or it is stale (read_header). None with a warning when
    the file is corrupt or cannot be read: it is never trusted. The file checked is the
    file read: it is opened once.
    """
    file = None
    try:
        file = open(cache_path, "rb", buffering=0)
        found = read_header(file, key)
    except FileNotFoundError:
        found = None
    except OSError as error:
        warnings.warn(f"cannot read the id file {cache_path!r} ({error.strerror}); preparing "
                      "it again", stacklevel=3)
        found = None
    except (ValueError, KeyError, TypeError, AttributeError) as error:
        warnings.warn(f"the id file {cache_path!r} is corrupt ({error}); preparing it again",
                      stacklevel=3)
        found = None
    if found is None:
        if file is not None:
            file.close()
        return None
    tokenizer, dtype, offset, length = found
    return tokenizer, IdFile(file, dtype, offset, length)


def write_ids(path, cache_path, key, chunk_size=CHUNK_SIZE):
    """Encode the text file at `path` into the id file cache_path, atomically; (tokenizer, ids).

    Two passes over the text in chunks, so memory stays ~20 MB whatever its size: the first
    collects the vocabulary (every code point seen), the second looks each code point's id
    up in a table and appends the ids. The file is written under a temporary name in the
    same directory and renamed into place (checkpoint_format.atomic_write), so a reader
    never sees half of it; it gets a normal file's mode (0o666 less the umask), not mkstemp's 0600.
    Raises ValueError (not UTF-8, > 65536 characters) naming the file, OSError if the
    directory is not writable, RuntimeError if the text changes while being read.
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
    directory = os.path.dirname(os.path.abspath(cache_path))
    os.makedirs(directory, exist_ok=True)

    def write(f):
        f.write(MAGIC + (len(meta) + len(padding)).to_bytes(8, "little") + meta + padding)
        for text in read_text_chunks(path, chunk_size):
            f.write(table.take(code_points(text)))
        if source_key(path) != key:
            raise RuntimeError(f"data file {path!r} changed while its ids were being prepared; "
                               "run again once it is complete")

    # fsync'd before the rename: after a crash, the name never holds a file of the right size
    # whose ids were not yet written (zeros the checks would accept)
    atomic_write(cache_path, write)
    return read_ids(cache_path, key)
