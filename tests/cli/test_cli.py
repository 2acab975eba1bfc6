"""The `microtensor` command line: train a few steps, sample from the checkpoint, clean errors."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from models.cli.main import main

FAST = ["--preset", "tiny", "--max-iters", "4", "--eval-interval", "2", "--eval-iters", "2",
        "--batch-size", "4", "--block-size", "16", "--n-layer", "1", "--n-head", "2",
        "--n-embd", "16", "--quiet"]
NANOGPT_FLAGS = ["--max-iters", "--eval-interval", "--eval-iters", "--batch-size", "--block-size",
                 "--n-layer", "--n-head", "--n-embd", "--dropout", "--learning-rate", "--min-lr",
                 "--warmup-iters", "--weight-decay", "--grad-clip", "--seed"]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    path = tmp_path_factory.mktemp("data") / "corpus.txt"
    path.write_text("Sing, goddess, the anger of Achilles, son of Peleus.\n" * 30, encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def checkpoint(corpus, tmp_path_factory):
    out = tmp_path_factory.mktemp("out")
    assert main(["train", "--data", str(corpus), "--out", str(out)] + FAST) == 0
    return out


def test_train_writes_metrics_and_checkpoint(checkpoint):
    records = [json.loads(line) for line in (checkpoint / "metrics.jsonl").read_text().splitlines()]
    assert [r["iter"] for r in records] == [0, 2, 4]
    assert all(set(r) == {"iter", "train_loss", "val_loss", "elapsed_s"} for r in records)
    assert {"model.npz", "config.json"} <= set(os.listdir(checkpoint))


def test_train_prints_losses(corpus, tmp_path, capsys):
    assert main(["train", "--data", str(corpus), "--out", str(tmp_path)] + FAST) == 0
    out = capsys.readouterr().out
    assert "iter 4: train loss" in out and "val loss" in out


def test_sample_prints_prompt_and_continuation(checkpoint, capsys):
    assert main(["sample", "--out", str(checkpoint), "--prompt", "Sing", "--num-chars", "40"]) == 0
    text = capsys.readouterr().out
    assert text.startswith("Sing") and len(text) == 4 + 40 + 1  # prompt, continuation, newline


def test_greedy_sample_is_the_same_with_and_without_cache(checkpoint, capsys):
    args = ["sample", "--out", str(checkpoint), "--top-k", "1", "--num-chars", "30"]
    main(args)
    cached = capsys.readouterr().out
    main(args + ["--no-cache"])
    assert capsys.readouterr().out == cached


def test_every_nanogpt_flag_exists(capsys):
    assert main(["train", "--help"]) == 0
    help_text = capsys.readouterr().out
    for flag in NANOGPT_FLAGS + ["--data", "--out", "--preset", "--bias", "--no-bias"]:
        assert flag in help_text


def error_of(capsys, argv):
    code = main(argv)
    err = capsys.readouterr().err
    assert code != 0 and "Traceback" not in err
    return code, err


def test_missing_data_file(capsys, tmp_path):
    code, err = error_of(capsys, ["train", "--data", str(tmp_path / "nope.txt"),
                                  "--out", str(tmp_path)] + FAST)
    assert code == 1 and "nope.txt" in err and "does not exist" in err


@pytest.mark.parametrize("content, message", [(b"", "empty"), (b"caf\xe9 " * 200, "not UTF-8"),
                                              (b"too short", "block_size + 1")])
def test_bad_data_files(capsys, tmp_path, content, message):
    path = tmp_path / "bad.txt"
    path.write_bytes(content)
    code, err = error_of(capsys, ["train", "--data", str(path), "--out", str(tmp_path)] + FAST)
    assert code == 1 and "bad.txt" in err and message in err


def test_invalid_setting(capsys, tmp_path, corpus):
    code, err = error_of(capsys, ["train", "--data", str(corpus), "--out", str(tmp_path)] + FAST
                         + ["--n-embd", "30", "--n-head", "4"])
    assert code == 1 and "divisible" in err


def test_usage_error_exits_2(capsys):
    code, err = error_of(capsys, ["train", "--max-iters", "many"])
    assert code == 2 and "--max-iters" in err


def test_sample_without_checkpoint(capsys, tmp_path):
    code, err = error_of(capsys, ["sample", "--out", str(tmp_path / "none")])
    assert code == 1 and "does not exist" in err


def test_sample_prompt_with_unknown_character(capsys, checkpoint):
    code, err = error_of(capsys, ["sample", "--out", str(checkpoint), "--prompt", "Zeus"])
    assert code == 1 and "'Z'" in err


def console_script():
    """The installed `microtensor` script next to this Python, if the package is installed."""
    name = "microtensor.exe" if os.name == "nt" else "microtensor"
    path = Path(sys.executable).parent / name
    return path if path.exists() else None


@pytest.mark.skipif(console_script() is None, reason="package not installed (pip install -e .)")
def test_installed_console_script(corpus, tmp_path):
    script = str(console_script())
    run = subprocess.run([script, "train", "--data", str(corpus), "--out", str(tmp_path)] + FAST,
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert "val loss" in run.stdout
    run = subprocess.run([script, "sample", "--out", str(tmp_path), "--prompt", "Sing",
                          "--num-chars", "20"], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert run.stdout.startswith("Sing")
    run = subprocess.run([script, "sample", "--out", str(tmp_path / "missing")],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 1 and "Traceback" not in run.stderr
