"""Training data: file loading errors, the built-in corpus, the 90/10 split and random batches."""
import numpy as np
import pytest

import microtensor
from models.data import default_corpus, get_batch, load_text, split_ids


def test_load_text(tmp_path):
    path = tmp_path / "t.txt"
    path.write_text("héllo\n", encoding="utf-8")
    assert load_text(path) == "héllo\n"


def test_missing_file_is_named(tmp_path):
    with pytest.raises(FileNotFoundError, match="nope.txt"):
        load_text(tmp_path / "nope.txt")


def test_directory_is_rejected(tmp_path):
    with pytest.raises(IsADirectoryError):
        load_text(tmp_path)


def test_empty_file_is_named(tmp_path):
    path = tmp_path / "empty.txt"
    path.write_text("")
    with pytest.raises(ValueError, match="empty.txt.*empty"):
        load_text(path)


def test_non_utf8_file_is_named(tmp_path):
    path = tmp_path / "latin1.txt"
    path.write_bytes("caf\xe9".encode("latin-1"))
    with pytest.raises(ValueError, match="latin1.txt.*not UTF-8.*0xe9"):
        load_text(path)


def test_too_short_for_block_size():
    ids = np.arange(10)
    with pytest.raises(ValueError, match=r"short.txt.*block_size \+ 1 = 11"):
        split_ids(ids, 10, source="data file 'short.txt'")
    with pytest.raises(ValueError, match="validation split"):
        split_ids(np.arange(50), 10, source="x")


def test_split_is_90_10():
    train, val = split_ids(np.arange(1000), 16)
    assert len(train) == 900 and len(val) == 100
    assert train[-1] + 1 == val[0]


def test_default_corpus():
    text = default_corpus()
    assert 300_000 < len(text) < 1_000_000
    assert "assert" in text and text == default_corpus()


def test_get_batch():
    ids = np.arange(100, 200)
    microtensor.manual_seed(3)
    x, y = get_batch(ids, 5, 8)
    assert x.shape == y.shape == (5, 8) and x.dtype == y.dtype == np.int64
    np.testing.assert_array_equal(np.diff(x, axis=1), 1)   # contiguous windows
    np.testing.assert_array_equal(y, x + 1)                # targets are the next token
    microtensor.manual_seed(3)
    np.testing.assert_array_equal(get_batch(ids, 5, 8)[0], x)


def test_get_batch_reaches_the_last_window():
    ids = np.arange(9)                                      # exactly one window of 8 + 1
    x, y = get_batch(ids, 3, 8)
    np.testing.assert_array_equal(y[:, -1], 8)
