"""Charts drawn with matplotlib: attention heatmaps, gradient norm across depth, and loss curves.

Each function returns a `matplotlib.figure.Figure` (shown inline in Jupyter; save it with
`fig.savefig("x.png")`). Figures are built without pyplot so they work with no display.
"""
import json
import os

import numpy as np

from .optional import require


def Figure(**kwargs):  # noqa: N802 (matplotlib's class, imported on first use)
    """A matplotlib Figure; matplotlib is imported here, on first use, so that `import viz`
    works where it is missing (a browser's Pyodide): ImportError naming the install then."""
    return require("matplotlib.figure", "the charts of viz.plots").Figure(**kwargs)

_VISIBLE = {" ": "␣", "\n": "⏎", "\t": "⇥"}


def _colormap(name):
    return require("matplotlib", "the charts of viz.plots").colormaps[name]


def printable(chars):
    """Characters as tick labels: a space, newline or tab becomes a visible symbol."""
    return [_VISIBLE.get(c, c) for c in chars]


def attention_heatmap(weights, chars, layers=None, heads=None, title=None, query_chars=None):
    """A grid of heatmaps of attention weights: one row per layer, one column per head.

    Args:
        weights: array [L, H, T_q, T_k] (or [H, T_q, T_k], or [T_q, T_k]) of one sequence.
        chars: the T characters of that sequence (queries down, keys across).
        layers, heads: the indices to draw (default: all); used for the panel titles.
        query_chars: the T_q labels of the queries when they are another sequence than
            the keys (cross-attention: output down, source across); default: the last
            T_q of `chars`.
    Raises ValueError when the weights' shape does not match the characters.
    """
    w = np.asarray(weights, dtype=np.float64)
    while w.ndim < 4:
        w = w[None]
    n_layers, n_heads, t_q, t_k = w.shape
    if len(chars) != t_k:
        raise ValueError(f"attention_heatmap: {len(chars)} characters but {t_k} keys "
                         f"(weights shape {np.shape(weights)})")
    if query_chars is not None and len(query_chars) != t_q:
        raise ValueError(f"attention_heatmap: {len(query_chars)} query labels but {t_q} "
                         f"queries (weights shape {np.shape(weights)})")
    layers = list(range(n_layers)) if layers is None else list(layers)
    heads = list(range(n_heads)) if heads is None else list(heads)
    labels = printable(chars)
    rows = labels[t_k - t_q:] if query_chars is None else printable(query_chars)
    # a weight of exactly 0 is a blocked key (exp(−∞) = 0; softmax gives no other zero):
    # grey, so the causal mask reads apart from weights that are merely small
    cmap = _colormap("viridis").with_extremes(bad="#d9d9d9")
    w = np.ma.masked_equal(w, 0.0)
    cell = max(2.2, 0.22 * t_k)
    fig = Figure(figsize=(cell * n_heads + 1.0, cell * n_layers + 0.8), layout="constrained")
    axes = fig.subplots(n_layers, n_heads, squeeze=False)
    for i in range(n_layers):
        for j in range(n_heads):
            ax = axes[i][j]
            image = ax.imshow(w[i, j], vmin=0, vmax=1, cmap=cmap)
            ax.set_title(f"layer {layers[i]}, head {heads[j]}", fontsize=9)
            ax.set_xticks(range(t_k), labels, fontsize=7)
            ax.set_yticks(range(t_q), rows, fontsize=7)
            ax.set_xlabel("key", fontsize=8)
            ax.set_ylabel("query", fontsize=8)
    blocked = bool(np.ma.getmaskarray(w).any())  # the key says grey only where grey is drawn
    label = "attention weight" + (" (grey: blocked key)" if blocked else "")
    fig.colorbar(image, ax=axes, shrink=0.6, label=label)
    if title:
        fig.suptitle(title)
    return fig


def gradient_flow(series, title="Gradient norm along the residual stream"):
    """‖∂L/∂x_l‖ at the input of each block l, one line per model, log scale.

    Args:
        series: {label: [norm at block 0, block 1, ...]} for one panel, e.g. pre-norm vs
            post-norm; or {panel title: {label: [norms]}} for panels side by side, e.g.
            "at initialisation" and "after 100 steps".
    Raises ValueError for an empty series or a norm that is not positive.
    """
    nested = series and all(isinstance(v, dict) for v in series.values())
    panels = series if nested else {"": series}
    if not series or not all(p and all(len(n) for n in p.values()) for p in panels.values()):
        raise ValueError("gradient_flow: nothing to plot; give {label: [norm per block]}")
    for lines in panels.values():
        for label, norms in lines.items():
            if not all(n > 0 for n in norms):
                raise ValueError(f"gradient_flow: {label!r} has a norm <= 0 (or NaN): "
                                 f"{list(norms)}")
    fig = Figure(figsize=(4.8 * len(panels) + 0.4, 4.0), layout="constrained")
    axes = fig.subplots(1, len(panels), squeeze=False, sharey=True)[0]
    for ax, (panel, lines) in zip(axes, panels.items()):
        for label, norms in lines.items():
            ax.plot(range(len(norms)), norms, marker="o", label=label)
        ax.set_yscale("log")
        ax.set_xlabel("block l (0 = nearest the input)")
        ax.set_title(panel, fontsize=10)
        ax.grid(True, which="major", alpha=0.3)
        ax.legend(fontsize=8)
    axes[0].set_ylabel("‖∂L/∂x_l‖ at the input of block l")
    fig.suptitle(title, fontsize=11)
    return fig


