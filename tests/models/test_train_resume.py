"""Resume is exact: a stopped and resumed run ends as one run in one go.

A run stopped by SIGINT or SIGTERM at any step and resumed ends with bit-identical arrays
and the same metrics; best vs latest; NaN stops keep the last good checkpoint.
"""
import hashlib
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import nn
from models.training import train as train_module
from models.training.checkpoint import load_checkpoint
from models.training.out_dir import CONFIG_FILE
from models.training.run import Interrupted, NonFiniteLoss
from models.training.settings import TrainConfig
from models.training.text_run import train_on_text

TEXT = "the quick brown fox jumps over the lazy dog. " * 40
ROOT = Path(__file__).resolve().parents[2]


def config(**overrides):
    """12 steps of a 1-layer GPT with dropout, so that every random stream matters."""
    kwargs = dict(n_layer=1, n_head=2, n_embd=16, block_size=16, batch_size=4, max_iters=12,
                  eval_interval=4, eval_iters=2, warmup_iters=2, dropout=0.1)
    kwargs.update(overrides)
    return TrainConfig(**kwargs)


def saved(out):
    """{(snapshot, array name): array} of every array the checkpoint in `out` holds."""
    manifest = json.loads((Path(out) / CONFIG_FILE).read_text())
    arrays = {}
    for which in ("best", "latest"):
        with np.load(Path(out) / manifest[which]["file"]) as npz:
            arrays.update({(which, name): npz[name] for name in npz.files})
    return arrays


def metrics(out):
    return [{k: r[k] for k in ("iter", "train_loss", "val_loss")}
            for r in map(json.loads, (Path(out) / "metrics.jsonl").read_text().splitlines())]


def assert_same_run(out, reference):
    ours, theirs = saved(out), saved(reference)
    assert sorted(ours) == sorted(theirs), "expected the same saved arrays"
    for key, array in theirs.items():
        assert np.array_equal(ours[key], array), f"{key} differs from the uninterrupted run"
    assert metrics(out) == metrics(reference), "expected the same metrics.jsonl records"


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    out = tmp_path_factory.mktemp("reference")
    train_on_text(config(), TEXT, out, progress=False)
    return out


def signal_at_step(monkeypatch, step, signum):
    """Send `signum` to this process while the batch of step number `step` (1-based) is drawn."""
    calls = []
    real_get_batch = train_module.get_batch

    def get_batch(ids, batch_size, block_size, generator=None):
        if generator is None:  # a training batch (evaluations bring their own generator)
            calls.append(1)
            if len(calls) == step:
                os.kill(os.getpid(), signum)
        return real_get_batch(ids, batch_size, block_size, generator)

    monkeypatch.setattr(train_module, "get_batch", get_batch)


def latest_iter(out):
    return json.loads((Path(out) / CONFIG_FILE).read_text())["latest"]["iter"]


@pytest.mark.parametrize("step, signum", [(1, signal.SIGINT), (5, signal.SIGTERM),
                                          (8, signal.SIGINT), (11, signal.SIGTERM)])
def test_a_signal_saves_the_state_and_resuming_ends_bit_identical(tmp_path, monkeypatch,
                                                                  reference, step, signum):
    handler_before = signal.getsignal(signum)
    signal_at_step(monkeypatch, step, signum)
    with pytest.raises(Interrupted) as stop:
        train_on_text(config(), TEXT, tmp_path, progress=False)
    assert stop.value.exit_status == 128 + signum
    assert latest_iter(tmp_path) == step, "expected the state after the step the signal hit"
    assert signal.getsignal(signum) is handler_before, "expected the old handler back"
    monkeypatch.undo()
    train_on_text(config(), TEXT, tmp_path, progress=False, resume=True)
    assert_same_run(tmp_path, reference)


