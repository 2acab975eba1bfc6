"""The byte-level BPE (models/bpe.py): the worked example, the fast trainer against the naive
one, encode/decode round trips on any text and any bytes, and the bpe.json loader's refusals."""
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from models.bpe import BPETokenizer, chunks, merge, merge_step, train_merges
from models.bpe_file import load_bpe
from models.interop.bpe_tokenizer_json import save_bpe
from models.schema import FileError


def shipped_text():
    """~200 kB of English that ships with Python (the default corpus of models/training)."""
    from pydoc_data.topics import topics
    return "".join(topics[k] for k in sorted(topics))[:200_000]


def naive_merges(text, vocab_size):
    """The textbook loop: recount every pair of every chunk before each merge."""
    chunk_ids, merges = [list(c) for c in chunks(text)], []
    while len(merges) < vocab_size - 256:
        pair, chunk_ids = merge_step(chunk_ids, 256 + len(merges))
        if pair is None:
            break
        merges.append(pair)
    return merges


def test_wikipedia_example_merges_aa_then_ab_then_ZY():
    # "aaabdaaabac": aa -> Z (256), ab -> Y (257), ZY -> X (258), leaving "XdXac"
    a, b = ord("a"), ord("b")
    got = train_merges("aaabdaaabac", 259)
    assert got == [(a, a), (a, b), (256, 257)], f"expected aa, ab, ZY; got {got}"
    ids = BPETokenizer(got).encode("aaabdaaabac")
    assert ids == [258, ord("d"), 258, a, ord("c")], f"expected XdXac; got {ids}"


def test_merge_is_left_to_right_without_overlap():
    assert merge([1, 1, 1], (1, 1), 9) == [9, 1]
    assert merge([1, 1, 1, 1], (1, 1), 9) == [9, 9]
    assert merge([2, 1, 3], (1, 2), 9) == [2, 1, 3]


def test_tie_goes_to_the_smallest_pair():
    # "ab" and "cd" both occur twice; (97, 98) < (99, 100), so ab is merged first
    got = train_merges("cd,ab,cd,ab", 257)
    assert got == [(ord("a"), ord("b"))], f"expected the smaller pair (a, b); got {got}"


def test_merges_never_cross_a_word_boundary():
    # " t" + "he" would be frequent across words if chunks were ignored: "e t" never merges
    merges = train_merges("the the the the", 300)
    tok = BPETokenizer(merges)
    for token in tok.vocab[256:]:
        assert b"e " not in token and b"e t" not in token, f"a merge crosses a word: {token!r}"


@pytest.mark.parametrize("vocab_size", [300, 600])
def test_incremental_trainer_equals_the_naive_recount(vocab_size):
    text = shipped_text()[:30_000]
    fast, slow = train_merges(text, vocab_size), naive_merges(text, vocab_size)
    first = next((k for k, (f, s) in enumerate(zip(fast, slow)) if f != s), None)
    assert fast == slow, f"merge {first} differs: expected {slow[first:first + 1]}, got " \
                         f"{fast[first:first + 1]}"


def test_encoding_the_training_text_replays_the_training_merges():
    # after training, each chunk of the training text is what the trainer left: encode agrees
    text = shipped_text()[:20_000]
    tok = BPETokenizer.train(text, 500)
    chunk_ids = [list(c) for c in chunks(text)]
    for k, pair in enumerate(tok.merges):
        chunk_ids = [merge(ids, pair, 256 + k) for ids in chunk_ids]
    expected = [i for ids in chunk_ids for i in ids]
    assert tok.encode(text) == expected


@pytest.fixture(scope="module")
def tok():
    return BPETokenizer.train(shipped_text(), 1000)


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_decode_encode_is_the_identity_on_any_string(tok, text):
    assert tok.decode(tok.encode(text)) == text


@settings(max_examples=300, deadline=None)
@given(st.binary())
def test_decode_bytes_encode_is_the_identity_on_any_bytes(tok, data):
    assert tok.decode_bytes(tok.encode(data)) == data


def test_decode_replaces_invalid_utf8_instead_of_raising(tok):
    ids = tok.encode("é")  # two bytes; the first alone is not UTF-8
    assert tok.decode(tok.encode(b"\xc3")) == "\ufffd"
    assert tok.decode(ids) == "é"


