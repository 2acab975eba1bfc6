"""The command line under hostile but fair input: each failure is one line, exit 1 (2 for usage).

Hand-edited or foreign checkpoints, --out inside a file, settings too large for memory.
"""
import hashlib
import json
import os
import shutil

import numpy as np
import pytest

from models.cli.main import main

FAST = ["--preset", "tiny", "--max-iters", "2", "--eval-interval", "2", "--eval-iters", "1",
        "--batch-size", "2", "--block-size", "8", "--n-layer", "1", "--n-head", "2",
        "--n-embd", "8", "--quiet"]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    path = tmp_path_factory.mktemp("data") / "corpus.txt"
    path.write_text("Sing, goddess, the anger of Achilles.\n" * 20, encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def trained(corpus, tmp_path_factory):
    out = tmp_path_factory.mktemp("trained")
    assert main(["train", "--data", str(corpus), "--out", str(out)] + FAST) == 0
    return out


@pytest.fixture
def copy(trained, tmp_path):
    out = tmp_path / "out"
    shutil.copytree(trained, out)
    return out


def one_line_error(capsys, argv, code=1):
    got = main(argv)
    err = capsys.readouterr().err.strip()
    assert got == code, f"expected exit {code}; got {got} with {err!r}"
    assert "Traceback" not in err and len(err.splitlines()) == 1, f"expected one line; got {err!r}"
    return err


def files(out):
    return {p.name: p.read_bytes() for p in sorted(out.iterdir()) if p.is_file()}


def edit_manifest(out, change):
    manifest = json.loads((out / "config.json").read_text())
    change(manifest)
    (out / "config.json").write_text(json.dumps(manifest))


def edit_latest(out, change):
    """Replace the latest snapshot's arrays by change(arrays), with a matching size and hash."""
    manifest = json.loads((out / "config.json").read_text())
    path = out / manifest["latest"]["file"]
    arrays = dict(np.load(path))
    change(arrays)
    with open(path, "wb") as f:
        np.savez(f, **arrays)
    data = path.read_bytes()
    manifest["latest"].update(bytes=len(data), sha256=hashlib.sha256(data).hexdigest())
    (out / "config.json").write_text(json.dumps(manifest))


def test_an_out_inside_a_file_is_a_usage_error_before_any_work(capsys, corpus):
    code = main(["train", "--data", str(corpus), "--out", str(corpus / "run")] + FAST)
    err = capsys.readouterr().err
    assert code == 2 and f"lies inside the file {str(corpus)!r}" in err, err


def test_a_model_too_large_for_memory_is_one_line_naming_the_allocation(capsys, corpus, tmp_path):
    err = one_line_error(capsys, ["train", "--data", str(corpus), "--out", str(tmp_path / "o")]
                         + FAST + ["--n-embd", str(10 ** 12), "--n-head", "1"])
    assert "Unable to allocate" in err and "try smaller settings" in err, err
    assert not (tmp_path / "o").exists(), "expected nothing written for a run that never started"


RESUME_EDITS = {
    "a string learning rate": (
        lambda m: m["info"]["train_config"].update(learning_rate="big"),
        "info.train_config: TrainConfig: learning_rate is 'big' (a string); expected a "
        "finite number"),
    "a bool for a size": (lambda m: m["info"]["train_config"].update(n_layer=True),
                          "n_layer is True (a boolean); expected an integer"),
    "no train_config": (lambda m: m["info"].update(train_config=None),
                        "info.train_config is None (null); expected an object"),
    "a string best loss": (lambda m: m["latest"].update(best_val_loss="low"),
                           "latest.best_val_loss is 'low' (a string)"),
    "a string elapsed time": (lambda m: m["latest"].update(elapsed_s="1 s"),
                              "latest.elapsed_s is '1 s' (a string)"),
    "a list for a beta": (lambda m: m["latest"]["param_groups"][0].update(betas=[[1], 0.9]),
                          "latest.param_groups[0].betas[0] is [1] (an array); expected a "
                          "finite number in [0, 1)"),
    "a beta of 1": (lambda m: m["latest"]["param_groups"][0].update(betas=[0.9, 1]),
                    "betas[1] is 1 (an integer); expected a finite number in [0, 1)"),
    "a string eps": (lambda m: m["latest"]["param_groups"][0].update(eps=""),
                     "param_groups[0].eps is '' (a string)"),
    "a negative generator state": (lambda m: m["latest"]["rng"]["state"].update(state=-1),
                                   "latest.rng.state.state is -1 (an integer); expected an "
                                   "integer in [0, "),
    "a number for the data path": (lambda m: m["info"]["data"].update(path=5),
                                   "info.data.path is 5 (an integer); expected null or a string"),
    "iter True": (lambda m: m["latest"].update(iter=True), "expected an integer >= 0"),
    "a negative iter": (lambda m: m["best"].update(iter=-3), "expected an integer >= 0"),
}


@pytest.mark.parametrize("edit", sorted(RESUME_EDITS))
def test_resume_of_a_hand_edited_config_is_one_line_and_changes_nothing(capsys, copy, edit):
    change, message = RESUME_EDITS[edit]
    edit_manifest(copy, change)
    before = files(copy)
    err = one_line_error(capsys, ["train", "--out", str(copy), "--resume", "--max-iters", "4"])
    assert message in err and "config.json" in err, f"{edit}: expected {message!r}; got {err!r}"
    assert files(copy) == before, "expected every file in --out unchanged"


def rename_a_buffer(arrays):
    arrays["optimizer/x/exp_avg"] = arrays.pop("optimizer/0/exp_avg")


def negative_step(arrays):
    arrays["optimizer/0/step"] = np.array(-1)


def scalar_moment(arrays):
    """A 0-d moment would broadcast over its parameter: a silently wrong resumed run."""
    arrays["optimizer/0/exp_avg"] = np.array(0.5, np.float32)


def integer_moment(arrays):
    arrays["optimizer/0/exp_avg"] = arrays["optimizer/0/exp_avg"].astype(np.int64)


def missing_moment(arrays):
    del arrays["optimizer/0/exp_avg"]


@pytest.mark.parametrize("change, message", [
    (rename_a_buffer, "unexpected array 'optimizer/x/exp_avg'"),
    (negative_step, "optimizer/0/step is int64 of shape (); expected a count >= 0"),
    (scalar_moment, "optimizer/0/exp_avg is float32 of shape (); expected floats of its "
                    "parameter's shape"),
    (integer_moment, "optimizer/0/exp_avg is int64 of shape"),
    (missing_moment, "the parameters' optimizer buffers differ"),
])
def test_resume_of_a_foreign_optimizer_state_is_one_line_naming_the_file(capsys, copy, change,
                                                                           message):
    edit_latest(copy, change)
    err = one_line_error(capsys, ["train", "--out", str(copy), "--resume", "--max-iters", "4"])
    assert message in err and ".npz" in err, err


def test_resume_drops_damaged_metrics_lines_instead_of_failing(copy):
    good = (copy / "metrics.jsonl").read_bytes()
    (copy / "metrics.jsonl").write_bytes(good + b'{"iter": "2"}\n\xe9\xe9\n[1]\n{"iter": null}\n')
    assert main(["train", "--out", str(copy), "--resume", "--max-iters", "4", "--quiet"]) == 0
    iters = [json.loads(line)["iter"] for line in (copy / "metrics.jsonl").read_text().splitlines()]
    assert iters == [0, 2, 4], f"expected the good lines continued; got iters {iters}"


def test_sample_refuses_non_finite_weights(capsys, copy):
    manifest = json.loads((copy / "config.json").read_text())
    path = copy / manifest["best"]["file"]
    arrays = {k: np.full_like(v, np.nan) for k, v in np.load(path).items()}
    with open(path, "wb") as f:
        np.savez(f, **arrays)
    data = path.read_bytes()
    manifest["best"].update(bytes=len(data), sha256=hashlib.sha256(data).hexdigest())
    (copy / "config.json").write_text(json.dumps(manifest))
    err = one_line_error(capsys, ["sample", "--out", str(copy), "--num-chars", "3"])
    assert "holds NaN or infinite values" in err and str(path) in err, err


def test_a_config_json_that_is_a_directory_is_one_line(capsys, copy):
    (copy / "config.json").unlink()
    (copy / "config.json").mkdir()
    err = one_line_error(capsys, ["sample", "--out", str(copy)])
    assert "config.json is a directory" in err, err


def test_a_data_file_name_that_is_not_utf8_is_refused_before_training(capsys, tmp_path):
    name = os.fsdecode(os.path.join(os.fsencode(tmp_path), b"bad\xffname.txt"))
    with open(name, "w", encoding="utf-8") as f:
        f.write("Sing, goddess, the anger of Achilles.\n" * 20)
    code = main(["train", "--data", name, "--out", str(tmp_path / "o")] + FAST)
    err = capsys.readouterr().err
    assert code == 2 and "argument --data" in err and "is not UTF-8" in err, err
    assert not (tmp_path / "o").exists(), "expected no half checkpoint (npz without config.json)"


def test_an_out_that_is_a_dangling_symlink_is_a_usage_error(capsys, corpus, tmp_path):
    (tmp_path / "link").symlink_to(tmp_path / "nowhere")
    code = main(["train", "--data", str(corpus), "--out", str(tmp_path / "link")] + FAST)
    err = capsys.readouterr().err
    assert code == 2 and "is a symbolic link to nothing" in err, err
