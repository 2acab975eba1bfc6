"""The matplotlib charts: attention heatmaps with characters on both axes, gradient flow across
depth, loss curves from metrics.jsonl."""
import json

import numpy as np
import pytest

import viz


def test_the_heatmap_has_one_panel_per_layer_and_head_with_characters_on_both_axes():
    chars = list("to be")
    w = np.random.default_rng(0).dirichlet(np.ones(5), size=(2, 3, 5))  # [L, H, T, T]
    figure = viz.attention_heatmap(w, chars, layers=[0, 1], heads=[0, 1, 2])
    panels = [ax for ax in figure.axes if ax.get_title()]
    assert len(panels) == 6, f"expected 2 layers x 3 heads = 6 panels, got {len(panels)}"
    ax = panels[0]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["t", "o", "␣", "b", "e"], \
        "expected the keys across, the space made visible"
    assert [t.get_text() for t in ax.get_yticklabels()] == ["t", "o", "␣", "b", "e"], \
        "expected the queries down"
    assert panels[4].get_title() == "layer 1, head 1", f"got {panels[4].get_title()!r}"
    np.testing.assert_allclose(panels[5].images[0].get_array(), w[1, 2],
                               err_msg="expected panel (1, 2) to show layer 1, head 2")


def test_a_single_head_map_is_accepted():
    figure = viz.attention_heatmap(np.eye(3), "abc")
    assert len([ax for ax in figure.axes if ax.get_title()]) == 1, "expected one panel"


def test_the_heatmap_refuses_characters_that_do_not_match_the_keys():
    with pytest.raises(ValueError, match="4 characters but 3 keys"):
        viz.attention_heatmap(np.eye(3), "abcd")


def test_the_colour_key_mentions_grey_only_when_some_key_is_blocked():
    causal = np.tril(np.full((3, 3), 1 / 3))        # zeros above the diagonal: blocked keys
    uniform = np.full((3, 3), 1 / 3)                # cross-attention: nothing blocked
    labels = [viz.attention_heatmap(w, "abc").axes[-1].get_ylabel() for w in (causal, uniform)]
    assert labels == ["attention weight (grey: blocked key)", "attention weight"], labels


def test_gradient_flow_draws_one_line_per_model_on_a_log_scale():
    series = {"pre-norm": [0.4, 0.3, 0.2], "post-norm": [0.01, 0.01, 0.01]}
    (ax,) = viz.gradient_flow(series).axes
    assert ax.get_yscale() == "log", "expected a log scale"
    lines = {line.get_label(): line for line in ax.get_lines()}
    np.testing.assert_allclose(lines["pre-norm"].get_ydata(), [0.4, 0.3, 0.2])
    np.testing.assert_allclose(lines["post-norm"].get_xdata(), [0, 1, 2], err_msg="x = block index")


def test_gradient_flow_draws_stages_side_by_side():
    stages = {"at initialisation": {"pre": [0.3, 0.2], "post": [0.1, 0.1]},
              "after 100 steps": {"pre": [0.5, 0.1], "post": [0.01, 0.2]}}
    axes = viz.gradient_flow(stages).axes
    assert [ax.get_title() for ax in axes] == list(stages), f"got {[ax.get_title() for ax in axes]}"
    np.testing.assert_allclose(axes[1].get_lines()[1].get_ydata(), [0.01, 0.2],
                               err_msg="expected the post line of the second stage")


def test_gradient_flow_refuses_a_norm_that_cannot_go_on_a_log_scale():
    with pytest.raises(ValueError, match="norm <= 0"):
        viz.gradient_flow({"broken": [0.1, 0.0]})
    with pytest.raises(ValueError, match="nothing to plot"):
        viz.gradient_flow({})


def write_metrics(path, records):
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return str(path)


def test_the_loss_curve_plots_train_and_validation_against_iteration(tmp_path):
    records = [{"iter": i, "train_loss": 4.0 - i / 100, "val_loss": 4.1 - i / 120, "elapsed_s": i}
               for i in (0, 100, 200)]
    figure = viz.loss_curve(write_metrics(tmp_path / "metrics.jsonl", records))
    (ax,) = figure.axes
    lines = {line.get_label(): line for line in ax.get_lines()}
    assert set(lines) == {"train", "validation"}, f"got {sorted(lines)}"
    np.testing.assert_allclose(lines["train"].get_xdata(), [0, 100, 200])
    np.testing.assert_allclose(lines["validation"].get_ydata(), [r["val_loss"] for r in records])


def test_metrics_errors_name_the_line(tmp_path):
    path = tmp_path / "metrics.jsonl"
    path.write_text('{"iter": 0, "train_loss": 4, "val_loss": 4}\n{oops\n', encoding="utf-8")
    with pytest.raises(ValueError, match="line 2: not JSON"):
        viz.read_metrics(str(path))
    path.write_text('{"iter": 0, "train_loss": 4}\n', encoding="utf-8")
    with pytest.raises(ValueError, match=r"line 1: missing \['val_loss'\]"):
        viz.read_metrics(str(path))
    path.write_text("\n", encoding="utf-8")
    with pytest.raises(ValueError, match="no evaluation records"):
        viz.loss_curve(str(path))