def test_decode_refuses_ids_outside_the_vocabulary(tok):
    with pytest.raises(ValueError, match=r"token id 1000 is outside the vocabulary \[0, 1000\)"):
        tok.decode([1000])
    with pytest.raises(TypeError, match="not an int"):
        tok.decode([True])


def test_vocab_size_below_256_is_refused():
    with pytest.raises(ValueError, match="vocab_size is 255; expected an int >= 256"):
        train_merges("abc", 255)


def test_save_load_round_trip(tok, tmp_path):
    save_bpe(tok, tmp_path / "bpe.json")
    back = load_bpe(tmp_path / "bpe.json")
    assert back.merges == tok.merges
    assert back.encode("To be, or not to be") == tok.encode("To be, or not to be")


GOOD = {"format": "microtensor-bpe", "version": 1, "pattern": "gpt2", "merges": [[97, 97]]}


@pytest.mark.parametrize("change, message", [
    ({"merges": [[97, "a"]]}, r"merges\[0\]\[1\] is 'a' \(a string\)"),
    ({"merges": [[97, True]]}, r"merges\[0\]\[1\] is True"),
    ({"merges": [[97, 256]]}, r"merges\[0\] is \[97, 256\]; expected ids below 256"),
    ({"merges": [[97, -1]]}, r"merges\[0\]\[1\] is -1"),
    ({"merges": [[97, 97], [97, 97]]}, r"merges\[1\] is \[97, 97\], which repeats merges\[0\]"),
    ({"merges": [[97, 97, 97]]}, r"merges\[0\] has 3 entries"),
    ({"merges": {"0": [97, 97]}}, r"merges is .* \(an object\); expected an array"),
    ({"format": "pickle"}, r"format is 'pickle'"),
    ({"version": 2}, r"version is 2"),
])
def test_hostile_bpe_files_are_refused_in_one_line(tmp_path, change, message):
    path = tmp_path / "bpe.json"
    path.write_text(json.dumps({**GOOD, **change}))
    with pytest.raises(FileError, match=message) as info:
        load_bpe(path)
    assert "\n" not in str(info.value)


def test_an_oversized_bpe_file_is_refused_unread(tmp_path, monkeypatch):
    import models.bpe_file as bpe_file
    monkeypatch.setattr(bpe_file, "MAX_BPE_BYTES", 100)
    path = tmp_path / "bpe.json"
    path.write_text(json.dumps({**GOOD, "merges": [[97, 97]] + [[97, 256 + k] for k in range(50)]}))
    with pytest.raises(FileError, match="at most 100"):
        load_bpe(path)


@pytest.mark.parametrize("change, message", [
    (lambda b: b["merges"].append([97, 99999]), r"info\.bpe: merges\[\d+\] is \[97, 99999\]"),
    (lambda b: b["merges"].__setitem__(1, b["merges"][0]), r"merges\[1\] .* repeats merges\[0\]"),
    (lambda b: b["merges"].__setitem__(0, ["a", 97]), r"info\.bpe\.merges\[0\]\[0\] is 'a'"),
    (lambda b: b["merges"].pop(), r"info\.bpe has \d+ tokens but model_config\.vocab_size"),
])
def test_a_checkpoint_with_a_hostile_bpe_is_refused_in_one_line(tmp_path, change, message):
    from models import GPT, GPTConfig
    from models.training.checkpoint import load_checkpoint, save_model
    tok = BPETokenizer.train("the cat sat on the mat " * 20, 270)
    model = GPT(GPTConfig(vocab_size=tok.vocab_size, block_size=8, n_layer=1, n_head=1,
                          n_embd=8))
    save_model(tmp_path, model, tok)
    assert load_checkpoint(tmp_path)[1].merges == tok.merges  # untouched, it loads
    config = json.loads((tmp_path / "config.json").read_text())
    change(config["info"]["bpe"])
    (tmp_path / "config.json").write_text(json.dumps(config))
    with pytest.raises(ValueError, match=message) as info:
        load_checkpoint(tmp_path)
    assert "\n" not in str(info.value)