def test_two_interruptions_and_two_resumes_end_bit_identical(tmp_path, monkeypatch, reference):
    for step, signum in [(3, signal.SIGTERM), (4, signal.SIGINT)]:  # stops at iters 3, then 7
        signal_at_step(monkeypatch, step, signum)
        with pytest.raises(Interrupted):
            train_on_text(config(), TEXT, tmp_path, progress=False, resume=os.path.exists(
                tmp_path / CONFIG_FILE))
        monkeypatch.undo()
    assert latest_iter(tmp_path) == 7
    train_on_text(config(), TEXT, tmp_path, progress=False, resume=True)
    assert_same_run(tmp_path, reference)


def test_metrics_written_after_the_saved_state_are_dropped_on_resume(tmp_path, monkeypatch,
                                                                     reference):
    signal_at_step(monkeypatch, 6, signal.SIGTERM)
    with pytest.raises(Interrupted):
        train_on_text(config(), TEXT, tmp_path, progress=False)
    monkeypatch.undo()
    with open(tmp_path / "metrics.jsonl", "a", encoding="utf-8") as f:  # as a crash leaves them:
        f.write('{"iter": 8, "train_loss": 1.0, "val_loss": 1.0, "elapsed_s": 1.0}\n{"iter": 1')
    train_on_text(config(), TEXT, tmp_path, progress=False, resume=True)
    assert_same_run(tmp_path, reference)


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_real_signal_to_the_command_saves_exits_128_plus_n_and_resumes_exactly(tmp_path,
                                                                               signum):
    from models.cli.main import main

    corpus = tmp_path / "corpus.txt"
    corpus.write_text(TEXT, encoding="utf-8")
    settings = ["--data", str(corpus), "--n-layer", "1", "--n-head", "2", "--n-embd", "16",
                "--block-size", "16", "--batch-size", "4", "--eval-interval", "5",
                "--eval-iters", "2", "--warmup-iters", "2", "--lr-decay-iters", "30",
                "--dropout", "0.1", "--quiet"]
    process = subprocess.Popen(
        [sys.executable, "-m", "models", "train", "--out", str(tmp_path / "run"),
         "--max-iters", "100000"] + settings, cwd=ROOT, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True, env=dict(os.environ, PYTHONUNBUFFERED="1"))
    try:
        for line in process.stdout:
            if line.startswith("iter 5:"):  # five steps in: the signal lands mid-training
                break
        process.send_signal(signum)
        _, err = process.communicate(timeout=60)
    finally:
        process.kill()
    assert process.returncode == 128 + signum, f"expected exit {128 + signum}; stderr: {err}"
    assert "Traceback" not in err and "--resume" in err
    stopped = latest_iter(tmp_path / "run")
    assert stopped >= 5, f"expected the state of iter 5 or later; got iter {stopped}"
    total = str(stopped + 3)
    assert main(["train", "--out", str(tmp_path / "run"), "--resume", "--max-iters", total,
                 "--quiet"]) == 0
    assert main(["train", "--out", str(tmp_path / "ref"), "--max-iters", total] + settings) == 0
    assert_same_run(tmp_path / "run", tmp_path / "ref")


def test_config_json_names_the_best_and_the_latest_iteration(tmp_path, monkeypatch):
    losses = iter([3.0, 2.0, 2.5, 2.6])  # validation loss at iters 0, 4, 8, 12: best at 4

    def estimate_loss(*args, **kwargs):
        value = next(losses)
        return {"train": value, "val": value}

    fixed = dict(lr_decay_iters=12)  # so the 4-step run below follows the same schedule
    monkeypatch.setattr(train_module, "estimate_loss", estimate_loss)
    train_on_text(config(**fixed), TEXT, tmp_path / "run", progress=False)
    monkeypatch.undo()
    manifest = json.loads((tmp_path / "run" / CONFIG_FILE).read_text())
    assert (manifest["best"]["iter"], manifest["best"]["val_loss"]) == (4, 2.0)
    assert (manifest["latest"]["iter"], manifest["latest"]["val_loss"]) == (12, 2.6)
    train_on_text(config(max_iters=4, **fixed), TEXT, tmp_path / "four", progress=False)
    best, _, _ = load_checkpoint(tmp_path / "run")               # what `sample` reads
    at_four, _, _ = load_checkpoint(tmp_path / "four", which="latest")
    for name, array in at_four.state_dict().items():
        assert np.array_equal(best.state_dict()[name], array), f"best {name}: expected iter 4's"


