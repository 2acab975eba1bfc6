"""Data parallel training (models/training/data_parallel.py): shares of a batch give its gradient.

Processes that each backpropagate (n_i / B) · L_i of their rows give, summed, the gradient
of the full batch's mean loss; a run on two processes follows a run on one, resumes bit
for bit, and leaves no process behind however it ends.
"""
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import microtensor
import nn
from models import GPT, GPTConfig
from models.cli.main import main
from models.training import train as train_module
from models.training.data_parallel import DataParallel, share_sizes
from models.training.run import Interrupted, NonFiniteLoss
from models.training.settings import TrainConfig
from models.training.text_run import train_on_text

ROOT = Path(__file__).resolve().parents[2]
TEXT = "the quick brown fox jumps over the lazy dog. " * 40


def config(**overrides):
    kwargs = dict(n_layer=1, n_head=2, n_embd=16, block_size=16, batch_size=5, max_iters=8,
                  eval_interval=4, eval_iters=2, warmup_iters=2)
    kwargs.update(overrides)
    return TrainConfig(**kwargs)


def float64_gpt(dropout=0.0):
    microtensor.manual_seed(0)
    model = GPT(GPTConfig(vocab_size=11, block_size=8, n_layer=1, n_head=2, n_embd=16,
                          dropout=dropout))
    for p in model.parameters():
        p.data = p.data.astype(np.float64)
    return model


def snapshot(out, which):
    """The arrays of the checkpoint in `out`'s `which` ("best", "latest") snapshot."""
    manifest = json.loads((out / "config.json").read_text())
    return np.load(out / manifest[which]["file"])


@pytest.fixture
def worker_pids(monkeypatch):
    """The process ids of every worker that DataParallel starts while the test runs."""
    pids, real_start = [], DataParallel._start_worker

    def start_worker(self, rows):
        real_start(self, rows)
        pids.append(self.workers[-1][0].pid)

    monkeypatch.setattr(DataParallel, "_start_worker", start_worker)
    return pids


def assert_gone(pids):
    assert pids, "expected workers to have been started"
    for pid in pids:
        with pytest.raises(ProcessLookupError):  # exited and reaped: no such process
            os.kill(pid, 0)


def test_shares_are_contiguous_and_differ_by_at_most_one_row():
    assert share_sizes(11, 3) == [4, 4, 3]
    assert share_sizes(12, 2) == [6, 6]
    assert share_sizes(4, 1) == [4]
    for processes in (0, 5, 2.5):
        with pytest.raises(ValueError, match=f"--processes must be an int between 1 and "
                                             f"--batch-size 4 .*; got {processes}"):
            share_sizes(4, processes)


@pytest.mark.parametrize("processes, batch_size", [(2, 4), (3, 7)])
def test_summed_shares_give_the_full_batch_loss_and_gradient(processes, batch_size):
    model = float64_gpt()
    rng = np.random.default_rng(1)
    x, y = (rng.integers(0, 11, (batch_size, 8)) for _ in range(2))
    loss = model(x, y)[1]
    loss.backward()
    expected = {name: p.grad.copy() for name, p in model.named_parameters()}
    model.zero_grad()
    with DataParallel(model, lambda a, b: model(a, b)[1], processes, (batch_size, 8)) as parallel:
        assert len(parallel.workers) == processes - 1
        value = parallel.forward_backward(x, y)
    assert value == pytest.approx(loss.item(), rel=1e-12), f"expected {loss.item()}; got {value}"
    for name, p in model.named_parameters():
        np.testing.assert_allclose(p.grad, expected[name], rtol=1e-12, atol=1e-15,
                                   err_msg=f"{name}: expected the full batch's gradient")


def test_an_evaluation_split_over_processes_gives_the_batch_loss_in_eval_mode():
    model = float64_gpt(dropout=0.5)  # a worker left in training mode would drop half
    x, y = (np.random.default_rng(2).integers(0, 11, (7, 8)) for _ in range(2))
    model.eval()
    expected = model(x, y)[1].item()
    with DataParallel(model, lambda a, b: model(a, b)[1], 3, (7, 8)) as parallel:
        value = parallel.loss(x, y)
    assert value == pytest.approx(expected, rel=1e-12), f"expected {expected}; got {value}"
    assert all(p.grad is None for p in model.parameters()), "expected no gradient"


def test_training_on_two_processes_follows_training_on_one(tmp_path):
    one = train_on_text(config(), TEXT, tmp_path / "one", progress=False)
    two = train_on_text(config(), TEXT, tmp_path / "two", progress=False, processes=2)
    for key in ("train_loss", "val_loss"):  # the same batches; sums in another float32 order
        assert two[key] == pytest.approx(one[key], rel=1e-4), f"{key}: {one[key]} vs {two[key]}"
    manifest = json.loads((tmp_path / "two" / "config.json").read_text())
    assert manifest["info"]["processes"] == 2, "expected the count in the checkpoint's info"


