"""Our byte-level BPE against an independent implementation, Hugging Face `tokenizers`: the
same merges loaded into its BPE model (ByteLevel pre-tokenizer and decoder) give the same ids."""
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from models.bpe import BPETokenizer
from models.interop.bpe_tokenizer_json import (
    byte_to_char,
    from_vocab_and_merges,
    hf_tokenizer,
    vocab_and_merges,
)

pytest.importorskip("tokenizers")


def shipped_text():
    from pydoc_data.topics import topics
    return "".join(topics[k] for k in sorted(topics))


@pytest.fixture(scope="module")
def pair():
    text = shipped_text()
    tok = BPETokenizer.train(text[:150_000], 1024)  # trained on the first part only
    return tok, hf_tokenizer(tok), text


def first_difference(a, b):
    k = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
    return f"first difference at {k}: ours {a[k:k + 5]}, tokenizers {b[k:k + 5]}"


def test_same_ids_as_tokenizers_on_the_whole_shipped_text(pair):
    tok, hf, text = pair
    assert len(text.encode()) > 400_000, "the shipped text is shorter than this test assumes"
    ours, theirs = tok.encode(text), hf.encode(text).ids
    assert ours == theirs, first_difference(ours, theirs)


HOSTILE = {
    "every plane": "".join(chr(c) for c in (0x41, 0xE9, 0x4E2D, 0x1D518, 0x20000, 0x30000,
                                            0xE0041, 0xF0000, 0x10FFFD)),
    "emoji": "👩‍👩‍👧 🇫🇷 🙂🙂 ✌🏽",
    "crlf": "line one\r\nline two\r\n\r\n  \r\n",
    "nul": "a\x00b \x00\x00 c",
    "spaces": "   x  \t\t y\n\n\n z   ",
    "contractions": "don't I'll we've they're he'd 'S 'LL",
    "digits": "12345 3.14159 x2 ²³ ٣",
}


@pytest.mark.parametrize("name", list(HOSTILE))
def test_same_ids_as_tokenizers_on_hostile_text(pair, name):
    tok, hf, _ = pair
    text = HOSTILE[name]
    ours, theirs = tok.encode(text), hf.encode(text).ids
    assert ours == theirs, first_difference(ours, theirs)
    assert hf.decode(theirs) == text == tok.decode(ours)


def test_invalid_utf8_compares_after_replacement(pair):
    # tokenizers takes str, so raw invalid bytes cannot reach it: compare on the text decoded
    # with errors="replace" (what `sample` shows), and check the bytes-level round trip alone
    tok, hf, _ = pair
    data = b"ok \xff\xfe broken \xc3 half \xed\xa0\x80 surrogate"
    text = data.decode("utf-8", errors="replace")
    assert tok.encode(text) == hf.encode(text).ids
    assert tok.decode_bytes(tok.encode(data)) == data


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_same_ids_as_tokenizers_on_any_string(pair, text):
    tok, hf, _ = pair
    assert tok.encode(text) == hf.encode(text).ids


def test_byte_table_is_gpt2s():
    table = byte_to_char()
    assert len(set(table.values())) == 256
    assert table[ord("A")] == "A" and table[ord(" ")] == "Ġ" and table[ord("\n")] == "Ċ"


def test_vocab_and_merges_read_back(pair):
    tok, _, _ = pair
    back = from_vocab_and_merges(*vocab_and_merges(tok))
    assert back.merges == tok.merges


def test_a_vocabulary_in_another_byte_order_is_refused(pair):
    tok, _, _ = pair
    vocab, merges = vocab_and_merges(tok)
    vocab = {**vocab, "A": 0, "!": ord("A")}
    with pytest.raises(ValueError, match=r"the byte 33 .* has id 65; expected 33"):
        from_vocab_and_merges(vocab, merges, "vocab.json")
