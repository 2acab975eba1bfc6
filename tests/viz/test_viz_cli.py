"""The picture commands: `graph`, `attention`, `gradflow` and `plot-loss`, run through their
argparse parsers as `microtensor` runs them."""
import argparse
import json
import re
import xml.etree.ElementTree as ET

import pytest
from mt_testing import needs_dot

import models.cli.attention
import models.cli.gradflow
import models.cli.graph
import models.cli.plot_loss


def run(module, argv):
    parser = argparse.ArgumentParser(prog="microtensor")
    module.add_parser(parser.add_subparsers())
    args = parser.parse_args(argv)
    return args.run(args)


@pytest.fixture
def checkpoint(tmp_path):
    """A checkpoint of an untrained 2-layer, 2-head, 12-wide GPT over the 8 characters of "hello
    world"."""
    from models import GPT, CharTokenizer, GPTConfig
    from models.training.checkpoint import save_model

    tokenizer = CharTokenizer.from_text("hello world")
    model = GPT(GPTConfig(vocab_size=tokenizer.vocab_size, block_size=8, n_layer=2, n_head=2,
                          n_embd=12))
    save_model(str(tmp_path / "ckpt"), model, tokenizer)
    return str(tmp_path / "ckpt")


def test_graph_writes_the_dot_source_of_a_training_step(tmp_path, capsys, read_dot):
    out = tmp_path / "step.dot"
    status = run(models.cli.graph, ["graph", "--preset", "tiny", "--depth", "1", "--seq-len", "4",
                             "--batch-size", "1", "--output", str(out)])
    assert status == 0, f"expected exit status 0, got {status}"
    source = out.read_text(encoding="utf-8")
    assert "blocks.0–1 · TransformerBlock ×2" in source and "‖g‖" in source, \
        "expected the two blocks folded into one box, with gradient norms"
    boxes = len(re.findall(r"^\s*n\d+ \[", source, flags=re.M))
    printed = capsys.readouterr().out
    assert printed.startswith(f"wrote {out}: {boxes} boxes"), \
        f"expected the line to name the file and its {boxes} boxes, got {printed!r}"


@needs_dot
def test_graph_renders_a_focused_view_as_svg_adding_the_suffix(tmp_path):
    run(models.cli.graph, ["graph", "--preset", "tiny", "--focus", "blocks.0.attn",
                           "--seq-len", "4", "--format", "svg", "--output", str(tmp_path / "attn")])
    root = ET.parse(tmp_path / "attn.svg").getroot()
    text = "".join(root.itertext())
    assert "A = softmax(S)" in text, "expected the attention chain in the picture"


def test_graph_of_a_checkpoint_uses_its_vocabulary(checkpoint, tmp_path):
    out = tmp_path / "ckpt.dot"
    run(models.cli.graph, ["graph", "--out", checkpoint, "--seq-len", "8", "--output", str(out)])
    assert "[2,8,8]" in out.read_text(encoding="utf-8"), \
        "expected logits [B, T, V] with the checkpoint's 8 characters"


def test_graph_forward_only_has_no_gradients(tmp_path):
    out = tmp_path / "fwd.dot"
    run(models.cli.graph, ["graph", "--preset", "tiny", "--depth", "1", "--seq-len", "4",
                    "--forward-only", "--output", str(out)])
    assert "‖g‖" not in out.read_text(encoding="utf-8"), "expected the forward graph only"


@pytest.mark.parametrize("argv, message", [
    (["--format", "png", "--output", "g.svg"], "does not match"),
    (["--output", "g.jpeg"], "unknown suffix"),
    (["--seq-len", "999", "--output", "g.dot"], "exceeds the model's block size"),
    (["--preset", "huge", "--output", "g.dot"], "unknown preset"),
    (["--focus", "blocks.9", "--output", "g.dot"], "matches no module"),
])
def test_graph_refuses_bad_flags_with_a_message(tmp_path, monkeypatch, argv, message):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ValueError, match=message):
        run(models.cli.graph, ["graph", "--preset", "tiny", "--seq-len", "4"] + argv
            if "--preset" not in argv else ["graph"] + argv)


