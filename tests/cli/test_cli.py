"""The `microtensor` command line: train, sample, refuse, resume, flag checks, clean errors.

Training runs only a few steps.
"""
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import models.cli.shapes
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
    manifest = json.loads((checkpoint / "config.json").read_text())
    assert manifest["latest"]["iter"] == 4 and manifest["best"]["iter"] in (0, 2, 4)
    assert {manifest["best"]["file"], manifest["latest"]["file"]} <= set(os.listdir(checkpoint))


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
    code, err = error_of(capsys, ["train", "--data", str(path), "--out", str(tmp_path / "out")]
                         + FAST)
    assert code == 1 and "bad.txt" in err and message in err


def test_invalid_setting(capsys, tmp_path, corpus):
    code, err = error_of(capsys, ["train", "--data", str(corpus), "--out", str(tmp_path)] + FAST
                         + ["--n-embd", "30", "--n-head", "4"])
    assert code == 1 and "divisible" in err


def test_usage_error_exits_2(capsys):
    code, err = error_of(capsys, ["train", "--max-iters", "many"])
    assert code == 2 and "--max-iters" in err


@pytest.mark.parametrize("command", ["train", "sample", "flops", "shapes"])
def test_a_mistyped_flag_shows_the_subcommands_own_usage(capsys, command):
    code, err = error_of(capsys, [command, "--no-such-flag", "1"])
    assert code == 2 and f"usage: microtensor {command}" in err, err
    assert "unrecognized arguments: --no-such-flag 1" in err


def snapshot(directory):
    return {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in sorted(directory.iterdir())}


def test_a_second_train_refuses_and_changes_nothing(capsys, corpus, checkpoint):
    before = snapshot(checkpoint)
    code, err = error_of(capsys, ["train", "--data", str(corpus), "--out", str(checkpoint)] + FAST)
    assert code == 1 and len(err.strip().splitlines()) == 1, err
    assert "latest iter 4 (val loss" in err and "--resume" in err and "--overwrite" in err
    assert snapshot(checkpoint) == before, "expected every file in --out unchanged"


def test_resume_continues_and_overwrite_starts_afresh(corpus, tmp_path):
    out = str(tmp_path)
    assert main(["train", "--data", str(corpus), "--out", out] + FAST) == 0
    assert main(["train", "--out", out, "--resume", "--max-iters", "6", "--quiet"]) == 0
    records = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert [r["iter"] for r in records] == [0, 2, 4, 6], "expected metrics.jsonl continued"
    assert main(["train", "--data", str(corpus), "--out", out, "--overwrite"] + FAST) == 0
    records = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert [r["iter"] for r in records] == [0, 2, 4], "expected metrics.jsonl started afresh"


@pytest.mark.parametrize("flags, message", [
    (["--n-embd", "32"], "--n-embd 32 differs from the checkpoint's 16"),
    (["--learning-rate", "0.5"], "--learning-rate 0.5 differs"),
    (["--preset", "baby"], "--preset baby: --n-layer 4 differs from the checkpoint's 1"),
    (["--max-iters", "4"], "--max-iters 4: the checkpoint"),
])
def test_resume_refuses_a_flag_that_would_change_the_run(capsys, checkpoint, flags, message):
    before = snapshot(checkpoint)
    code, err = error_of(capsys, ["train", "--out", str(checkpoint), "--resume", "--quiet"]
                         + flags)
    assert code == 1 and message in err, err
    assert snapshot(checkpoint) == before


def test_resume_accepts_the_first_command_again_with_the_same_preset(corpus, tmp_path):
    out = str(tmp_path)
    assert main(["train", "--data", str(corpus), "--out", out] + FAST) == 0
    i = FAST.index("--max-iters") + 1
    again = FAST[:i] + ["6"] + FAST[i + 1:]  # the same flags, --max-iters 4 -> 6
    assert main(["train", "--data", str(corpus), "--out", out, "--resume"] + again) == 0
    records = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert [r["iter"] for r in records] == [0, 2, 4, 6], "expected the run continued to 6"
    again[i] = "8"  # and once more: the extension fixed the decay length, not the preset
    assert main(["train", "--data", str(corpus), "--out", out, "--resume"] + again) == 0
    records = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert [r["iter"] for r in records] == [0, 2, 4, 6, 8], "expected the run continued to 8"
    without = again[:i - 1] + again[i + 1:]  # no --max-iters: the checkpoint's, not the preset's
    code = main(["train", "--data", str(corpus), "--out", out, "--resume"] + without)
    assert code == 1, "expected a resume at the checkpoint's --max-iters to have nothing to do"


def test_resume_names_a_changed_data_file(capsys, corpus, tmp_path):
    text = tmp_path / "text.txt"
    text.write_text(corpus.read_text(encoding="utf-8"), encoding="utf-8")
    out = str(tmp_path / "out")
    assert main(["train", "--data", str(text), "--out", out] + FAST) == 0
    text.write_text(corpus.read_text(encoding="utf-8") + " and more", encoding="utf-8")
    code, err = error_of(capsys, ["train", "--out", out, "--resume", "--max-iters", "6"])
    assert code == 1 and "has changed since the checkpoint" in err, err
    assert err.count(str(text)) == 1, f"expected the path once; got {err!r}"


