"""A byte-level byte-pair encoding (BPE) tokenizer: trained from the 256 bytes on your corpus.

The algorithm (Gage 1994, "A New Algorithm for Data Compression"; Sennrich et al. 2016 for
words; Radford et al. 2019, GPT-2, for bytes):

    ids   = the text's UTF-8 bytes, 0..255, cut into chunks (words with their leading space)
    repeat until the vocabulary has vocab_size tokens:
        (a, b) = the most frequent adjacent pair of ids inside a chunk
                 (ties: the smallest pair (a, b), compared as a tuple)
        new id = 256 + number of merges so far;  replace every (a, b) by it, left to right

Wikipedia's worked example, with letters for ids: "aaabdaaabac" -> aa becomes Z ("ZabdZabac"),
then ab becomes Y ("ZYdZYac"), then ZY becomes X ("XdXac"). `merge_step` is one such step.

Encoding replays the merges by rank (the earliest-learned pair present is merged first), which
reproduces training on the training text; decoding joins the tokens' bytes and decodes UTF-8,
replacing invalid sequences, so it never raises. Chunks come from GPT-2's split pattern, so a
merge never crosses from a word into the next or into punctuation; the pattern needs Unicode
classes (\\p{L} letters, \\p{N} numbers), which the `regex` package provides and `re` lacks.

References: Karpathy, minbpe (the teaching layout); GPT-2 `encoder.py` (the pattern); Hugging
Face `tokenizers` (the independent implementation tests/models/test_bpe_hf.py compares against).
"""
import heapq
from collections import Counter, defaultdict

import numpy as np

from microtensor import Tensor

try:
    import regex
except ImportError:  # a browser's Pyodide: the rest of `models` imports, BPE says what it needs
    regex = None

