"""Our BPETokenizer as Hugging Face `tokenizers`' byte-level BPE (GPT-2's layout) and back.

GPT-2 writes each byte as a printable character (`byte_to_char`: the printable Latin-1 bytes
stand for themselves, the other 68 are shifted to U+0100 and up), so a token is a string and a
merge is "left right". Our id i < 256 is byte i, our id 256 + k is merge k: the vocabulary is
that, spelled in those characters. With the ByteLevel pre-tokenizer (add_prefix_space=False,
use_regex=True: GPT-2's pattern) and the ByteLevel decoder, `tokenizers` encodes exactly as we
do (tests/interop/test_bpe_hf.py compares them).

References: GPT-2 `encoder.py` (bytes_to_unicode); Hugging Face `tokenizers` documentation
(models.BPE, pre_tokenizers.ByteLevel, decoders.ByteLevel).
"""
from ..bpe import BPETokenizer
from .optional import require


def byte_to_char():
    """{byte: its printable character}, GPT-2's table (256 entries, all distinct)."""
    printable = (list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1))
                 + list(range(ord("®"), ord("ÿ") + 1)))
    table, shift = {}, 0
    for b in range(256):
        if b in printable:
            table[b] = chr(b)
        else:
            table[b] = chr(256 + shift)  # the unprintable bytes, in order, from U+0100
            shift += 1
    return table


def vocab_and_merges(tokenizer):
    """({token string: id}, [(left, right), ...]) for tokenizer (a BPETokenizer), in GPT-2's
    spelling: what vocab.json and merges.txt hold."""
    spell = byte_to_char()
    strings = ["".join(spell[b] for b in token) for token in tokenizer.vocab]
    return ({s: i for i, s in enumerate(strings)},
            [(strings[a], strings[b]) for a, b in tokenizer.merges])


def hf_tokenizer(tokenizer):
    """A `tokenizers.Tokenizer` that encodes and decodes as `tokenizer` does (needs the
    `tokenizers` package: RuntimeError naming the extra otherwise)."""
    tokenizers = require("tokenizers", "a BPE tokenizer for Hugging Face")
    vocab, merges = vocab_and_merges(tokenizer)
    hf = tokenizers.Tokenizer(tokenizers.models.BPE(vocab=vocab, merges=merges))
    hf.pre_tokenizer = tokenizers.pre_tokenizers.ByteLevel(add_prefix_space=False,
                                                           use_regex=True)
    hf.decoder = tokenizers.decoders.ByteLevel()
    return hf


def from_vocab_and_merges(vocab, merges, source="the tokenizer"):
    """The BPETokenizer for a GPT-2-style vocabulary {string: id} and merges [(left, right)].

    It must be our layout: the 256 byte characters at ids 0..255 in byte order, then merge k
    making id 256 + k, spelled as its two parts joined. Raises ValueError in one line naming
    `source` otherwise (GPT-2's own vocabulary orders its bytes differently).
    """
    spell = byte_to_char()
    for b in range(256):
        if vocab.get(spell[b]) != b:
            raise ValueError(f"{source}: the byte {b} ({spell[b]!r}) has id "
                             f"{vocab.get(spell[b])}; expected {b} (bytes first, in order)")
    if len(vocab) != 256 + len(merges):
        raise ValueError(f"{source}: {len(vocab)} tokens for {len(merges)} merges; expected "
                         f"256 + {len(merges)} (every token a byte or a merge, no extras)")
    pairs = []
    for k, (left, right) in enumerate(merges):
        a, b, made = vocab.get(left), vocab.get(right), vocab.get(left + right)
        if a is None or b is None or made != 256 + k:
            raise ValueError(f"{source}: merge {k} ({left!r} {right!r}) makes id {made}; "
                             f"expected both parts known and id {256 + k}")
        pairs.append((a, b))
    return BPETokenizer(pairs)


# --- reading a GPT-2-style byte-level BPE back (plain JSON and text: no `tokenizers` needed) ---

MAX_MERGES = 1 << 20
MERGES_TXT_MAX_BYTES = 64 << 20


