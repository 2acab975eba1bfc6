"""A file the project did not write is never deleted, moved or overwritten (issue 16): every
command that writes a checkpoint (train, translate train, import) refuses an --out that holds
anything its config.json does not name, with one line saying what is there, and changes
nothing; --overwrite replaces our own files only. A checkpoint of either model kind loads in a
fresh process (the kinds are named where the models are defined)."""
import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from models.cli.main import main
from models.training import checkpoint
from models.training.out_dir import open_out_dir, our_files, read_manifest

ROOT = Path(__file__).resolve().parents[2]
TRAIN = ["train", "--preset", "tiny", "--max-iters", "2", "--eval-interval", "1",
         "--eval-iters", "1", "--batch-size", "2", "--block-size", "8", "--n-layer", "1",
         "--n-head", "1", "--n-embd", "8", "--quiet"]
TRANSLATE = ["translate", "train", "--quiet", "--max-iters", "2", "--eval-interval", "1",
             "--n-train", "16", "--n-test", "4", "--d-model", "8", "--n-heads", "1",
             "--n-encoder-layers", "1", "--n-decoder-layers", "1", "--d-ff", "8",
             "--batch-size", "4"]


def users_directory(path):
    """The case of issue 16: names like ours and the user's own metrics.jsonl, no config.json."""
    path.mkdir()
    for name, data in (("best.2024.npz", b"the user's best"), ("latest.1.npz", b"the user's"),
                       ("metrics.jsonl", b'{"mine": true}\n')):
        (path / name).write_bytes(data)
    return path


def contents(path):
    return {p.name: p.read_bytes() for p in sorted(path.iterdir())}


def command(kind, out, tmp_path):
    if kind == "train":
        return TRAIN + ["--out", str(out)]
    if kind == "translate train":
        return TRANSLATE + ["--out", str(out)]
    source = tmp_path / "hf"  # refused before the source is read: it need not be a model
    source.mkdir(exist_ok=True)
    return ["import", "--from", str(source), "--out", str(out)]


@pytest.mark.parametrize("kind", ["train", "translate train", "import"])
@pytest.mark.parametrize("flags", [[], ["--overwrite"]])
def test_a_directory_of_the_users_files_is_refused_and_left_as_it_was(capsys, tmp_path, kind,
                                                                      flags):
    out = users_directory(tmp_path / "out")
    before = contents(out)
    assert main(command(kind, out, tmp_path) + flags) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, f"expected one line; got {err!r}"
    for name in before:
        assert name in err, f"expected the line to name {name}; got {err!r}"
    assert "no checkpoint of ours" in err, err
    assert contents(out) == before, "expected --out untouched"


def test_a_checkpoint_folder_of_ours_inside_out_is_left_alone_and_not_refused(capsys, tmp_path):
    """The README's order: `train --out out/tiny`, `translate train` (out/translate), then
    `train` into out: the runs inside are ours and a save never touches a folder."""
    out = tmp_path / "out"
    assert main(TRAIN + ["--out", str(out / "tiny")]) == 0
    assert main(TRANSLATE + ["--out", str(out / "translate")]) == 0
    inside = {name: contents(out / name) for name in ("tiny", "translate")}
    assert main(TRAIN + ["--out", str(out)]) == 0, capsys.readouterr().err
    assert main(TRAIN + ["--out", str(out), "--overwrite"]) == 0, capsys.readouterr().err
    assert main(TRAIN + ["--out", str(out), "--resume", "--max-iters", "3"]) == 0
    for name, before in inside.items():
        assert contents(out / name) == before, f"expected out/{name} untouched by runs into out"
    (out / "notes").mkdir()  # a folder of the user's is still refused, and named
    assert main(TRAIN + ["--out", str(out), "--overwrite"]) == 1
    err = capsys.readouterr().err
    assert "notes" in err and "tiny" not in err.split("holds")[1], err


def test_a_train_resume_into_the_users_files_is_refused_too(capsys, tmp_path):
    out = users_directory(tmp_path / "out")
    before = contents(out)
    assert main(TRAIN + ["--out", str(out), "--resume"]) == 1
    assert "best.2024.npz" in capsys.readouterr().err and contents(out) == before


