"""Training data: file errors, ids prepared once and reused, the split, random batches.

A file's ids are read from disk window by window (an IdFile); the split is 90/10.
"""
import gc
import os
import tempfile

import numpy as np
import pytest

import microtensor
from models.tokenizer import CharTokenizer
from models.training import id_file
from models.training.data import default_corpus, get_batch, load_corpus, split_ids
from models.training.id_file import IdFile

# One-, two-, three- and four-byte UTF-8 characters: every chunk size below cuts some of them.
MIXED = "a é € 😀 z\nÆble 中文 𝔘𝔫𝔦\n" * 7


def write(path, text):
    path.write_text(text, encoding="utf-8")
    return path


def assert_same_as_char_tokenizer(tokenizer, ids, text):
    expected = CharTokenizer.from_text(text)
    assert tokenizer.chars == expected.chars, \
        f"vocabulary: expected {expected.chars}, got {tokenizer.chars}"
    np.testing.assert_array_equal(ids, expected.encode(text),
                                  err_msg="ids differ from CharTokenizer's")


def count_writes(monkeypatch):
    """A list that grows by one path each time load_corpus tries to prepare an id file."""
    written, real_write_ids = [], id_file.write_ids

    def counting_write_ids(path, cache_path, *args):
        written.append(cache_path)
        return real_write_ids(path, cache_path, *args)

    monkeypatch.setattr(id_file, "write_ids", counting_write_ids)
    return written


@pytest.mark.parametrize("chunk_size", [1, 2, 3, 4, 5, 7, 64, 1 << 20])
def test_ids_equal_char_tokenizer_with_characters_cut_by_every_chunk_size(tmp_path, chunk_size):
    path = write(tmp_path / "mixed.txt", MIXED)
    tokenizer, ids = load_corpus(path, chunk_size=chunk_size)
    assert isinstance(ids, IdFile) and ids.dtype == np.uint8, f"got {type(ids)} {ids.dtype}"
    assert_same_as_char_tokenizer(tokenizer, ids, MIXED)


def test_built_in_corpus_equals_char_tokenizer():
    tokenizer, ids = load_corpus()
    assert_same_as_char_tokenizer(tokenizer, ids, default_corpus())


@pytest.mark.parametrize("vocab_size, dtype", [(256, np.uint8), (257, np.uint16)])
def test_ids_are_uint8_up_to_256_characters_then_uint16(tmp_path, vocab_size, dtype):
    text = "".join(chr(0x100 + i) for i in range(vocab_size)) * 3
    tokenizer, ids = load_corpus(write(tmp_path / "wide.txt", text), chunk_size=100)
    assert ids.dtype == dtype, f"{vocab_size} characters: expected {dtype}, got {ids.dtype}"
    assert_same_as_char_tokenizer(tokenizer, ids, text)


def test_more_than_65536_characters_is_an_error_naming_the_file(tmp_path):
    path = write(tmp_path / "huge_vocab.txt", "".join(chr(0x10000 + i) for i in range(65537)))
    with pytest.raises(ValueError, match="huge_vocab.txt.*65537 distinct.*at most 65536"):
        load_corpus(path)


def test_ids_are_prepared_beside_the_file_once_then_reused(tmp_path, monkeypatch):
    path, written = write(tmp_path / "t.txt", MIXED), count_writes(monkeypatch)
    _, first = load_corpus(path)
    tokenizer, second = load_corpus(path)
    assert written == [str(path) + ".microtensor-ids"], f"expected one preparation, got {written}"
    np.testing.assert_array_equal(second, first)
    assert_same_as_char_tokenizer(tokenizer, second, MIXED)


def test_a_changed_file_is_prepared_again_even_with_its_size_and_mtime_kept(tmp_path, monkeypatch):
    path, written = write(tmp_path / "t.txt", "abcabc"), count_writes(monkeypatch)
    load_corpus(path)
    stat = os.stat(path)
    write(path, "xyzxyz")                                    # same size
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))  # same mtime, as cp -p leaves it
    tokenizer, ids = load_corpus(path)
    assert len(written) == 2, f"expected a second preparation, got {len(written)}"
    assert_same_as_char_tokenizer(tokenizer, ids, "xyzxyz")
    write(path, "xyzxyz and more")                           # an append changes the size
    tokenizer, ids = load_corpus(path)
    assert len(written) == 3, f"expected a third preparation, got {len(written)}"
    assert_same_as_char_tokenizer(tokenizer, ids, "xyzxyz and more")


def test_ids_already_loaded_keep_reading_their_text_after_it_is_prepared_again(tmp_path):
    path = write(tmp_path / "t.txt", "abcabc")
    _, old = load_corpus(path)
    write(path, "xyzxyz and more")
    _, new = load_corpus(path)                 # replaces the id file (os.replace)
    assert_same_as_char_tokenizer(CharTokenizer.from_text("abcabc"), old, "abcabc")
    assert_same_as_char_tokenizer(CharTokenizer.from_text("xyzxyz and more"), new,
                                  "xyzxyz and more")