def save_bpe(tokenizer, path):
    """Write `tokenizer` as bpe.json (models/bpe_file.py's format) to `path`, atomically."""
    import os

    from ..bpe_file import bpe_json
    from ..training.out_dir import atomic_write  # the project's one atomic write
    data = bpe_json(tokenizer).encode("utf-8")
    atomic_write(os.fspath(path), lambda f: f.write(data))


def bpe_tokenizer_json(tokenizer):
    """The `tokenizer.json` text of `tokenizer` (a BPETokenizer)."""
    return hf_tokenizer(tokenizer).to_str(pretty=True)


def read_bpe_tokenizer_json(path):
    """BPETokenizer from a `tokenizer.json` holding a byte-level BPE in our layout. Raises
    FileError naming the file and what is not so (another model, normalizer, pre-tokenizer,
    decoder, added tokens, merges of the wrong form, bytes out of order)."""
    from ..schema import (
        Array,
        FileError,
        Int,
        Leaf,
        Map,
        Nullable,
        Object,
        Optional,
        Str,
        read_json,
    )
    any_object = Object({})
    merge = Leaf("'left right' or a pair of strings",
                 lambda v: type(v) is str or (type(v) is list and len(v) == 2
                                              and all(type(x) is str for x in v)))
    spec = read_json(path, Object({
        "model": Object({"type": Str(), "vocab": Map(Str(), Int(0, 256 + MAX_MERGES),
                                                     max_items=256 + MAX_MERGES),
                         "merges": Array(merge, max_items=MAX_MERGES)}),
        "normalizer": Optional(Nullable(any_object)),
        "added_tokens": Optional(Nullable(Array(any_object)), []),
        "pre_tokenizer": Optional(Nullable(any_object)),
        "decoder": Optional(Nullable(any_object)),
    }))

    def refuse(why):
        raise FileError(f"{path} is not a byte-level BPE tokenizer microtensor reads ({why})")

    model, pre = spec["model"], spec["pre_tokenizer"] or {}
    if model["type"] != "BPE":
        refuse(f"its model is {model['type']!r}, not 'BPE'")
    if spec["normalizer"] is not None:
        refuse("it rewrites the text with a normalizer")
    if spec["added_tokens"]:
        refuse(f"it has {len(spec['added_tokens'])} added or special tokens")
    if (pre.get("type"), pre.get("add_prefix_space"), pre.get("use_regex", True)) != \
            ("ByteLevel", False, True):
        refuse("its pre-tokenizer is not ByteLevel(add_prefix_space=False, use_regex=True)")
    if (spec["decoder"] or {}).get("type") != "ByteLevel":
        refuse("its decoder is not ByteLevel")
    merges = [m.split(" ") if isinstance(m, str) else m for m in model["merges"]]
    if any(len(m) != 2 for m in merges):
        refuse("a merge is not two tokens")
    try:
        return from_vocab_and_merges(model["vocab"], merges, path)
    except ValueError as error:
        refuse(str(error).removeprefix(f"{path}: "))


def read_vocab_and_merges_files(vocab_path, merges_path):
    """BPETokenizer from GPT-2's vocab.json and merges.txt (first line '#version: ...', then
    'left right' a line). FileError naming the file otherwise."""
    import os

    from ..schema import FileError, Int, Map, Str, read_json
    vocab = read_json(vocab_path, Map(Str(), Int(0, 256 + MAX_MERGES),
                                      max_items=256 + MAX_MERGES))
    size = os.path.getsize(merges_path)
    if size > MERGES_TXT_MAX_BYTES:
        raise FileError(f"{merges_path} is {size:,} bytes; at most {MERGES_TXT_MAX_BYTES:,}")
    try:
        with open(merges_path, encoding="utf-8") as f:
            lines = f.read().split("\n")
    except UnicodeDecodeError:
        raise FileError(f"{merges_path} is not UTF-8 text") from None
    lines = [line for line in lines if line and not line.startswith("#version")]
    merges = [line.split(" ") for line in lines]
    for k, m in enumerate(merges):
        if len(m) != 2:
            raise FileError(f"{merges_path}: line {k + 1} is {lines[k][:40]!r}; expected two "
                            "tokens separated by one space")
    try:
        return from_vocab_and_merges(vocab, merges, merges_path)
    except ValueError as error:
        raise FileError(str(error)) from None
