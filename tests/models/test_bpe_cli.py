"""`microtensor train --tokenizer bpe` through the whole tool: trained on the training split,
kept in the checkpoint, any prompt samples, resume keeps it and refuses another."""
import json

import pytest

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