def test_the_id_file_gets_a_normal_files_mode_not_mkstemps_0600(tmp_path):
    old = os.umask(0o022)
    try:
        load_corpus(write(tmp_path / "t.txt", MIXED))
    finally:
        os.umask(old)
    mode = os.stat(tmp_path / "t.txt.microtensor-ids").st_mode & 0o777
    assert mode == 0o644, f"expected 0o644 (0o666 less umask 0o022), got {oct(mode)}"
    assert sorted(os.listdir(tmp_path)) == ["t.txt", "t.txt.microtensor-ids"], (
        f"expected no temporary left behind; got {sorted(os.listdir(tmp_path))}")


@pytest.mark.parametrize("damage", ["truncate", "garbage header"])
def test_a_corrupt_id_file_is_prepared_again_not_trusted(tmp_path, damage):
    path = write(tmp_path / "t.txt", MIXED)
    load_corpus(path)
    cache = tmp_path / "t.txt.microtensor-ids"
    raw = cache.read_bytes()
    cache.write_bytes(raw[:-5] if damage == "truncate" else b"x" * 40 + raw[40:])
    with pytest.warns(UserWarning, match="t.txt.microtensor-ids.*corrupt"):
        tokenizer, ids = load_corpus(path)
    assert_same_as_char_tokenizer(tokenizer, ids, MIXED)
    assert cache.read_bytes() == raw, "the id file was not written again"


def refuse_to_write(monkeypatch, directory=None):
    """Make creating files fail as in a read-only directory: in `directory`, or anywhere when
    None (a chmod would not stop root, who runs some test machines)."""
    real_mkstemp = tempfile.mkstemp

    def mkstemp(dir, **kwargs):
        if directory is None or os.path.samefile(dir, directory):
            raise PermissionError(13, "Permission denied", dir)
        return real_mkstemp(dir=dir, **kwargs)

    monkeypatch.setattr(tempfile, "mkstemp", mkstemp)


def test_a_read_only_directory_falls_back_to_the_user_cache_dir(tmp_path, monkeypatch):
    data_dir, cache_home = tmp_path / "readonly", tmp_path / "home-cache"
    data_dir.mkdir()
    path = write(data_dir / "t.txt", MIXED)
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache_home))
    refuse_to_write(monkeypatch, data_dir)
    written = count_writes(monkeypatch)
    load_corpus(path)
    tokenizer, ids = load_corpus(path)
    assert os.listdir(data_dir) == ["t.txt"], f"wrote into read-only dir: {os.listdir(data_dir)}"
    tried = [os.path.dirname(p) for p in written]   # beside the file, then the fallback, once
    assert tried == [str(data_dir), str(cache_home / "microtensor")], f"got {tried}"
    assert os.listdir(cache_home / "microtensor")[0].startswith("t.txt-")
    assert_same_as_char_tokenizer(tokenizer, ids, MIXED)


def test_nowhere_to_write_is_an_error_naming_the_file(tmp_path, monkeypatch):
    path = write(tmp_path / "t.txt", MIXED)
    refuse_to_write(monkeypatch)
    with pytest.raises(OSError, match="cannot store the prepared ids of data file.*t.txt.*"
                                      "Permission denied.*cache.*Permission denied"):
        load_corpus(path, cache_dir=tmp_path / "cache")


@pytest.mark.parametrize("read", [load_corpus])
def test_missing_directory_and_empty_files_are_named(tmp_path, read):
    with pytest.raises(FileNotFoundError, match="nope.txt"):
        read(tmp_path / "nope.txt")
    with pytest.raises(IsADirectoryError):
        read(tmp_path)
    with pytest.raises(ValueError, match="empty.txt.*empty"):
        read(write(tmp_path / "empty.txt", ""))


@pytest.mark.parametrize("read", [load_corpus, lambda path: load_corpus(path, chunk_size=4)])
def test_non_utf8_byte_is_named_with_its_offset_in_the_file(tmp_path, read):
    path = tmp_path / "latin1.txt"
    path.write_bytes("abcdéfghijcaf\xe9".encode("latin-1"))   # 0xe9 at offsets 4 and 13
    with pytest.raises(ValueError, match="latin1.txt.*not UTF-8.*0xe9 at offset 4 "):
        read(path)
    path.write_bytes(b"abcdefghijcaf" + "é".encode()[:1])  # the file ends mid-character
    with pytest.raises(ValueError, match="latin1.txt.*not UTF-8.*0xc3 at offset 13 "):
        read(path)


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