@pytest.mark.parametrize("args", [TRAIN, TRANSLATE])
def test_overwrite_replaces_our_files_but_refuses_a_file_of_the_users_beside_them(capsys,
                                                                                 tmp_path, args):
    out = tmp_path / "out"
    assert main(args + ["--out", str(out)]) == 0
    ours = contents(out)
    assert set(ours) == {"config.json", "metrics.jsonl", *(n for n in ours if n.endswith(".npz"))}
    (out / "notes.txt").write_text("the user's notes")
    before = contents(out)
    assert main(args + ["--out", str(out), "--overwrite"]) == 1
    err = capsys.readouterr().err
    assert "notes.txt" in err and "config.json does not name" in err, err
    assert contents(out) == before, "expected --out untouched"
    (out / "notes.txt").unlink()
    assert main(args + ["--out", str(out), "--overwrite"]) == 0
    after = contents(out)
    assert {n for n in after if not n.endswith(".npz")} == {"config.json", "metrics.jsonl"}
    assert not set(after) & {n for n in ours if n.endswith(".npz")}, (
        f"expected the old snapshots replaced by new ones; got {sorted(after)}")


def test_a_save_deletes_only_what_its_config_json_named(tmp_path):
    out = tmp_path / "out"
    assert main(TRAIN + ["--out", str(out)]) == 0
    manifest = read_manifest(out)
    assert manifest["files"] == ["metrics.jsonl"], manifest["files"]
    assert sorted(our_files(manifest)) == sorted(
        {"config.json", "metrics.jsonl", manifest["best"]["file"], manifest["latest"]["file"],
         f"best.{manifest['save'] + 1}.npz", f"latest.{manifest['save'] + 1}.npz"})


def test_a_seq2seq_checkpoint_loads_in_a_fresh_process(tmp_path):
    out = tmp_path / "out"
    assert main(TRANSLATE + ["--out", str(out)]) == 0
    code = ("from models.training.checkpoint import load_model; "
            f"model, manifest = load_model({str(out)!r}); "
            "print(type(model).__name__, manifest['kind'])")
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                          cwd=tmp_path, timeout=120)
    assert done.returncode == 0, f"expected the checkpoint to load; got {done.stderr}"
    assert done.stdout.split() == ["Seq2SeqTransformer", "seq2seq"], done.stdout


def test_a_file_the_run_records_is_ours_and_kept_across_a_resume(tmp_path):
    from models.training.data import encode_text
    from models.training.run import TrainingRun
    from models.training.settings import TrainConfig
    from models.training.text_run import train_on_text
    from models.training.train import train

    run = TrainingRun(tmp_path / "out")
    run.files.add("explore.html")  # a picture the run refreshes in --out
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "explore.html").write_text("<html></html>")
    config = run.settings(TrainConfig, "tiny", dict(max_iters=2, eval_interval=1, eval_iters=1,
                                                    batch_size=2, block_size=8, n_layer=1,
                                                    n_head=1, n_embd=8))
    train(run, encode_text("hello world, " * 40), progress=False)
    train_on_text(dataclasses.replace(config, max_iters=3), "hello world, " * 40,
                  tmp_path / "out", progress=False, resume=True)
    assert "explore.html" in read_manifest(tmp_path / "out")["files"]


def test_a_model_saved_over_a_run_leaves_none_of_the_runs_files_behind(tmp_path):
    from models import GPT, CharTokenizer, GPTConfig

    out = tmp_path / "out"
    assert main(TRAIN + ["--out", str(out)]) == 0
    open_out_dir(out, overwrite=True)  # what `import --overwrite` asks first
    tokenizer = CharTokenizer.from_text("abc")
    model = GPT(GPTConfig(vocab_size=3, block_size=4, n_layer=1, n_head=1, n_embd=4))
    manifest = checkpoint.save_model(out, model, tokenizer)
    assert sorted(os.listdir(out)) == sorted({"config.json", manifest["best"]["file"],
                                              manifest["latest"]["file"]}), os.listdir(out)
    open_out_dir(out, overwrite=True)  # all ours: a second import may replace it


def test_a_resume_of_a_hand_edited_long_kind_is_refused_in_a_bounded_line(capsys, tmp_path):
    out = tmp_path / "out"
    assert main(TRAIN + ["--out", str(out)]) == 0
    manifest = json.loads((out / "config.json").read_text())
    (out / "config.json").write_text(json.dumps(dict(manifest, kind="x" * 100_000)))
    capsys.readouterr()
    assert main(TRAIN + ["--out", str(out), "--resume", "--max-iters", "3"]) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and len(err) < 1000 and "config.json" in err, \
        f"expected one line under 1000 characters naming config.json; got {len(err)}: {err[:300]}"


def test_a_resume_at_or_past_max_iters_names_the_checkpoint_directory(capsys, tmp_path):
    out = tmp_path / "out"
    assert main(TRAIN + ["--out", str(out)]) == 0
    capsys.readouterr()
    assert main(TRAIN + ["--out", str(out), "--resume"]) == 1
    err = capsys.readouterr().err
    expected = f"the checkpoint in {out} is at iter 2 already"
    assert expected in err, f"expected {expected!r}; got {err!r}"
