"""A BPETokenizer as a plain JSON file (bpe.json): its text, and reading it back checked.

    {"format": "microtensor-bpe", "version": 1, "pattern": "gpt2", "merges": [[a, b], ...]}

Merge k makes id 256 + k, so the merges alone are the vocabulary (the atomic write is
models/interop/bpe_tokenizer_json.py's save_bpe). Loading never unpickles, is bounded (file
size, number of merges) and refuses in one line a file whose fields have the wrong types, whose
ids are out of range or refer to a later merge, or that repeats a merge.
"""
import json

from .bpe import BPETokenizer
from .schema import Array, Const, FileError, Int, Object, Str, read_json

BPE_FILE = "bpe.json"
FORMAT, VERSION = "microtensor-bpe", 1
MAX_MERGES = 1 << 20  # a million merges: GPT-2 has 50,000
MAX_BPE_BYTES = 32 << 20  # a million merges of two 7-digit ids is ~20 MB of JSON

SPEC = Object({
    "format": Const(FORMAT),
    "version": Const(VERSION),
    "pattern": Str(choices=("gpt2",)),
    "merges": Array(Array(Int(0, 256 + MAX_MERGES), max_items=2, min_items=2),
                    max_items=MAX_MERGES),
})


def bpe_json(tokenizer):
    """The file's text for `tokenizer` (one merge a line, so a diff of two files reads)."""
    lines = ",\n  ".join(json.dumps(list(pair)) for pair in tokenizer.merges)
    return (f'{{"format": "{FORMAT}", "version": {VERSION}, "pattern": "gpt2",\n'
            f' "merges": [\n  {lines}\n ]}}\n')


def load_bpe(path):
    """The BPETokenizer in the file at `path`. Raises FileNotFoundError, or FileError naming
    the file and the first thing wrong (type, range, an unknown id, a repeated merge, size)."""
    value = read_json(path, SPEC, max_bytes=MAX_BPE_BYTES)
    return BPETokenizer(check_merges(value["merges"], path))


def check_merges(merges, where):
    """merges (already type-checked by SPEC), or FileError naming `where` for an id that is
    not a byte or an earlier merge, or a repeated merge."""
    seen = {}
    for k, (a, b) in enumerate(merges):
        if a >= 256 + k or b >= 256 + k:
            raise FileError(f"{where}: merges[{k}] is {[a, b]}; expected ids below {256 + k} "
                            f"(the bytes and the merges before it)")
        if (a, b) in seen:
            raise FileError(f"{where}: merges[{k}] is {[a, b]}, which repeats "
                            f"merges[{seen[a, b]}]")
        seen[a, b] = k
    return merges
