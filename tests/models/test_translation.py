"""The built-in dates task (models/tasks/dates.py) and `microtensor translate train / run`."""
import datetime
import json
import os

import numpy as np
import pytest

from models.cli.main import main
from models.tasks import dates as task
from models.training.checkpoint import load_model


def test_every_phrasing_writes_the_same_date_and_the_target_is_iso():
    date = datetime.date(1999, 3, 3)
    words = {task.phrase(date, p, capitalise=p % 2 == 1) for p in range(len(task.PHRASINGS))}
    assert words == {"the third of march, 1999", "March 3rd 1999", "3 mar 1999",
                     "March 3, 1999", "3rd of march, 1999", "Mar 3 1999",
                     "third march 1999"}, f"got {sorted(words)}"


def test_ordinals_and_suffixes_cover_every_day():
    assert task.ORDINALS[20] == "twenty-first" and task.ORDINALS[30] == "thirty-first"
    suffixes = [f"{d}{task._suffix(d)}" for d in (1, 2, 3, 4, 11, 12, 13, 21, 22, 23, 31)]
    assert suffixes == ["1st", "2nd", "3rd", "4th", "11th", "12th", "13th", "21st", "22nd",
                        "23rd", "31st"], f"got {suffixes}"


def test_held_out_dates_never_occur_in_training_and_the_pairs_repeat_for_a_seed():
    train, test = task.date_pairs(2000, 300, seed=5)
    assert not {t for _, t in train} & {t for _, t in test}, "a held-out date is in training"
    assert task.date_pairs(2000, 300, seed=5) == (train, test), "same seed, different pairs"
    lengths = {len(s) for s, _ in train}
    assert min(lengths) <= 12 and max(lengths) >= 30, f"source lengths vary: {sorted(lengths)}"
    assert all(len(s) <= task.MAX_LEN for s, _ in train)


def test_tokenizers_put_pad_bos_eos_first_and_cover_every_source():
    src, tgt = task.source_tokenizer(), task.target_tokenizer()
    ids = tgt.encode("1999-03-03", bos=True, eos=True)
    assert ids[0] == 1 and ids[-1] == 2 and min(ids[1:-1]) >= 3, f"got {ids}"
    assert tgt.decode(ids + [0, 0]) == "1999-03-03"
    for words, _ in task.date_pairs(500, 10, seed=1)[0]:
        assert src.decode(src.encode(words)) == words


def test_encode_batch_pads_and_shifts_the_target_by_one():
    src_tok, tgt_tok = task.source_tokenizer(), task.target_tokenizer()
    src, tgt_in, targets = task.encode_batch([("3 Mar 1999", "1999-03-03"),
                                              ("the third of march, 1999", "1999-03-03")],
                                             src_tok, tgt_tok)
    assert src.shape == (2, 24) and np.all(src[0, 10:] == 0), f"src {src.shape}: {src[0]}"
    assert tgt_in.shape == targets.shape == (2, 11)
    np.testing.assert_array_equal(tgt_in[:, 1:], targets[:, :-1], err_msg="teacher forcing shift")
    assert np.all(tgt_in[:, 0] == 1) and np.all(targets[:, -1] == 2)


def _train(out, *extra):
    return main(["translate", "train", "--out", str(out), "--quiet", "--max-iters", "6",
                 "--eval-interval", "3", "--n-train", "64", "--n-test", "8", "--d-model", "16",
                 "--n-heads", "2", "--n-encoder-layers", "1", "--n-decoder-layers", "1",
                 "--d-ff", "16", "--batch-size", "8", *extra])


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """The checkpoint directory of a 6-step run of a tiny model (under a second)."""
    out = tmp_path_factory.mktemp("translate") / "out"
    assert _train(out) == 0
    return out


def test_translate_train_writes_metrics_with_exact_match(trained):
    rows = [json.loads(line) for line in (trained / "metrics.jsonl").read_text().splitlines()]
    assert [r["iter"] for r in rows] == [0, 3, 6], f"got {rows}"
    assert all(set(r) >= {"train_loss", "val_loss", "exact_match", "elapsed_s"} for r in rows)
    assert all(0 <= r["exact_match"] <= 1 for r in rows)


def test_translate_run_prints_a_translation(trained, capsys):
    assert main(["translate", "run", "--out", str(trained), "3 Mar 1999"]) == 0
    line = capsys.readouterr().out.strip()
    assert line and set(line) <= set("-0123456789"), f"expected digits and hyphens; got {line!r}"