def test_attention_draws_every_layer_and_head_of_a_checkpoint(checkpoint, tmp_path, capsys):
    out = tmp_path / "attn.png"
    assert run(models.cli.attention, ["attention", "--out", checkpoint, "--prompt", "hello",
                               "--output", str(out)]) == 0
    assert out.read_bytes()[:4] == b"\x89PNG", "expected a PNG"
    assert "2 layer(s) x 2 head(s) over 5 characters" in capsys.readouterr().out


def test_attention_weights_are_causal_rows_that_sum_to_one(checkpoint):
    import numpy as np

    from models.training.checkpoint import load_checkpoint

    model, tokenizer, _ = load_checkpoint(checkpoint)
    w = models.cli.attention.attention_weights(model, tokenizer.encode("hello"))
    assert w.shape == (2, 2, 5, 5), f"expected [L, H, T, T] = (2, 2, 5, 5), got {w.shape}"
    np.testing.assert_allclose(w.sum(-1), 1.0, rtol=1e-5, err_msg="rows over keys sum to 1")
    assert np.all(np.triu(w, k=1) == 0), "expected no weight on future keys"


@pytest.mark.parametrize("argv, error, message", [
    (["--layer", "2"], ValueError, "--layer 2 is out of range"),
    (["--head", "2"], ValueError, "--head 2 is out of range"),
    (["--prompt", "hello!"], ValueError, "--prompt: character '!'"),
])
def test_attention_refuses_bad_flags(checkpoint, tmp_path, argv, error, message):
    base = ["attention", "--out", checkpoint, "--prompt", "hello",
            "--output", str(tmp_path / "a.png")]
    with pytest.raises(error, match=message):
        run(models.cli.attention, base + argv)


def test_attention_keeps_the_last_block_size_characters(checkpoint, tmp_path, capsys):
    run(models.cli.attention, ["attention", "--out", checkpoint, "--prompt", "hello world",
                        "--layer", "1", "--head", "0", "--output", str(tmp_path / "a.svg")])
    out = capsys.readouterr().out
    assert "keeping its last 8 characters" in out and "1 layer(s) x 1 head(s) over 8" in out, out


SMALL = ["--n-layer", "3", "--n-embd", "8", "--n-head", "2", "--block-size", "8",
         "--batch-size", "2"]


def test_gradflow_charts_pre_and_post_norm_and_prints_the_norms(tmp_path, capsys):
    out = tmp_path / "flow.svg"
    run(models.cli.gradflow, ["gradflow", "--output", str(out)] + SMALL)
    ET.parse(out)  # a well-formed SVG
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("measured: ‖∂L/∂x_l‖") and "float64, one BLAS thread" in lines[0], \
        f"expected a first line saying what was measured and how, got {lines[0]!r}"
    assert lines[1] == "at initialisation:", lines[1]
    assert lines[2].split() == ["block", "pre-norm", "post-norm"], lines[2]
    rows = [line.split() for line in lines[3:6]]
    assert [r[0] for r in rows] == ["0", "1", "2"] and all(len(r) == 3 for r in rows), \
        f"expected one row of two norms per block, got {lines[3:6]}"


def test_gradflow_with_steps_measures_again_after_training(tmp_path, capsys):
    run(models.cli.gradflow,
        ["gradflow", "--steps", "2", "--output", str(tmp_path / "f.png")] + SMALL)
    out, err = capsys.readouterr()
    assert "at initialisation:" in out and "after 2 AdamW steps (lr 0.003, no warmup):" in out, out
    for model in ("pre-norm", "post-norm"):
        assert f"{model}: 100%" in err and "2/2" in err, \
            f"expected a progress bar on stderr for {model}'s 2 steps, got {err!r}"


def test_one_seed_gives_pre_and_post_norm_models_the_same_weights():
    import numpy as np

    import microtensor as mt
    from models import GPT, GPTConfig

    states = []
    for norm_first in (True, False):  # as gradflow builds them
        mt.manual_seed(7)
        states.append(GPT(GPTConfig(vocab_size=9, block_size=8, n_layer=3, n_head=2, n_embd=8,
                                    norm_first=norm_first)).state_dict())
    assert states[0].keys() == states[1].keys(), "expected the same parameters"
    for name in states[0]:
        np.testing.assert_array_equal(states[0][name], states[1][name], err_msg=name)


