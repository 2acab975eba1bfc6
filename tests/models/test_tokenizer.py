"""CharTokenizer: vocabulary, encode/decode round trip, clear errors."""
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from microtensor import Tensor
from models import CharTokenizer


def test_vocabulary_is_sorted_distinct_characters():
    tok = CharTokenizer.from_text("hello world")
    assert tok.chars == sorted(set("hello world"))
    assert tok.vocab_size == 8
    assert tok.encode("hello") == [tok.chars.index(c) for c in "hello"]


@given(st.text(min_size=1))
def test_round_trip_any_text(text):
    tok = CharTokenizer.from_text(text)
    ids = tok.encode(text)
    assert len(ids) == len(text)
    assert all(0 <= i < tok.vocab_size for i in ids)
    assert tok.decode(ids) == text


def test_decode_accepts_numpy_and_tensor():
    tok = CharTokenizer.from_text("abc")
    ids = np.array([[2, 1, 0]], dtype=np.int64)
    assert tok.decode(ids) == "cba"
    assert tok.decode(Tensor(ids)) == "cba"


def test_unknown_character_is_named():
    tok = CharTokenizer.from_text("abc")
    with pytest.raises(ValueError, match="'z'"):
        tok.encode("abz")


def test_id_out_of_range():
    tok = CharTokenizer.from_text("abc")
    with pytest.raises(ValueError, match="5"):
        tok.decode([0, 5])


def test_bad_vocabularies():
    with pytest.raises(ValueError, match="empty"):
        CharTokenizer.from_text("")
    with pytest.raises(ValueError, match="repeats"):
        CharTokenizer(["a", "a"])
    with pytest.raises(ValueError, match="single characters"):
        CharTokenizer(["ab"])
