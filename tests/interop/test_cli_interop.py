"""`microtensor export` and `import`: both formats round-trip, sample works, files are kept."""
import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("safetensors")
pytest.importorskip("tokenizers")

from models.cli.main import main
from models.training.checkpoint import load_checkpoint

FAST = ["--max-iters", "2", "--eval-interval", "2", "--eval-iters", "1", "--batch-size", "2",
        "--block-size", "16", "--n-layer", "1", "--n-head", "2", "--n-embd", "16", "--quiet"]


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    root = tmp_path_factory.mktemp("run")
    (root / "corpus.txt").write_text("O Romeo, Romeo! wherefore art thou Romeo?\n" * 20,
                                     encoding="utf-8")
    assert main(["train", "--data", str(root / "corpus.txt"), "--out", str(root / "out")]
                + FAST) == 0
    return root


@pytest.mark.parametrize("fmt", ["hf", "nanogpt"])
def test_export_then_import_gives_the_same_weights_and_greedy_sample(trained, fmt, capsys):
    out, exported, back = trained / "out", trained / f"{fmt}", trained / f"back_{fmt}"
    assert main(["export", "--out", str(out), "--to", str(exported), "--format", fmt]) == 0
    assert main(["import", "--from", str(exported), "--out", str(back)]) == 0
    which = "best" if fmt == "hf" else "latest"      # nanoGPT resumes the latest state
    ours = load_checkpoint(out, which)[0].state_dict()
    theirs = load_checkpoint(back)[0].state_dict()
    assert list(theirs) == list(ours)
    assert all(np.array_equal(theirs[n], ours[n]) for n in ours)
    capsys.readouterr()
    samples = []
    for directory in (out, back):
        assert main(["sample", "--out", str(directory), "--top-k", "1", "--num-chars", "20"]) == 0
        samples.append(capsys.readouterr().out)
    assert samples[0] == samples[1], f"expected {samples[0]!r}, got {samples[1]!r}"


def test_nanogpt_export_carries_the_adamw_moments_of_the_latest_state(trained):
    torch = pytest.importorskip("torch")
    exported = trained / "moments"
    assert main(["export", "--out", str(trained / "out"), "--to", str(exported),
                 "--format", "nanogpt"]) == 0
    checkpoint = torch.load(exported / "ckpt.pt", weights_only=True)
    state = checkpoint["optimizer"]["state"]
    n_params = sum(len(g["params"]) for g in checkpoint["optimizer"]["param_groups"])
    assert sorted(state) == list(range(n_params)), f"expected moments for all {n_params}"
    assert {float(s["step"]) for s in state.values()} == {2.0}    # --max-iters 2
    assert checkpoint["iter_num"] == 2
    assert any(s["exp_avg"].abs().max() > 0 for s in state.values())


def test_export_and_import_keep_existing_files_without_overwrite(trained, capsys):
    out, exported = trained / "out", trained / "twice"
    assert main(["export", "--out", str(out), "--to", str(exported), "--format", "hf"]) == 0
    before = (exported / "config.json").read_bytes()
    assert main(["export", "--out", str(out), "--to", str(exported), "--format", "hf"]) == 1
    assert "--overwrite" in capsys.readouterr().err
    assert (exported / "config.json").read_bytes() == before
    assert main(["import", "--from", str(exported), "--out", str(out)]) == 1
    assert "already holds a checkpoint" in capsys.readouterr().err


def test_import_of_something_else_says_what_is_missing(tmp_path, capsys):
    assert main(["import", "--from", str(tmp_path), "--out", str(tmp_path / "o")]) == 1
    assert "has no model.safetensors" in capsys.readouterr().err


def test_nanogpt_export_with_foreign_data_writes_nothing(trained, capsys):
    foreign = trained / "foreign.txt"
    foreign.write_text("Zebras quack!\n", encoding="utf-8")     # Z, q, k, ... not in the vocab
    exported = trained / "refused"
    assert main(["export", "--out", str(trained / "out"), "--to", str(exported),
                 "--format", "nanogpt", "--data", str(foreign)]) == 1
    assert "vocabulary" in capsys.readouterr().err
    assert not exported.exists() or not any(exported.iterdir()), \
        f"expected no files in {exported}, got {sorted(p.name for p in exported.iterdir())}"


def test_an_hf_export_never_replaces_a_checkpoints_config_json(trained, capsys):
    """--overwrite replaces an earlier export's files, not the checkpoint's own config.json."""
    out = trained / "out"
    before = (out / "config.json").read_bytes()
    assert main(["export", "--out", str(out), "--to", str(out), "--format", "hf",
                 "--overwrite"]) == 1
    assert "holds a microtensor checkpoint" in capsys.readouterr().err
    assert (out / "config.json").read_bytes() == before


@pytest.mark.parametrize("key,value,message", [
    ("param_groups", [{"params": [0], "lr": "fast"}],
     "latest.param_groups[0].lr is 'fast' (a string); expected a finite number >= 0"),
    ("best_val_loss", "low", "latest.best_val_loss is 'low' (a string)"),
])
def test_a_nanogpt_export_of_a_hand_edited_training_state_is_one_line(trained, capsys, key,
                                                                      value, message):
    import json
    import shutil

    out = trained / f"edited_{key}"
    shutil.copytree(trained / "out", out)
    manifest = json.loads((out / "config.json").read_text(encoding="utf-8"))
    manifest["latest"][key] = value
    (out / "config.json").write_text(json.dumps(manifest), encoding="utf-8")
    assert main(["export", "--out", str(out), "--to", str(trained / f"to_{key}"),
                 "--format", "nanogpt"]) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and message in err, f"expected {message!r}, got {err!r}"
    assert not (trained / f"to_{key}").exists()


def test_nanogpt_bins_hold_every_byte_training_read_crlf_lone_cr_bom_nul(tmp_path):
    """train.bin + val.bin decode to exactly the file's characters, \\r of CRLF and lone CR, a
    BOM and NUL included (issue 25 #5: a text-mode read dropped every \\r of a CRLF corpus)."""
    corpus = tmp_path / "crlf.txt"
    text = "\ufeffO Romeo,\r\nRomeo!\rwherefore\x00 art thou\r\n" * 20
    corpus.write_bytes(text.encode("utf-8"))
    out, exported = tmp_path / "out", tmp_path / "nano"
    assert main(["train", "--data", str(corpus), "--out", str(out)] + FAST) == 0
    assert main(["export", "--out", str(out), "--to", str(exported), "--format", "nanogpt",
                 "--data", str(corpus)]) == 0
    _, tokenizer, _ = load_checkpoint(str(out))
    train = np.fromfile(exported / "train.bin", dtype=np.uint16)
    val = np.fromfile(exported / "val.bin", dtype=np.uint16)
    assert len(train) + len(val) == len(text), \
        f"expected {len(text)} ids, got {len(train)} + {len(val)}"
    assert len(train) == int(0.9 * len(text)), f"expected a 90% split, got {len(train)} ids"
    got = tokenizer.decode(np.concatenate([train, val]).astype(np.int64))
    assert got == text, f"expected the file's characters back, got {got[:40]!r}..."