def test_translate_train_refuses_an_out_that_holds_a_checkpoint(trained, capsys):
    before = {p: os.path.getmtime(trained / p) for p in os.listdir(trained)}
    assert _train(trained) == 1
    assert "already holds a checkpoint" in capsys.readouterr().err
    after = {p: os.path.getmtime(trained / p) for p in os.listdir(trained)}
    assert after == before, "a refused run changed the directory"


def test_an_interrupted_run_resumed_ends_with_the_weights_of_an_uninterrupted_one(tmp_path):
    assert _train(tmp_path / "whole") == 0
    assert _train(tmp_path / "parts", "--max-iters", "3") == 0
    assert _train(tmp_path / "parts", "--resume") == 0          # _train asks for 6 steps
    whole, _ = load_model(tmp_path / "whole", "latest", kind="seq2seq")
    parts, _ = load_model(tmp_path / "parts", "latest", kind="seq2seq")
    for (name, a), b in zip(whole.state_dict().items(), parts.state_dict().values()):
        np.testing.assert_array_equal(a, b, err_msg=f"{name} after 3 + 3 steps vs 6")
    lines = (tmp_path / "parts" / "metrics.jsonl").read_text().splitlines()
    rows = [json.loads(line) for line in lines]
    assert [r["iter"] for r in rows] == [0, 3, 6], f"metrics.jsonl continued: got {rows}"


def test_translate_train_resume_keeps_the_saved_settings(trained, capsys):
    assert _train(trained, "--resume", "--max-iters", "9", "--d-model", "32") == 1
    assert "--d-model 32 differs from the checkpoint's 16" in capsys.readouterr().err


@pytest.mark.parametrize("flags, message", [
    (["--d-model", "10", "--n-heads", "4"], "--d-model 10 must be divisible by --n-heads 4"),
    (["--label-smoothing", "1.5"], "--label-smoothing must be in [0, 1)"),
    (["--n-test", "73049"], "--n-test must be below the task's 73,049 dates (1900-2099); "
                            "got 73049"),
])
def test_translate_train_names_the_bad_setting(tmp_path, capsys, flags, message):
    assert _train(tmp_path / "out", *flags) == 1
    assert message in capsys.readouterr().err
    assert not (tmp_path / "out").exists(), "a refused setting should write nothing"


def test_translate_run_names_a_character_outside_the_vocabulary(trained, capsys):
    assert main(["translate", "run", "--out", str(trained), "3 Mär 1999"]) == 1
    assert "TEXT: character 'ä'" in capsys.readouterr().err


def test_translate_run_draws_the_cross_attention_heatmap(trained, tmp_path):
    path = tmp_path / "xattn.png"
    assert main(["translate", "run", "--out", str(trained), "3 Mar 1999",
                 "--attention", str(path)]) == 0
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", "expected a PNG file"



