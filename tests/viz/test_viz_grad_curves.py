"""Gradient flow over training: `train --log-grad-norms` writes each module's gradient norm into
metrics.jsonl and `plot-loss` draws those curves beside the loss."""
import json

import numpy as np

import nn
import viz
from models.cli.main import main


def test_grad_norms_by_module_gives_each_block_the_norm_of_its_parameters_grads(tiny_gpt, gpt_step):
    model = tiny_gpt(n_layer=2)
    gpt_step(model)
    norms = nn.utils.grad_norms_by_module(model)
    assert list(norms) == ["wte", "wpe", "blocks.0", "blocks.1", "ln_f"], f"got {list(norms)}"
    grads = [p.grad.astype(np.float64) for name, p in model.named_parameters()
             if name.startswith("blocks.1.")]
    expected = np.sqrt(sum((g ** 2).sum() for g in grads))
    assert np.isclose(norms["blocks.1"], expected, rtol=1e-12), \
        f"expected ‖∂L/∂θ‖ of blocks.1 = {expected}, got {norms['blocks.1']}"


def train_logged(tmp_path):
    out = tmp_path / "run"
    status = main(["train", "--preset", "tiny", "--max-iters", "6", "--eval-interval", "3",
                   "--eval-iters", "1", "--batch-size", "2", "--block-size", "8", "--n-layer", "2",
                   "--out", str(out), "--quiet", "--log-grad-norms"])
    assert status == 0, f"expected train to succeed, got exit status {status}"
    return out


def test_train_log_grad_norms_adds_every_modules_norm_to_each_evaluation_after_the_first(tmp_path):
    out = train_logged(tmp_path)
    records = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert [r["iter"] for r in records] == [0, 3, 6], f"got {[r['iter'] for r in records]}"
    assert "grad_norms" not in records[0], "expected no gradient before the first step"
    for r in records[1:]:
        assert list(r["grad_norms"]) == ["wte", "wpe", "blocks.0", "blocks.1", "ln_f"] and \
            all(v > 0 for v in r["grad_norms"].values()), f"got {r['grad_norms']}"


def test_plot_loss_draws_one_gradient_curve_per_module_beside_the_loss(tmp_path):
    out = train_logged(tmp_path)
    figure = viz.loss_curve(str(out / "metrics.jsonl"))
    loss_panel, norm_panel = figure.axes
    assert [line.get_label() for line in loss_panel.lines] == ["train", "validation"]
    curves = [line.get_label() for line in norm_panel.lines]
    assert curves == ["wte", "wpe", "blocks.0", "blocks.1", "ln_f"], f"got {curves}"
    assert list(norm_panel.lines[2].get_xdata()) == [3, 6], "expected points at iterations 3 and 6"
    assert norm_panel.get_yscale() == "log"
    assert main(["plot-loss", "--metrics", str(out), "--output", str(tmp_path / "loss.png"),
                 "--size", "16:9", "--dpi", "30"]) == 0
