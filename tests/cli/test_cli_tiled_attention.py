"""`train --attention tiled` and `translate train --attention tiled` (notes 3.8): the same losses
as ordinary attention, a checkpoint that remembers the choice, and pictures of its weights."""
import json

import pytest

from models.cli.main import main
from models.training.checkpoint import load_checkpoint
from models.training.settings import TrainConfig

GPT_FLAGS = ["--preset", "tiny", "--max-iters", "4", "--eval-interval", "2", "--eval-iters", "2",
             "--batch-size", "4", "--block-size", "24", "--n-layer", "1", "--n-head", "2",
             "--n-embd", "16", "--quiet"]
SEQ2SEQ_FLAGS = ["--quiet", "--max-iters", "4", "--eval-interval", "2", "--n-train", "64",
                 "--n-test", "8", "--d-model", "16", "--n-heads", "2", "--n-encoder-layers", "1",
                 "--n-decoder-layers", "1", "--d-ff", "16", "--batch-size", "8"]


def _losses(out):
    rows = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    return [(r["iter"], r["train_loss"], r["val_loss"]) for r in rows]


def _same_losses(tiled, ordinary):
    assert [r[0] for r in tiled] == [r[0] for r in ordinary], (tiled, ordinary)
    for a, b in zip(tiled, ordinary):
        assert a[1:] == pytest.approx(b[1:], rel=1e-5), f"expected ordinary's {b}, got {a}"


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    path = tmp_path_factory.mktemp("data") / "corpus.txt"
    path.write_text("Sing, goddess, the anger of Achilles, son of Peleus.\n" * 30, encoding="utf-8")
    return path


def test_train_with_tiled_attention_gives_ordinary_losses_and_keeps_the_choice(corpus, tmp_path,
                                                                               capsys):
    for attention in ("ordinary", "tiled"):
        argv = ["train", "--data", str(corpus), "--out", str(tmp_path / attention),
                "--attention", attention]
        assert main(argv + GPT_FLAGS) == 0
    _same_losses(_losses(tmp_path / "tiled"), _losses(tmp_path / "ordinary"))
    model, _, _ = load_checkpoint(tmp_path / "tiled")
    assert model.config.attention == "tiled", model.config
    picture = tmp_path / "weights.svg"  # the picture of a tiled model's weights still works
    assert main(["attention", "--out", str(tmp_path / "tiled"), "--prompt", "Sing",
                 "--output", str(picture)]) == 0
    assert picture.stat().st_size > 0


def test_translate_train_with_tiled_attention_gives_ordinary_losses(tmp_path):
    for attention in ("ordinary", "tiled"):
        argv = ["translate", "train", "--out", str(tmp_path / attention), "--attention", attention]
        assert main(argv + SEQ2SEQ_FLAGS) == 0
    _same_losses(_losses(tmp_path / "tiled"), _losses(tmp_path / "ordinary"))


def test_an_unknown_attention_is_a_usage_error(capsys, corpus, tmp_path):
    assert main(["train", "--data", str(corpus), "--out", str(tmp_path), "--attention",
                 "flash"]) == 2
    assert "--attention: invalid choice: 'flash'" in capsys.readouterr().err


def test_settings_saved_before_the_choice_existed_read_as_ordinary():
    saved = TrainConfig().to_dict()
    del saved["attention"]
    assert TrainConfig.from_dict(saved).attention == "ordinary"
