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
