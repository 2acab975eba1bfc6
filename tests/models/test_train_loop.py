"""The training loop: evaluations, metrics.jsonl, checkpoints, decay groups, checks.

Decay groups: weight decay on matrices only; checks: the settings' validation.
"""
import json

import pytest

import microtensor
from models import GPT, GPTConfig
from models.training import data_parallel as data_parallel_module
from models.training import train as train_module
from models.training.checkpoint import load_checkpoint
from models.training.run import configure_optimizer
from models.training.settings import PRESETS, TrainConfig, get_preset
from models.training.text_run import train_on_text

TEXT = "the quick brown fox jumps over the lazy dog. " * 40


def small(**overrides):
    kwargs = dict(n_layer=1, n_head=2, n_embd=16, block_size=16, batch_size=4, max_iters=7,
                  eval_interval=3, eval_iters=2, warmup_iters=2)
    kwargs.update(overrides)
    return TrainConfig(**kwargs)


def test_metrics_checkpoint_and_result(tmp_path, capsys):
    result = train_on_text(small(), TEXT, tmp_path, progress=False)
    records = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert [r["iter"] for r in records] == [0, 3, 6, 7]
    for r in records:
        assert set(r) == {"iter", "train_loss", "val_loss", "elapsed_s"}
        assert isinstance(r["iter"], int) and all(isinstance(r[k], float) for k in
                                                  ("train_loss", "val_loss", "elapsed_s"))
    assert result["iter"] == 7 and result["val_loss"] == records[-1]["val_loss"]
    assert "iter 7: train loss" in capsys.readouterr().out
    model, tok, manifest = load_checkpoint(tmp_path)
    assert manifest["latest"]["iter"] == 7 and manifest["info"]["train_config"]["max_iters"] == 7
    assert manifest["best"]["val_loss"] == min(r["val_loss"] for r in records)
    assert tok.decode(tok.encode(TEXT)) == TEXT


def test_overwrite_starts_a_fresh_metrics_file(tmp_path):
    train_on_text(small(), TEXT, tmp_path, progress=False)
    train_on_text(small(max_iters=3), TEXT, tmp_path, progress=False, overwrite=True)
    assert len((tmp_path / "metrics.jsonl").read_text().splitlines()) == 2
    assert load_checkpoint(tmp_path)[2]["latest"]["iter"] == 3


def test_training_lowers_the_loss(tmp_path):
    result = train_on_text(small(max_iters=60, eval_interval=60, eval_iters=4, learning_rate=1e-2),
                   TEXT, tmp_path, progress=False)
    first = json.loads((tmp_path / "metrics.jsonl").read_text().splitlines()[0])
    assert result["train_loss"] < first["train_loss"] - 0.5




def test_weight_decay_only_on_matrices():
    model = GPT(GPTConfig(vocab_size=5, block_size=4, n_layer=1, n_head=1, n_embd=4))
    decay, no_decay = configure_optimizer(model, small(weight_decay=0.1)).param_groups
    assert decay["weight_decay"] == 0.1 and no_decay["weight_decay"] == 0.0
    assert all(p.ndim >= 2 for p in decay["params"]) and all(p.ndim < 2 for p in no_decay["params"])
    assert len(decay["params"]) + len(no_decay["params"]) == len(model.parameters())


def test_presets():
    baby = PRESETS["baby"]
    assert (baby.n_layer, baby.n_head, baby.n_embd, baby.block_size, baby.batch_size) == (
        4,
        4,
        128,
        64,
        12,
    )
    assert (baby.max_iters, baby.learning_rate, baby.min_lr, baby.beta2) == (2000, 1e-3, 1e-4, 0.99)
    assert baby.bias is False and baby.dropout == 0.0
    assert get_preset("tiny", max_iters=5).max_iters == 5
    with pytest.raises(ValueError, match="unknown preset"):
        get_preset("huge")
    with pytest.raises(ValueError, match="--n-embd 15 must be divisible by --n-head 2"):
        small(n_embd=15).validate()


@pytest.mark.parametrize("setting, value, message", [
    ("max_iters", 0, "--max-iters must be >= 1; got 0"),
    ("eval_iters", -1, "--eval-iters must be >= 1; got -1"),
    ("learning_rate", float("nan"), "--learning-rate must be a finite number; got nan"),
    ("min_lr", float("inf"), "--min-lr must be a finite number; got inf"),
    ("dropout", 1.0, r"--dropout must be in \[0, 1\); got 1.0"),
    ("warmup_iters", -2, "--warmup-iters must be >= 0; got -2"),
    ("max_iters", 2.5, "--max-iters must be an integer; got 2.5"),  # the loop never reached it
    ("eval_interval", True, "--eval-interval must be an integer; got True"),
])
def test_every_setting_is_checked_naming_its_flag(setting, value, message):
    with pytest.raises(ValueError, match=message):
        small(**{setting: value}).validate()


def test_gpt_config_is_built_in_one_place():
    config = small(bias=True, norm_first=False, activation="relu", dropout=0.1)
    gpt = config.model_config(vocab_size=11)
    shape = (gpt.vocab_size, gpt.block_size, gpt.n_layer, gpt.n_head, gpt.n_embd)
    assert shape == (11, 16, 1, 2, 16), f"expected the settings' shape; got {shape}"
    assert (gpt.bias, gpt.norm_first, gpt.activation, gpt.dropout) == (True, False, "relu", 0.1)


def test_evaluating_more_often_does_not_change_what_is_trained(tmp_path):
    train_on_text(small(eval_interval=2), TEXT, tmp_path / "often", progress=False)
    train_on_text(small(eval_interval=7), TEXT, tmp_path / "rarely", progress=False)
    often, _, _ = load_checkpoint(tmp_path / "often", which="latest")
    rarely, _, _ = load_checkpoint(tmp_path / "rarely", which="latest")
    for (name, a), b in zip(often.state_dict().items(), rarely.state_dict().values()):
        assert (a == b).all(), f"{name} differs between eval_interval 2 and 7; expected equal"


def test_every_evaluation_uses_the_same_batches(tmp_path):
    model = GPT(GPTConfig(vocab_size=30, block_size=8, n_layer=1, n_head=1, n_embd=8))
    ids = microtensor.random.generator().integers(0, 30, size=200)
    first = train_module.estimate_loss(model, {"val": ids}, 3, 4, 8, seed=5)
    again = train_module.estimate_loss(model, {"val": ids}, 3, 4, 8, seed=5)
    assert first == again, f"expected identical losses for the same seed; got {first} and {again}"


def test_train_refuses_a_run_whose_settings_were_not_resolved(tmp_path):
    from models.training.data import encode_text
    from models.training.run import TrainingRun

    with pytest.raises(ValueError, match=r"settings are not resolved; call run.settings"):
        train_module.train(TrainingRun(tmp_path / "out"), encode_text(TEXT), progress=False)
    assert not (tmp_path / "out").exists(), "expected nothing written for a refused run"


def test_one_process_trains_without_building_data_parallel(tmp_path, monkeypatch):
    """processes=1 runs the loop's own forward and loss.backward(); DataParallel is for > 1."""
    def refuse(*args, **kwargs):
        raise AssertionError("expected no DataParallel for processes=1")
    monkeypatch.setattr(data_parallel_module, "DataParallel", refuse)
    result = train_on_text(small(), TEXT, tmp_path / "alone", progress=False)
    assert result["iter"] == 7, f"expected 7 iterations trained, got {result['iter']}"