def test_split_and_batches_of_an_id_file_equal_those_of_int64_ids(tmp_path):
    text = MIXED * 5
    _, ids = load_corpus(write(tmp_path / "t.txt", text))
    reference = np.array(CharTokenizer.from_text(text).encode(text), dtype=np.int64)
    for mapped, expected in zip(split_ids(ids, 8), split_ids(reference, 8)):
        np.testing.assert_array_equal(mapped, expected)
        x, y = get_batch(mapped, 4, 8, np.random.default_rng(0))
        x_ref, y_ref = get_batch(expected, 4, 8, np.random.default_rng(0))
        assert x.dtype == y.dtype == np.int64, f"expected int64 batches, got {x.dtype}"
        np.testing.assert_array_equal(x, x_ref)
        np.testing.assert_array_equal(y, y_ref)


def batch_as_before(ids, batch_size, block_size, generator):
    """get_batch as it was when the ids were an np.memmap (nanoGPT's): x and y gathered apart."""
    starts = generator.integers(0, len(ids) - block_size, size=batch_size)
    window = starts[:, None] + np.arange(block_size)
    return ids[window].astype(np.int64), ids[window + 1].astype(np.int64)


@pytest.mark.parametrize("wide", [False, True], ids=["uint8", "uint16"])
def test_batches_of_an_id_file_are_those_drawn_before_for_the_same_seed(tmp_path, wide):
    text = ("".join(chr(0x4E00 + i) for i in range(300)) if wide else "") + MIXED * 5
    _, ids = load_corpus(write(tmp_path / "t.txt", text))
    reference = np.array(CharTokenizer.from_text(text).encode(text), dtype=np.int64)
    assert ids.dtype == (np.uint16 if wide else np.uint8), f"got {ids.dtype}"
    train, reference_train = split_ids(ids, 16)[0], split_ids(reference, 16)[0]
    ours, before = np.random.default_rng(7), np.random.default_rng(7)
    for _ in range(20):
        for got, expected in zip(get_batch(train, 12, 16, ours),
                                 batch_as_before(reference_train, 12, 16, before)):
            np.testing.assert_array_equal(got, expected, err_msg="batch differs from before")
    microtensor.manual_seed(5)
    got = get_batch(train, 12, 16)
    microtensor.manual_seed(5)
    expected = batch_as_before(reference_train, 12, 16, microtensor.random.generator())
    np.testing.assert_array_equal(got, expected, err_msg="manual_seed batch differs")


def test_an_id_file_slices_and_windows_equal_numpy_slicing(tmp_path):
    _, ids = load_corpus(write(tmp_path / "t.txt", MIXED))
    reference = np.asarray(ids)
    assert reference.dtype == np.uint8 and len(reference) == len(ids) == len(MIXED)
    part = ids[10:-20]
    assert isinstance(part, IdFile) and len(part) == len(MIXED) - 30, f"got {part!r}"
    np.testing.assert_array_equal(part, reference[10:-20])
    np.testing.assert_array_equal(part[5:9], reference[15:19])
    np.testing.assert_array_equal(part.windows([0, 3, len(part) - 7], 7),
                                  [reference[10:17], reference[13:20], reference[-27:-20]])
    assert len(ids[50:40]) == 0, "an empty slice has no ids"


def test_an_id_file_refuses_windows_outside_it_and_indexes_that_are_not_slices(tmp_path):
    _, ids = load_corpus(write(tmp_path / "t.txt", MIXED))
    train, _ = split_ids(ids, 8)
    with pytest.raises(IndexError, match=f"window of 9 ids at {len(train) - 8} leaves"):
        train.windows([0, len(train) - 8], 9)  # would read the validation split's first id
    with pytest.raises(IndexError, match="window of 9 ids at -1"):
        train.windows([-1], 9)
    with pytest.raises(TypeError, match="slices ids.a:b.; got 3"):
        ids[3]
    with pytest.raises(ValueError, match="step 1; got step 2"):
        ids[::2]


def test_an_id_file_stays_open_while_a_slice_lives_and_is_closed_after(tmp_path):
    _, ids = load_corpus(write(tmp_path / "t.txt", MIXED))
    file, expected = ids._file, np.asarray(ids)[-20:]
    val = ids[-20:]
    del ids
    gc.collect()
    np.testing.assert_array_equal(val, expected, err_msg="a slice outlives the whole")
    del val
    assert file.closed, "the file is still open with no IdFile left"


def test_an_id_file_truncated_while_in_use_is_an_error_naming_it(tmp_path):
    path = write(tmp_path / "t.txt", MIXED)
    _, ids = load_corpus(path)
    cache = tmp_path / "t.txt.microtensor-ids"
    cache.write_bytes(cache.read_bytes()[:-10])   # the same file, shortened in place
    with pytest.raises(OSError, match="t.txt.microtensor-ids.*ends early"):
        ids.windows([len(ids) - 5], 5)


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
    _, y = get_batch(ids, 3, 8)
    np.testing.assert_array_equal(y[:, -1], 8)
