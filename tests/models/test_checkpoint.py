"""Checkpoints: an exact round trip, atomic writes, clear errors for missing or broken files."""
import json
import os

import numpy as np
import pytest

import microtensor
from models import GPT, GPTConfig, CharTokenizer
from models.checkpoint import CONFIG_FILE, WEIGHTS_FILE, _atomic_write, load_checkpoint, save_checkpoint


def saved(tmp_path, **config):
    microtensor.manual_seed(0)
    tok = CharTokenizer.from_text("hello, world\n")
    model = GPT(GPTConfig(vocab_size=tok.vocab_size, block_size=8, n_layer=1, n_head=2,
                          n_embd=8, **config))
    save_checkpoint(tmp_path, model, tok, {"iter": 7, "best_val_loss": 1.5})
    return model, tok


@pytest.mark.parametrize("config", [{}, dict(bias=False, norm_first=False, activation="relu")])
def test_round_trip_gives_identical_logits(tmp_path, config):
    model, tok = saved(tmp_path, **config)
    loaded, loaded_tok, state = load_checkpoint(tmp_path)
    assert loaded.config == model.config
    assert loaded_tok.chars == tok.chars
    assert state == {"iter": 7, "best_val_loss": 1.5}
    assert not loaded.training
    idx = np.array([tok.encode("hello")])
    model.eval()
    np.testing.assert_array_equal(loaded(idx)[0].data, model(idx)[0].data)


def test_save_leaves_only_the_checkpoint_files(tmp_path):
    saved(tmp_path)
    saved(tmp_path)                                         # overwriting works too
    assert sorted(os.listdir(tmp_path)) == [CONFIG_FILE, WEIGHTS_FILE]
    meta = json.loads((tmp_path / CONFIG_FILE).read_text(encoding="utf-8"))
    assert meta["vocab"] == sorted(set("hello, world\n"))


def test_interrupted_write_keeps_the_old_file(tmp_path):
    target = tmp_path / "f.json"
    target.write_text("old")

    def crash(f):
        f.write(b"half")
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        _atomic_write(str(target), crash)
    assert target.read_text() == "old"
    assert os.listdir(tmp_path) == ["f.json"]


def test_missing_directory(tmp_path):
    with pytest.raises(FileNotFoundError, match="does not exist"):
        load_checkpoint(tmp_path / "nope")


@pytest.mark.parametrize("missing", [WEIGHTS_FILE, CONFIG_FILE])
def test_incomplete_checkpoint(tmp_path, missing):
    saved(tmp_path)
    os.remove(tmp_path / missing)
    with pytest.raises(FileNotFoundError, match=f"incomplete.*{missing}"):
        load_checkpoint(tmp_path)


def test_broken_config(tmp_path):
    saved(tmp_path)
    (tmp_path / CONFIG_FILE).write_text("{not json")
    with pytest.raises(ValueError, match=CONFIG_FILE):
        load_checkpoint(tmp_path)


def test_weights_that_need_pickle_are_refused(tmp_path):
    saved(tmp_path)
    np.savez(tmp_path / WEIGHTS_FILE, evil=np.array([object()], dtype=object))
    with pytest.raises(ValueError, match=WEIGHTS_FILE):
        load_checkpoint(tmp_path)


def test_weights_that_do_not_match_the_config(tmp_path):
    saved(tmp_path)
    state = dict(np.load(tmp_path / WEIGHTS_FILE))
    state["wte.weight"] = state["wte.weight"][:, :4]
    np.savez(tmp_path / WEIGHTS_FILE, **state)
    with pytest.raises(ValueError, match="wte.weight"):
        load_checkpoint(tmp_path)