def png_size(path):
    """(width, height) in pixels, read from a PNG's IHDR chunk."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "expected a PNG file"
    return int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")


def test_translate_run_size_and_dpi_make_a_16_9_slide(trained, tmp_path):
    path = tmp_path / "xattn.png"
    assert main(["translate", "run", "--out", str(trained), "3 Mar 1999", "--size", "16:9",
                 "--dpi", "72", "--attention", str(path)]) == 0
    assert png_size(path) == (960, 540), f"expected 13.33 x 7.5 in at 72 dpi; got {png_size(path)}"


def test_a_bad_size_fails_before_translating(trained, capsys):
    assert main(["translate", "run", "--out", str(trained), "3 Mar 1999", "--size", "wide",
                 "--attention", "x.png"]) == 1
    out, err = capsys.readouterr()
    assert out == "" and "got 'wide'" in err, f"expected no translation and the size named; " \
                                              f"got {out!r}, {err!r}"


@pytest.mark.parametrize("n_heads, page, expected", [
    (4, None, 1),              # natural size: stacked
    (4, (40 / 3, 7.5), 2),     # 16:9: 2 x 2, cells 0.17 in against 0.08 stacked or in a row
    (2, (40 / 3, 7.5), 1),     # two heads: one above the other
    (4, (30.0, 4.0), 4),       # a wide strip: all in a row
])
def test_cross_attention_heads_take_the_grid_that_draws_characters_largest(n_heads, page,
                                                                           expected):
    from models.cli.translate import head_columns

    got = head_columns(n_heads, t_out=11, t_src=35, page=page)
    assert got == expected, f"expected {expected} column(s); got {got}"


def test_translate_graph_size_fills_the_page(tmp_path):
    path = tmp_path / "step.dot"
    assert main(["translate", "graph", "--depth", "1", "--size", "16:9", "-o", str(path)]) == 0
    assert 'size="13.333,7.500!"' in path.read_text(), "expected a 13.33 x 7.5 in page"

def test_translate_graph_has_encoder_and_decoder_clusters_joined_by_cross_attention(tmp_path):
    path = tmp_path / "step.dot"
    assert main(["translate", "graph", "-o", str(path)]) == 0
    source = path.read_text()
    for cluster in ("cluster_encoder.0", "cluster_decoder.0", "multihead_attn"):
        assert cluster in source, f"expected {cluster!r} in the graph"


def test_sigterm_saves_the_latest_state_and_resume_finishes_the_run(tmp_path, monkeypatch, capsys):
    import signal

    from models.training.run import TrainingRun

    check_finite = TrainingRun.check_finite

    def signal_at_iter_4(self, value, it, what):  # as if SIGTERM arrived during step 4
        if it == 4 and what == "training loss":
            self.stop_signal = signal.SIGTERM
        return check_finite(self, value, it, what)

    monkeypatch.setattr(TrainingRun, "check_finite", signal_at_iter_4)
    assert _train(tmp_path / "out") == 143, "SIGTERM exits with 128 + 15"
    _, manifest = load_model(tmp_path / "out", "latest", kind="seq2seq")
    assert manifest["latest"]["iter"] == 5, f"latest state saved at {manifest['latest']['iter']}"
    assert "SIGTERM at iter 5" in capsys.readouterr().err
    monkeypatch.setattr(TrainingRun, "check_finite", check_finite)
    assert _train(tmp_path / "out", "--resume") == 0
    assert _train(tmp_path / "whole") == 0
    resumed, _ = load_model(tmp_path / "out", "latest", kind="seq2seq")
    whole, _ = load_model(tmp_path / "whole", "latest", kind="seq2seq")
    for (name, a), b in zip(whole.state_dict().items(), resumed.state_dict().values()):
        np.testing.assert_array_equal(a, b, err_msg=f"{name}: stopped at 5 and resumed vs whole")


class _Scripted:
    """A stand-in translator whose greedy output rows are given (only what exact_match reads)."""

    def __init__(self, rows, max_len=16):
        self.rows, self.config = rows, type("Config", (), {"max_len": max_len})()

    def generate(self, src, max_new_tokens):
        return np.array(self.rows[:len(src)], dtype=np.int64)


def test_exact_match_counts_stray_pad_or_bos_and_a_missing_eos_as_misses():
    src_tok, tgt_tok = task.source_tokenizer(), task.target_tokenizer()
    target = "2024-01-05"
    right = tgt_tok.encode(target, eos=True)
    pad, bos = tgt_tok.pad_id, tgt_tok.bos_id
    cases = {
        "the target, eos, then pad filling": (right + [pad] * 3, 1.0),
        "pad and bos inside the date": (right[:3] + [pad, bos] + right[3:], 0.0),
        "the date without eos": (right[:-1] + [pad] * 4, 0.0),
        "the target, then more after eos": (right + [5, 6], 1.0),
    }
    for name, (row, expected) in cases.items():
        width = max(len(r) for r, _ in cases.values())
        row = row + [pad] * (width - len(row))
        got = task.exact_match(_Scripted([row]), [("5 january 2024", target)], src_tok, tgt_tok)
        assert got == expected, f"{name}: expected exact_match {expected}, got {got}"


def test_translate_weight_decay_is_one_adamw_group_over_every_parameter(tmp_path):
    """--weight-decay's help says "AdamW weight decay" (every parameter, as translate has always
    trained): one group, so the checkpoints of earlier versions still resume."""
    assert _train(tmp_path / "out", "--weight-decay", "0.5") == 0
    manifest = json.loads((tmp_path / "out" / "config.json").read_text())
    model, _ = load_model(tmp_path / "out", "latest", kind="seq2seq")
    groups = [(g["weight_decay"], g["params"]) for g in manifest["latest"]["param_groups"]]
    expected = [(0.5, list(range(len(model.parameters()))))]
    assert groups == expected, f"expected one group {expected}; got {groups}"