def test_gradflow_computes_in_float64_unless_asked_for_float32():
    norms64, _ = models.cli.gradflow.stream_gradients(2, 8, 2, 8, 2, seed=3)
    norms32, _ = models.cli.gradflow.stream_gradients(2, 8, 2, 8, 2, seed=3, dtype="float32")
    stage = "at initialisation"
    for label in norms64[stage]:
        a, b = norms64[stage][label], norms32[stage][label]
        assert a != b and a == pytest.approx(b, rel=1e-4), \
            f"expected float32 within rounding of float64 but not equal, got {a} vs {b}"


def test_gradflow_measures_every_block_of_both_models():
    norms, losses = models.cli.gradflow.stream_gradients(2, 8, 2, 8, 2, seed=3)
    (stage,) = norms
    assert [len(v) for v in norms[stage].values()] == [2, 2], f"got {norms}"
    assert len(set(round(v, 6) for v in losses[stage].values())) == 2, \
        f"expected the two norm placements to give different losses, got {losses}"


def test_plot_loss_reads_a_run_directory(tmp_path, capsys):
    (tmp_path / "metrics.jsonl").write_text(
        "".join(json.dumps({"iter": i, "train_loss": 3 - i / 100, "val_loss": 3.1 - i / 100,
                            "elapsed_s": i}) + "\n" for i in (0, 50, 100)), encoding="utf-8")
    out = tmp_path / "loss.png"
    run(models.cli.plot_loss, ["plot-loss", "--metrics", str(tmp_path), "--output", str(out)])
    assert out.read_bytes()[:4] == b"\x89PNG", "expected a PNG"
    assert "3 evaluations; last at iter 100: train 2.0000, val 2.1000" in capsys.readouterr().out


def test_plot_loss_names_a_missing_metrics_file(tmp_path):
    with pytest.raises(FileNotFoundError, match="metrics.jsonl"):
        run(models.cli.plot_loss, ["plot-loss", "--metrics", str(tmp_path), "--output",
                            str(tmp_path / "l.png")])


@needs_dot
def test_graph_animate_writes_one_frame_per_backward_node_of_the_focused_module(tmp_path, capsys):
    from PIL import Image

    out = tmp_path / "steps.gif"
    status = run(models.cli.graph, ["graph", "--preset", "tiny", "--focus", "blocks.0.mlp",
                                    "--seq-len", "4", "--batch-size", "1", "--dpi", "30",
                                    "--animate", str(out)])
    assert status == 0, f"expected exit status 0, got {status}"
    frames = Image.open(out).n_frames
    printed = capsys.readouterr().out
    assert printed.startswith(f"wrote {out}: {frames} frames"), printed
    assert frames == 5, f"expected matmul, gelu, matmul and the two weights, got {frames} frames"


def test_graph_overlay_flops_prints_the_profiles_counts(tmp_path):
    out = tmp_path / "flops.dot"
    run(models.cli.graph, ["graph", "--preset", "tiny", "--focus", "blocks.0.mlp", "--seq-len", "4",
                           "--batch-size", "1", "--overlay", "flops", "--output", str(out)])
    # fc: 2·B·T·D·4D = 2·1·4·64·256 = 131072 FLOPs
    assert "131 kFLOP" in out.read_text(encoding="utf-8"), "expected fc's matmul count in its box"


@pytest.mark.parametrize("argv, message", [
    ([], "--output FILE"),
    (["--animate", "x.gif", "--depth", "1"], "--focus MODULE"),
    (["--animate", "x.mp4"], ".gif, .pdf"),
])
def test_graph_refuses_a_missing_output_an_animation_with_depth_and_an_unknown_suffix(
        tmp_path, argv, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        run(models.cli.graph, ["graph", "--preset", "tiny"] + argv)