def test_resume_refuses_other_data(capsys, checkpoint, tmp_path):
    other = tmp_path / "other.txt"
    other.write_text("Another text entirely, long enough to train on. " * 30, encoding="utf-8")
    code, err = error_of(capsys, ["train", "--out", str(checkpoint), "--resume", "--data",
                                  str(other), "--max-iters", "9"])
    assert code == 1 and "is not the text the checkpoint" in err


def test_resume_without_a_checkpoint(capsys, tmp_path):
    code, err = error_of(capsys, ["train", "--out", str(tmp_path), "--resume"])
    assert code == 1 and "no checkpoint" in err and "drop --resume" in err


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # numpy's overflow warnings on the way
def test_a_nan_loss_exits_1_naming_the_iteration(capsys, corpus, tmp_path):
    code, err = error_of(capsys, ["train", "--data", str(corpus), "--out", str(tmp_path)] + FAST
                         + ["--learning-rate", "1e30", "--grad-clip", "0"])
    assert code == 1 and re.search(r"loss is (nan|inf) at iter \d+: training stopped", err), err


@pytest.mark.parametrize("argv, flag, value", [
    (["train", "--max-iters", "0"], "--max-iters", "0"),
    (["train", "--eval-iters", "-1"], "--eval-iters", "-1"),
    (["train", "--learning-rate", "nan"], "--learning-rate", "nan"),
    (["train", "--dropout", "1.5"], "--dropout", "1.5"),
    (["train", "--threads", "0"], "--threads", "0"),
    (["train", "--out", ""], "--out", "''"),
    (["train", "--data", " "], "--data", "' '"),
    (["sample", "--temperature", "nan"], "--temperature", "nan"),
    (["sample", "--temperature", "0"], "--temperature", "0"),
    (["sample", "--top-k", "0"], "--top-k", "0"),
    (["sample", "--num-chars", "-1"], "--num-chars", "-1"),
    (["sample", "--seed", "-3"], "--seed", "-3"),
    (["graph", "--seq-len", "0", "-o", "g.svg"], "--seq-len", "0"),
    (["gradflow", "--steps", "-1", "-o", "g.png"], "--steps", "-1"),
    (["gradflow", "--learning-rate", "inf", "-o", "g.png"], "--learning-rate", "inf"),
    (["attention", "--out", "x", "--prompt", "a", "-o", "a.png", "--layer", "-1"], "--layer", "-1"),
    (["shapes", "--heads", "0"], "--heads", "0"),
    (["flops", "--seq", "-4"], "--seq", "-4"),
])
def test_every_bad_value_is_named_before_work_starts(capsys, tmp_path, argv, flag, value):
    if argv[0] == "train" and "--out" not in argv:
        argv = argv + ["--out", str(tmp_path / "never")]
    code, err = error_of(capsys, argv)
    assert code in (1, 2) and flag in err and value in err, err
    assert not (tmp_path / "never").exists(), "expected no work done"


def test_out_naming_a_file_is_refused(capsys, tmp_path):
    path = tmp_path / "a_file"
    path.write_text("")
    for argv in (["train", "--out", str(path)], ["sample", "--out", str(path)]):
        code, err = error_of(capsys, argv)
        assert code == 2 and "--out" in err and "is a file" in err, err


def test_every_command_runs_with_one_blas_thread_unless_told(monkeypatch, capsys):
    from threadpoolctl import threadpool_info

    seen = []
    monkeypatch.setattr(models.cli.shapes, "run", lambda args: seen.append(
        {lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas"}))
    main(["shapes"])
    main(["shapes", "--threads", "2"])
    assert seen == [{1}, {2}], f"expected 1, then 2 BLAS threads; got {seen}"


def test_train_asks_for_freed_memory_to_be_kept(monkeypatch, corpus, tmp_path):
    import microtensor.memory

    calls = []
    monkeypatch.setattr(microtensor.memory, "keep_freed_memory", lambda: calls.append(1))
    assert main(["train", "--data", str(corpus), "--out", str(tmp_path)] + FAST) == 0
    assert calls == [1]


def test_a_broken_checkpoint_is_one_error_line_for_every_reader(capsys, checkpoint, tmp_path):
    broken = tmp_path / "broken"
    broken.mkdir()
    for name in os.listdir(checkpoint):
        (broken / name).write_bytes((checkpoint / name).read_bytes())
    best = broken / json.loads((broken / "config.json").read_text())["best"]["file"]
    best.write_bytes(best.read_bytes()[:100])
    for argv in (["sample"], ["graph", "-o", str(tmp_path / "g.svg")],
                 ["attention", "--prompt", "Sing", "-o", str(tmp_path / "a.png")]):
        code, err = error_of(capsys, argv + ["--out", str(broken)])
        assert code == 1 and len(err.strip().splitlines()) == 1 and best.name in err, err


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
