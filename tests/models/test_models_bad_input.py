"""models' API under odd input: generate's arguments, hand-edited settings, broken checkpoints.

Each error names the argument, the value and what was expected.
"""
import json

import numpy as np
import pytest

import microtensor
from models import GPT, CharTokenizer, GPTConfig, Seq2SeqConfig
from models.training import checkpoint as ckpt
from models.training.out_dir import CheckpointError, read_manifest
from models.training.settings import TrainConfig, TranslateConfig


@pytest.fixture
def model():
    microtensor.manual_seed(0)
    return GPT(GPTConfig(vocab_size=5, block_size=4, n_layer=1, n_head=2, n_embd=8)).eval()


@pytest.mark.parametrize("kwargs, message", [
    (dict(max_new_tokens=-1), "max_new_tokens must be an int >= 0; got -1"),
    (dict(max_new_tokens=2.5), "max_new_tokens must be an int >= 0; got 2.5"),
    (dict(max_new_tokens=2, temperature=float("nan")),
     "temperature must be a finite number >= 1.175e-38"),
    (dict(max_new_tokens=2, temperature=float("inf")),
     "temperature must be a finite number >= 1.175e-38"),
    (dict(max_new_tokens=2, top_k=1.5), "top_k must be an int >= 1 or None; got 1.5"),
])
def test_generate_refuses_odd_arguments(model, kwargs, message):
    with pytest.raises(ValueError, match=message):
        model.generate(np.zeros((1, 2), np.int64), **kwargs)


def test_generate_refuses_float_ids_as_forward_does(model):
    with pytest.raises(TypeError, match="idx must hold integer token ids; got dtype float64"):
        model.generate(np.zeros((1, 2)), 2)


def test_generate_zero_tokens_returns_the_prompt(model):
    idx = np.array([[1, 2]])
    out = model.generate(idx, 0)
    assert np.array_equal(out, idx), f"expected the prompt {idx}; got {out}"


@pytest.mark.parametrize("name, value, expected", [
    ("learning_rate", "big", r"learning_rate is 'big' \(a string\); expected a finite number"),
    ("n_layer", True, r"n_layer is True \(a boolean\); expected an integer"),
    ("block_size", 16.5, r"block_size is 16.5 \(a number\); expected an integer"),
    ("bias", "no", r"bias is 'no' \(a string\); expected true or false"),
    ("activation", 3, r"activation is 3 \(an integer\); expected a string"),
])
def test_train_config_from_dict_names_a_setting_of_the_wrong_type(name, value, expected):
    with pytest.raises(ValueError, match=expected):
        TrainConfig.from_dict({**TrainConfig().to_dict(), name: value})


def test_train_config_from_dict_accepts_what_json_gives_back():
    saved = json.loads(json.dumps(TrainConfig(learning_rate=1.0, lr_decay_iters=None).to_dict()))
    assert TrainConfig.from_dict(saved) == TrainConfig(learning_rate=1.0), (
        "expected 1.0 read back as 1 to be a valid float setting")


def saved(tmp_path, model):
    tok = CharTokenizer(list("abcde"))
    return ckpt.save_model(tmp_path, model, tok)


def test_a_model_config_far_larger_than_its_snapshot_is_refused_before_allocating(tmp_path, model):
    saved(tmp_path, model)
    manifest = json.loads((tmp_path / "config.json").read_text())
    manifest["model_config"].update(n_embd=10 ** 12, n_head=1)
    (tmp_path / "config.json").write_text(json.dumps(manifest))
    with pytest.raises(CheckpointError, match="model_config describes a model of "
                                              "12,000,000,000,024,000,000,000,000 numbers; "
                                              "the snapshot holds 960"):
        ckpt.load_checkpoint(tmp_path)


@pytest.mark.parametrize("entry, message", [
    (dict(iter=True), r"best.iter is True \(a boolean\); expected an integer >= 0"),
    (dict(iter=-1), r"best.iter is -1 \(an integer\); expected an integer >= 0"),
    (dict(val_loss=True), r"best.val_loss is True \(a boolean\); expected null or a finite")])
def test_a_bool_or_negative_iter_in_config_json_is_refused(tmp_path, model, entry, message):
    saved(tmp_path, model)
    manifest = json.loads((tmp_path / "config.json").read_text())
    manifest["best"].update(entry)
    (tmp_path / "config.json").write_text(json.dumps(manifest))
    with pytest.raises(CheckpointError, match=message):
        read_manifest(tmp_path)


def test_a_save_whose_info_is_not_utf8_json_writes_nothing(tmp_path, model):
    snapshot = ckpt.Snapshot(0, 1.0, ckpt.model_arrays(model))
    with pytest.raises(CheckpointError, match="info cannot be written as UTF-8 JSON"):
        ckpt.save_checkpoint(tmp_path / "o", model, {"path": "bad\udcffname"}, best=snapshot,
                             latest=snapshot)
    assert not (tmp_path / "o").exists(), "expected no snapshot written without its config.json"


@pytest.mark.parametrize("ids", [[0.5], [1.0], [True], np.array([1.0])])
def test_decode_refuses_ids_that_are_not_ints(ids):
    with pytest.raises(TypeError, match="is not an int"):
        CharTokenizer(list("ab")).decode(ids)


@pytest.mark.parametrize("config", [TrainConfig(learning_rate=1e-3, min_lr=2e-3),
                                    TranslateConfig(learning_rate=1e-3, min_lr=2e-3)],
                         ids=["train", "translate"])
def test_a_min_lr_above_the_learning_rate_is_refused_naming_both_flags(config):
    with pytest.raises(ValueError, match=r"--min-lr 0.002 is above --learning-rate 0.001: the "
                                         "cosine decay would raise the rate"):
        config.validate()


def test_a_min_lr_equal_to_the_learning_rate_is_a_constant_schedule_and_accepted():
    TrainConfig(learning_rate=1e-3, min_lr=1e-3).validate()


@pytest.mark.parametrize("make", [
    lambda: GPTConfig(vocab_size=7, block_size=4, n_layer=1, n_head=1, n_embd=4, bias="False"),
    lambda: GPTConfig(vocab_size=7, block_size=4, n_layer=1, n_head=1, n_embd=4, norm_first=0),
    lambda: Seq2SeqConfig(7, 7, 8, 4, 1, 1, 1, 4, tie_output="no"),
])
def test_a_bool_field_of_a_model_config_takes_true_or_false_only(make):
    """bias="False" is a truthy string: accepted, it would silently keep the biases."""
    with pytest.raises(ValueError, match="must be True or False; got"):
        make()