def test_a_nan_loss_stops_naming_the_iteration_and_keeps_the_last_good_checkpoint(tmp_path,
                                                                                  monkeypatch):
    real_step, steps = nn.optim.AdamW.step, []

    def step_then_poison(self):  # the 6th update leaves NaN weights: iter 6's loss is NaN
        real_step(self)
        steps.append(1)
        if len(steps) == 6:
            for group in self.param_groups:
                for p in group["params"]:
                    p.data[...] = np.nan

    monkeypatch.setattr(nn.optim.AdamW, "step", step_then_poison)
    with pytest.raises(NonFiniteLoss, match="training loss is nan at iter 6") as stop:
        train_on_text(config(), TEXT, tmp_path, progress=False)
    assert "latest iter 4" in str(stop.value), "expected the message to name what is kept"
    model, _, manifest = load_checkpoint(tmp_path, which="latest")
    assert manifest["latest"]["iter"] == 4
    assert all(np.isfinite(a).all() for a in model.state_dict().values())


def _edit_latest(out, edit_manifest=None, edit_arrays=None):
    """Hand-edit the latest state of the checkpoint in `out` (its size and SHA-256 kept true)."""
    path = Path(out) / CONFIG_FILE
    manifest = json.loads(path.read_text())
    snapshot = Path(out) / manifest["latest"]["file"]
    if edit_arrays:
        with np.load(snapshot) as npz:
            arrays = dict(npz)
        edit_arrays(arrays)
        with open(snapshot, "wb") as f:
            np.savez(f, **arrays)
        manifest["latest"]["bytes"] = snapshot.stat().st_size
        manifest["latest"]["sha256"] = hashlib.sha256(snapshot.read_bytes()).hexdigest()
    if edit_manifest:
        edit_manifest(manifest)
    path.write_text(json.dumps(manifest))


def test_a_resume_refuses_optimizer_hyperparameters_its_settings_do_not_give(tmp_path):
    """The settings (info.train_config) say how a resumed run trains: a hand-edited
    latest.param_groups weight decay would otherwise be trained with, silently."""
    train_on_text(config(max_iters=4), TEXT, tmp_path, progress=False)
    _edit_latest(tmp_path, edit_manifest=lambda m: m["latest"]["param_groups"][0].update(
        weight_decay=0.5))
    with pytest.raises(ValueError) as refused:
        train_on_text(config(max_iters=8), TEXT, tmp_path, progress=False, resume=True)
    expected = "latest.param_groups[0].weight_decay is 0.5"
    assert expected in str(refused.value), f"expected {expected!r}; got {refused.value}"
    assert latest_iter(tmp_path) == 4, "a refused resume should leave the checkpoint as it was"


def test_a_resume_refuses_a_step_count_that_is_not_a_whole_number(tmp_path):
    """AdamW's bias correction divides by 1 − β^step: a step of 2.5 would be trained with."""
    train_on_text(config(max_iters=4), TEXT, tmp_path, progress=False)
    _edit_latest(tmp_path, edit_arrays=lambda a: a.update({"optimizer/0/step": np.array(2.5)}))
    with pytest.raises(ValueError) as refused:
        train_on_text(config(max_iters=8), TEXT, tmp_path, progress=False, resume=True)
    expected = "optimizer/0/step is float64"
    assert expected in str(refused.value), f"expected {expected!r}; got {refused.value}"
