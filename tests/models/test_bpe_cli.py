"""`microtensor train --tokenizer bpe` through the whole tool: trained on the training split,
kept in the checkpoint, any prompt samples, resume keeps it and refuses another."""
import json

import pytest
from mt_testing import needs_dot

from models.cli.main import main
from models.training.checkpoint import load_checkpoint

FAST = ["--preset", "tiny", "--max-iters", "4", "--eval-interval", "2", "--eval-iters", "2",
        "--batch-size", "4", "--block-size", "16", "--n-layer", "1", "--n-head", "2",
        "--n-embd", "16", "--quiet"]
TRAIN_TEXT, VAL_WORD = "Sing, goddess, the anger of Achilles, son of Peleus.\n" * 40, "zqxj"


@pytest.fixture(scope="module")
def bpe_run(tmp_path_factory):
    data = tmp_path_factory.mktemp("data") / "corpus.txt"
    # the last 10% is a word the training split never has: no merge may join its letters
    data.write_text(TRAIN_TEXT + (VAL_WORD + " ") * 60, encoding="utf-8")
    out = tmp_path_factory.mktemp("out")
    argv = ["train", "--data", str(data), "--out", str(out), "--tokenizer", "bpe",
            "--vocab-size", "280"] + FAST
    assert main(argv) == 0
    return data, out


def test_bpe_is_learned_on_the_training_split_and_kept_in_the_checkpoint(bpe_run):
    _, out = bpe_run
    model, tok, _ = load_checkpoint(out)
    assert tok.vocab_size == model.config.vocab_size == 280
    assert tok.encode(VAL_WORD) == list(VAL_WORD.encode()), "a merge was learned from val text"
    assert len(tok.encode(" Achilles")) < len(" Achilles"), "the training text was not merged"


def test_sample_takes_any_prompt(bpe_run, capsys):
    _, out = bpe_run
    prompt = "héllo 🙂 \x00 日本"
    assert main(["sample", "--out", str(out), "--prompt", prompt, "--num-chars", "5"]) == 0
    assert capsys.readouterr().out.startswith(prompt)


@pytest.mark.parametrize("flags, message", [
    (["--tokenizer", "char"], "was trained with the bpe tokenizer; a resumed run keeps it"),
    (["--tokenizer", "bpe", "--vocab-size", "400"],
     "the checkpoint's tokenizer has 280 tokens; a resumed run keeps it"),
])
def test_resume_refuses_another_tokenizer(bpe_run, capsys, flags, message):
    data, out = bpe_run
    before = (out / "config.json").read_text()
    code = main(["train", "--resume", "--out", str(out), "--max-iters", "6", "--quiet"] + flags)
    err = capsys.readouterr().err
    assert code != 0 and message in err, f"expected {message!r}, got {err!r}"
    assert (out / "config.json").read_text() == before


def test_resume_keeps_the_saved_bpe(bpe_run):
    data, out = bpe_run
    merges = json.loads((out / "config.json").read_text())["info"]["bpe"]["merges"]
    assert main(["train", "--resume", "--out", str(out), "--max-iters", "6", "--quiet"]) == 0
    assert json.loads((out / "config.json").read_text())["info"]["bpe"]["merges"] == merges


# --- the commands that read a checkpoint: each through the tokenizer's encode/decode ----------

def test_graph_draws_a_training_step_of_a_bpe_model(bpe_run, tmp_path, capsys):
    """graph's batch is the built-in corpus through the model's own encode (it read the
    character tokenizer's stoi: AttributeError on a BPE)."""
    _, out = bpe_run
    assert main(["graph", "--out", str(out), "-o", str(tmp_path / "g.dot")]) == 0
    assert "boxes" in capsys.readouterr().out and (tmp_path / "g.dot").stat().st_size > 0


@needs_dot
def test_explore_writes_a_page_of_a_bpe_model(bpe_run, tmp_path):
    _, out = bpe_run
    assert main(["explore", "--out", str(out), "--output", str(tmp_path / "e.html")]) == 0
    assert (tmp_path / "e.html").read_text(encoding="utf-8").startswith("<!DOCTYPE html>")


def test_attention_labels_each_bpe_token_and_keeps_the_last_block_size(bpe_run, tmp_path,
                                                                       monkeypatch, capsys):
    """A BPE prompt is its tokens, each labelled by its own decoded text (the labels were the
    prompt's characters: more of them than keys), at most block_size (16) of them. é, never
    merged in training, is two byte tokens: each alone is not UTF-8, so each shows U+FFFD."""
    import viz
    _, out = bpe_run
    _, tok, _ = load_checkpoint(out)
    drawn = []
    heatmap = viz.attention_heatmap
    monkeypatch.setattr(viz, "attention_heatmap",
                        lambda weights, labels, *a, **k: drawn.append(labels) or heatmap(
                            weights, labels, *a, **k))
    short, long = "Sing, goddess é", "Sing, goddess, the anger of Achilles, héllo"
    assert main(["attention", "--out", str(out), "--prompt", short, "-o",
                 str(tmp_path / "a.svg")]) == 0
    ids = tok.encode(short)
    assert drawn[-1] == [tok.decode([i]) for i in ids]
    assert "".join(drawn[-1]) == "Sing, goddess " + "\ufffd" * 2, drawn[-1]
    assert f"over {len(ids)} tokens" in capsys.readouterr().out
    assert main(["attention", "--out", str(out), "--prompt", long, "-o",
                 str(tmp_path / "b.svg")]) == 0
    assert len(tok.encode(long)) > 16 and len(drawn[-1]) == 16
    assert "keeping its last 16 tokens" in capsys.readouterr().out


def test_training_counts_bpe_tokens_not_characters(tmp_path, capsys):
    data = tmp_path / "corpus.txt"
    data.write_text(TRAIN_TEXT, encoding="utf-8")
    assert main(["train", "--data", str(data), "--out", str(tmp_path / "out"), "--tokenizer",
                 "bpe", "--vocab-size", "280"] + FAST) == 0
    _, tok, _ = load_checkpoint(tmp_path / "out")
    n = len(tok.encode(TRAIN_TEXT))
    assert n < len(TRAIN_TEXT), "expected merges: fewer tokens than characters"
    said = capsys.readouterr().out
    assert f"({int(n * 0.9):,} train / {n - int(n * 0.9):,} val tokens, vocabulary 280)" in said
    data_info = json.loads((tmp_path / "out" / "config.json").read_text())["info"]["data"]
    assert data_info["tokens"] == n and "characters" not in data_info, data_info


def test_export_nanogpt_refuses_a_bpe_model_before_writing(bpe_run, tmp_path, capsys):
    _, out = bpe_run
    code = main(["export", "--out", str(out), "--format", "nanogpt", "--to", str(tmp_path / "x")])
    err = capsys.readouterr().err
    assert code == 1 and "nanoGPT's meta.pkl holds a character vocabulary only" in err, err
    assert len(err.strip().splitlines()) == 1 and not (tmp_path / "x").exists()