# GPT-2's pre-tokenizer: contractions, letters with an optional leading space, numbers,
# other symbols, then runs of whitespace (the last space of a run stays with the next word).
GPT2_SPLIT_PATTERN = (r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+"""
                      r"""|\s+(?!\S)|\s+""")
_SPLIT = regex.compile(GPT2_SPLIT_PATTERN) if regex is not None else None


def chunks(text):
    """str -> list[bytes]: GPT-2's pre-tokenization, each chunk as its UTF-8 bytes. Lone
    surrogates (bytes that were not UTF-8, read with errors="surrogateescape") become those
    bytes again, so any byte string goes through unchanged. ImportError without `regex`."""
    if _SPLIT is None:
        raise ImportError("the BPE tokenizer needs regex (GPT-2's split pattern uses \\p{L}, "
                          "which re lacks), which is not installed here: pip install regex")
    return [_utf8(c) for c in _SPLIT.findall(text)]


def _utf8(chunk):
    """A chunk's bytes; a surrogate that no byte escaped to (typed in by hand) is kept as its
    three-byte form ("surrogatepass"), never an exception."""
    try:
        return chunk.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        return chunk.encode("utf-8", "surrogatepass")


# --- one step of training, as the textbook states it ----------------------------------------

def pair_counts(chunk_ids, weights=None):
    """Counter {(a, b): how often the pair is adjacent}, over every chunk (a list of id lists),
    chunk i counted weights[i] times (once if weights is None)."""
    counts = Counter()
    for i, ids in enumerate(chunk_ids):
        w = 1 if weights is None else weights[i]
        for pair in zip(ids, ids[1:]):
            counts[pair] += w
    return counts


def merge(ids, pair, new_id):
    """ids with every occurrence of `pair`, scanned left to right without overlap, replaced by
    new_id: merge([1, 1, 1], (1, 1), 9) == [9, 1]."""
    out, i, a, b = [], 0, pair[0], pair[1]
    while i < len(ids):
        if i + 1 < len(ids) and ids[i] == a and ids[i + 1] == b:
            out.append(new_id)
            i += 2
        else:
            out.append(ids[i])
            i += 1
    return out


def best_pair(counts):
    """The most frequent pair; ties go to the smallest pair (a, b). None if there is none."""
    if not counts:
        return None
    return min(counts, key=lambda pair: (-counts[pair], pair))


def merge_step(chunk_ids, new_id, weights=None):
    """One merge: count pairs, pick the top, replace it in every chunk.
    Returns (pair, new chunk_ids); pair is None (and chunk_ids unchanged) when no pair is left."""
    pair = best_pair(pair_counts(chunk_ids, weights))
    if pair is None:
        return None, chunk_ids
    return pair, [merge(ids, pair, new_id) for ids in chunk_ids]


# --- training, fast: the same merges, with counts updated only where a merge changes them ----

def train_merges(text, vocab_size):
    """The merges learned from `text`: a list of pairs (a, b), merge k making id 256 + k.

    Each distinct chunk is stored once with its count. A heap holds (-count, pair) entries; an
    entry whose count is stale is skipped when popped (the current count was pushed when it
    changed), so picking the top costs a log, not a scan of every pair. A merge touches only
    the chunks that hold its pair (`where`), and updates the counts of the pairs in those.
    Same result as repeating `merge_step` (tests/models/test_bpe.py checks it).
    Raises ValueError for vocab_size below 256.
    """
    if not isinstance(vocab_size, int) or isinstance(vocab_size, bool) or vocab_size < 256:
        raise ValueError(f"vocab_size is {vocab_size!r}; expected an int >= 256 (the 256 bytes)")
    words = Counter(chunks(text))
    chunk_ids = [list(w) for w in words]
    weights = list(words.values())
    counts = pair_counts(chunk_ids, weights)
    where = defaultdict(set)  # pair -> the chunks that may hold it (a superset: never pruned)
    for i, ids in enumerate(chunk_ids):
        for pair in zip(ids, ids[1:]):
            where[pair].add(i)
    heap = [(-c, pair) for pair, c in counts.items()]
    heapq.heapify(heap)
    merges = []
    while len(merges) < vocab_size - 256 and heap:
        negative, pair = heapq.heappop(heap)
        if counts.get(pair, 0) != -negative or negative == 0:
            continue  # stale: this pair's count changed since the entry was pushed
        new_id = 256 + len(merges)
        merges.append(pair)
        changed = set()
        for i in where.pop(pair):
            old = chunk_ids[i]
            new = merge(old, pair, new_id)
            if len(new) == len(old):
                continue
            w = weights[i]
            for p in zip(old, old[1:]):
                counts[p] -= w
                changed.add(p)
            for p in zip(new, new[1:]):
                counts[p] += w
                where[p].add(i)
                changed.add(p)
            chunk_ids[i] = new
        for p in changed:
            if counts[p] > 0:
                heapq.heappush(heap, (-counts[p], p))
            else:
                del counts[p]
    return merges


# --- the tokenizer ----------------------------------------------------------------------------

class BPETokenizer:
    """Byte-level BPE: ids 0..255 are the bytes, id 256 + k is merges[k] = (a, b) joined.

    Same interface as CharTokenizer (vocab_size, encode(str) -> list[int], decode(ids) -> str),
    except that every text encodes: there is no unknown character.
    """

    def __init__(self, merges):
        """merges: a sequence of pairs (a, b) of ids, each below 256 + its own index, no
        pair repeated. Raises ValueError otherwise (models/bpe_file.py checks files first)."""
        self.merges = [tuple(int(x) for x in pair) for pair in merges]
        self.ranks = {}
        for k, (a, b) in enumerate(self.merges):
            if not (0 <= a < 256 + k and 0 <= b < 256 + k):
                raise ValueError(f"merge {k} is {(a, b)}; ids must be known: below {256 + k}")
            if (a, b) in self.ranks:
                raise ValueError(f"merge {k} repeats the pair {(a, b)} of merge "
                                 f"{self.ranks[(a, b)]}")
            self.ranks[(a, b)] = k
        self.vocab_size = 256 + len(self.merges)
        self.unit = "tokens"  # what its ids count, in messages ("characters" for a CharTokenizer)
        self.vocab = [bytes([i]) for i in range(256)]  # id -> its bytes
        for a, b in self.merges:
            self.vocab.append(self.vocab[a] + self.vocab[b])
        self._cache = {}

    @classmethod
    def train(cls, text, vocab_size):
        """The tokenizer with vocab_size tokens learned from `text` (fewer if the text runs out
        of pairs). See train_merges."""
        return cls(train_merges(text, vocab_size))

    def encode_chunk(self, chunk):
        """bytes -> list[int]: merge the pair of lowest rank, again and again (cached)."""
        ids = self._cache.get(chunk)
        if ids is not None:
            return ids
        ids = list(chunk)
        while len(ids) >= 2:
            pair = min(zip(ids, ids[1:]), key=lambda p: self.ranks.get(p, float("inf")))
            if pair not in self.ranks:
                break
            ids = merge(ids, pair, 256 + self.ranks[pair])
        if len(self._cache) < 100_000:  # bounded: a stream of distinct words cannot grow it
            self._cache[chunk] = ids
        return ids

    def encode(self, text):
        """str (or bytes: any byte string, UTF-8 or not) -> list[int]."""
        if isinstance(text, (bytes, bytearray)):
            text = bytes(text).decode("utf-8", "surrogateescape")
        if not isinstance(text, str):
            raise TypeError(f"text is {type(text).__name__}; expected str or bytes")
        return [i for c in chunks(text) for i in self.encode_chunk(c)]

    def decode_bytes(self, ids):
        """ids (list, numpy array or Tensor of ints) -> bytes. TypeError for an id that is not
        an int, ValueError for one outside [0, vocab_size)."""
        ids = ids.data if isinstance(ids, Tensor) else ids
        ids = ids.reshape(-1).tolist() if isinstance(ids, np.ndarray) else ids
        for i in ids:
            if not isinstance(i, (int, np.integer)) or isinstance(i, bool):
                raise TypeError(f"token id {i!r} is not an int")
            if not 0 <= i < self.vocab_size:
                raise ValueError(f"token id {i} is outside the vocabulary [0, {self.vocab_size})")
        return b"".join(self.vocab[i] for i in ids)

    def decode(self, ids):
        """ids -> str; bytes that are not UTF-8 (a sample may cut a character) become U+FFFD."""
        return self.decode_bytes(ids).decode("utf-8", errors="replace")

    # --- the interface every tokenizer shares (models/tokenizer.py's CharTokenizer too) -------

    def to_info(self):
        """What a checkpoint's config.json keeps of it (info.bpe: bpe.json's object)."""
        return {"bpe": {"format": "microtensor-bpe", "version": 1, "pattern": "gpt2",
                        "merges": [list(pair) for pair in self.merges]}}

    def fingerprint(self):
        """The text hashed into the corpus fingerprint a resume compares."""
        return "bpe:" + ",".join(f"{a} {b}" for a, b in self.merges)

    def default_prompt(self):
        return "\n"

    def __repr__(self):
        return f"BPETokenizer(vocab_size={self.vocab_size})"