def test_a_resumed_two_process_run_with_dropout_ends_bit_identical(tmp_path, monkeypatch,
                                                                   worker_pids):
    settings = config(dropout=0.1)  # each worker's masks come from a seed the parent draws
    train_on_text(settings, TEXT, tmp_path / "ref", progress=False, processes=2)
    calls, real_get_batch = [], train_module.get_batch

    def get_batch(ids, batch_size, block_size, generator=None):
        if generator is None:  # a training batch: SIGINT while step 3's is drawn
            calls.append(1)
            if len(calls) == 3:
                os.kill(os.getpid(), signal.SIGINT)
        return real_get_batch(ids, batch_size, block_size, generator)

    monkeypatch.setattr(train_module, "get_batch", get_batch)
    with pytest.raises(Interrupted):
        train_on_text(settings, TEXT, tmp_path / "run", progress=False, processes=2)
    assert_gone(worker_pids)
    monkeypatch.setattr(train_module, "get_batch", real_get_batch)
    train_on_text(settings, TEXT, tmp_path / "run", progress=False, resume=True, processes=2)
    for which in ("best", "latest"):
        with snapshot(tmp_path / "run", which) as ours, snapshot(tmp_path / "ref", which) as theirs:
            assert sorted(ours.files) == sorted(theirs.files)
            for name in theirs.files:
                assert np.array_equal(ours[name], theirs[name]), f"{which} {name} differs"


def test_no_worker_outlives_a_run_that_ends(tmp_path, worker_pids):
    train_on_text(config(max_iters=2), TEXT, tmp_path, progress=False, processes=3)
    assert len(worker_pids) == 2
    assert_gone(worker_pids)


def test_no_worker_outlives_a_nan_stop(tmp_path, monkeypatch, worker_pids):
    real_step = nn.optim.AdamW.step

    def step_then_poison(self):
        real_step(self)
        for group in self.param_groups:
            for p in group["params"]:
                p.data[...] = np.nan  # in place: the workers see it too

    monkeypatch.setattr(nn.optim.AdamW, "step", step_then_poison)
    with pytest.raises(NonFiniteLoss, match="training loss is nan at iter 1"):
        train_on_text(config(), TEXT, tmp_path, progress=False, processes=2)
    assert_gone(worker_pids)


def test_a_failing_worker_raises_with_its_traceback_and_no_worker_survives(worker_pids):
    model, parent = float64_gpt(), os.getpid()

    def loss_of(x, y):
        if os.getpid() != parent:  # in the worker
            raise ValueError("broken share")
        return model(x, y)[1]

    x = np.zeros((4, 8), dtype=np.int64)
    with pytest.raises(RuntimeError, match="worker 1 failed:(.|\n)*ValueError: broken share"):
        with DataParallel(model, loss_of, 2, (4, 8)) as parallel:
            parallel.forward_backward(x, x)
    assert_gone(worker_pids)


def test_a_killed_worker_is_reported(worker_pids):
    model = float64_gpt()
    x = np.zeros((4, 8), dtype=np.int64)
    with pytest.raises(RuntimeError, match="worker 1 died"):
        with DataParallel(model, lambda a, b: model(a, b)[1], 2, (4, 8)) as parallel:
            os.kill(worker_pids[0], signal.SIGKILL)
            parallel.forward_backward(x, x)
    assert_gone(worker_pids)


@pytest.mark.parametrize("flags, status, message", [
    (["--processes", "0"], 2, "argument --processes: must be an integer >= 1; got '0'"),
    (["--processes", "two"], 2, "argument --processes: must be an integer >= 1; got 'two'"),
    (["--processes", "13"], 1, "--processes must be an int between 1 and --batch-size 12"),
    (["--processes", "2", "--threads", "2"], 1, "--processes 2 runs one BLAS thread in each "
                                                "process; drop --threads 2"),
])
def test_invalid_processes_are_refused_naming_the_flag(tmp_path, capsys, flags, status, message):
    assert main(["train", "--out", str(tmp_path / "run"), "--max-iters", "1"] + flags) == status
    assert message in capsys.readouterr().err
    assert not (tmp_path / "run").exists(), "expected nothing written"



def test_ctrl_c_to_the_process_group_stops_at_a_step_leaves_no_process_and_resumes(tmp_path):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text(TEXT, encoding="utf-8")
    command = [sys.executable, "-m", "models", "train", "--out", str(tmp_path / "run"),
               "--data", str(corpus), "--n-layer", "1", "--n-head", "2", "--n-embd", "16",
               "--block-size", "16", "--batch-size", "4", "--eval-interval", "5",
               "--eval-iters", "2", "--max-iters", "100000", "--quiet", "--processes", "2"]
    process = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True, start_new_session=True,  # a group of its own, as a shell
                               env=dict(os.environ, PYTHONUNBUFFERED="1"))
    try:
        for line in process.stdout:
            if line.startswith("iter 5:"):
                break
        os.killpg(process.pid, signal.SIGINT)  # what Ctrl-C in a terminal does: every process
        _, err = process.communicate(timeout=60)
    finally:
        process.kill()
    assert process.returncode == 130, f"expected exit 130; stderr: {err}"
    assert "Traceback" not in err and "--resume" in err, f"expected one message; got {err}"
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:  # the workers leave once the parent's pipes close
        try:
            os.killpg(process.pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.05)
    else:
        raise AssertionError("expected no process of the run's group to remain")
    stopped = json.loads((tmp_path / "run" / "config.json").read_text())["latest"]["iter"]
    # another count resumes too: the same math (float32 sums in another order)
    assert main(["train", "--out", str(tmp_path / "run"), "--resume", "--max-iters",
                 str(stopped + 2), "--quiet", "--processes", "1"]) == 0
    manifest = json.loads((tmp_path / "run" / "config.json").read_text())
    assert (manifest["latest"]["iter"], manifest["info"]["processes"]) == (stopped + 2, 1)