def read_metrics(path):
    """The evaluation records of a training run: one JSON object per line of metrics.jsonl.

    Bytes that are not UTF-8 read as U+FFFD, as training/run.py does when it trims the file on
    resume: one inside a JSON string leaves its line readable, one elsewhere makes the line
    not JSON.
    Raises ValueError naming the file and the line that is not JSON, lacks
    iter/train_loss/val_loss, or holds one of the wrong type (iter an integer, the losses
    numbers or null).
    """
    records = []
    with open(path, encoding="utf-8", errors="replace") as f:
        for number, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as error:
                raise ValueError(f"{path}, line {number}: not JSON ({error.msg})") from None
            except (RecursionError, ValueError):  # nested too deep, a 5000-digit integer
                raise ValueError(f"{path}, line {number}: not a record of metrics.jsonl "
                                 "(too deeply nested or too long a number)") from None
            missing = [k for k in ("iter", "train_loss", "val_loss")
                       if not isinstance(record, dict) or k not in record]
            if missing:
                raise ValueError(f"{path}, line {number}: missing {missing}")
            for key, kinds in (("iter", (int,)), ("train_loss", (int, float, type(None))),
                               ("val_loss", (int, float, type(None)))):
                if type(record[key]) not in kinds:  # type(): a bool is not an iteration
                    raise ValueError(f"{path}, line {number}: {key} is {record[key]!r:.40}; "
                                     f"expected {'an integer' if key == 'iter' else 'a number'}")
            records.append(record)
    return records


def loss_curve(metrics, title="Training and validation loss"):
    """Train and validation loss against iteration, from records with iter/train_loss/val_loss.

    When the records also carry "grad_norms" ({module: ‖∂L/∂θ‖}, written by `microtensor
    train --log-grad-norms`), a second panel beside the loss draws one curve per module,
    log scale: which parts of the model are still being pushed, and how hard.

    Args:
        metrics: a path to metrics.jsonl, or the list of records itself.
    Raises ValueError if there is no record to plot.
    """
    records = read_metrics(metrics) if isinstance(metrics, (str, os.PathLike)) else list(metrics)
    if not records:
        raise ValueError("loss_curve: no evaluation records to plot")
    iters = [r["iter"] for r in records]
    with_norms = [r for r in records if r.get("grad_norms")]
    fig = Figure(figsize=(11.0 if with_norms else 6.4, 4.0), layout="constrained")
    axes = fig.subplots(1, 2 if with_norms else 1, squeeze=False)[0]
    ax = axes[0]
    ax.plot(iters, [r["train_loss"] for r in records], marker="o", label="train")
    ax.plot(iters, [r["val_loss"] for r in records], marker="s", label="validation")
    ax.set_xlabel("iteration")
    ax.set_ylabel("cross-entropy loss (nats per character)")
    ax.set_title(title, fontsize=10)
    ax.grid(True, alpha=0.3)
    ax.legend()
    if with_norms:
        _grad_norm_panel(axes[1], with_norms)
    return fig


def _grad_norm_panel(ax, records):
    """One curve per module of ‖∂L/∂θ‖ (the gradient of its parameters) at each evaluation."""
    modules = list(dict.fromkeys(m for r in records for m in r["grad_norms"]))
    cmap = _colormap("viridis")
    for i, module in enumerate(modules):
        points = [(r["iter"], r["grad_norms"][module]) for r in records
                  if r["grad_norms"].get(module, 0) > 0]
        if points:
            ax.plot(*zip(*points), marker=".", label=module,
                    color=cmap(i / max(1, len(modules) - 1)))
    ax.set_yscale("log")
    ax.set_xlabel("iteration")
    ax.set_ylabel("‖∂L/∂θ‖ of the module's parameters")
    ax.set_title("gradient norm per module (last training step before each evaluation)",
                 fontsize=10)
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(fontsize=7, ncol=2)
