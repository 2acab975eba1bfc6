"""`microtensor explore`: one training step (forward and backward) of a GPT as one self-contained
HTML page that steps through it in the browser, offline (viz.explore; docs/explorer.md).

The model comes from a preset (fresh weights) or a checkpoint of `microtensor train`
(--out DIR), as for `microtensor graph`, whose focus, depth and layout flags it shares.
"""
import time

from .checks import count, picture_file
from .graph import add_model_source, load_model, training_batch


def html_file(text):
    """A type for --output: a picture file name (checks.picture_file) ending in .html."""
    import argparse

    text = picture_file(text)
    if not text.lower().endswith((".html", ".htm")):
        raise argparse.ArgumentTypeError(f"must end in .html (one page that opens in a browser); "
                                         f"got {text!r}")
    return text


def add_parser(subparsers):
    p = subparsers.add_parser(
        "explore", help="write one training step as an HTML page that steps through it",
        description="Run one training step (forward and backward) of a GPT and write it as one "
                    "self-contained HTML file: the graph as `microtensor graph` draws it, a "
                    "step control that walks the forward pass op by op and then backward() in "
                    "the engine's order, and for each node its formulas, statistics and "
                    "heatmaps of value and gradient. Opens offline in any browser.")
    add_model_source(p)
    p.add_argument("--output", "-o", metavar="FILE.html", type=html_file, required=True,
                   help="the page to write")
    p.add_argument("--depth", metavar="N", type=count(1),
                   help="fold modules N levels down into one box each, which open on a click "
                        "(default: every op)")
    p.add_argument("--focus", metavar="MODULE",
                   help="draw only the inside of this module, e.g. blocks.0.attn")
    p.add_argument("--unfold", action="store_true",
                   help="with --depth: one box per repeated block instead of one folded box")
    p.add_argument("--rankdir", choices=["TB", "LR"], default="TB",
                   help="layout direction (default: %(default)s)")
    p.add_argument("--direction", choices=["forward", "backward"], default="forward",
                   help="arrows the way data or the gradient flows (default: %(default)s)")
    p.add_argument("--batch-size", metavar="B", type=count(1), default=12,
                   help="sequences in the batch; the page shows row 0 (default: %(default)s)")
    p.add_argument("--seq-len", metavar="T", type=count(1),
                   help="characters per sequence (default: the model's block size, at most 64)")
    p.add_argument("--title", metavar="TEXT", help="the page's title")
    p.add_argument("--seed", metavar="S", type=count(0), default=0,
                   help="random seed for the weights and the batch (default: %(default)s)")
    p.set_defaults(run=run)


def rebuild_step(preset="baby", *, out=None, seed=0, batch_size=12, seq_len=None, n_layer=None):
    """(model, x, y): the model and batch `microtensor explore` builds for the same flags, to
    check a number of its page from Python (docs/explorer.md, "Checking a number").

        model, x, y = rebuild_step(batch_size=2, seq_len=16)   # --batch-size 2 --seq-len 16
        _, loss = model(x, y); loss.backward()                # the page's step

    Args: as the command's flags --preset, --out (a checkpoint folder; then no preset),
        --seed, --batch-size, --seq-len (default: the block size, at most 64), --n-layer.
    Returns: the GPT in training mode, and int64 token ids x, y [batch_size, seq_len].
    Raises: ValueError for a seq_len past the model's block size, or a bad preset.
    """
    import argparse

    import microtensor

    microtensor.manual_seed(seed)
    model, tokenizer = load_model(argparse.Namespace(out=out, preset=preset, n_layer=n_layer,
                                                     attention=None))
    block = model.config.block_size
    seq_len = seq_len or min(block, 64)
    if seq_len > block:
        raise ValueError(f"--seq-len {seq_len} exceeds the model's block size {block}")
    model.train()  # one training step: dropout, if the model has any, is on
    x, y = training_batch(tokenizer, batch_size, seq_len)
    return model, x, y


def run(args):
    import os

    import viz

    model, x, y = rebuild_step(args.preset, out=args.out, seed=args.seed,
                               batch_size=args.batch_size, seq_len=args.seq_len,
                               n_layer=args.n_layer)
    seq_len = x.shape[1]
    start = time.perf_counter()
    with viz.record_steps():
        _, loss = model(x, y)
        loss.backward()
    stepped = time.perf_counter()
    title = args.title or (f"GPT step: {model.config.n_layer} blocks, batch {args.batch_size}"
                           f"×{seq_len}, loss {loss.item():.3f}")
    viz.explore(loss, args.output, depth=args.depth, focus=args.focus, fold=not args.unfold,
                rankdir=args.rankdir, direction=args.direction, title=title)
    size = os.path.getsize(args.output)
    print(f"wrote {args.output}: {size / 1e6:.2f} MB; step {stepped - start:.2f} s, "
          f"page {time.perf_counter() - stepped:.2f} s; open it in a browser")
    return 0


def grad_norm_curves(metrics_path):
    """{"iter": [...], "modules": {module: [‖g‖, ...]}} from the "grad_norms" of metrics.jsonl
    (written by `train --log-grad-norms`); a module missing at an evaluation reads None."""
    import os

    from viz import read_metrics

    records = [r for r in (read_metrics(metrics_path) if os.path.exists(metrics_path) else [])
               if isinstance(r.get("grad_norms"), dict)]
    modules = list(dict.fromkeys(m for r in records for m in r["grad_norms"]))
    return {"iter": [r["iter"] for r in records],
            "modules": {m: [r["grad_norms"].get(m) for r in records] for m in modules}}


def training_explorer(path, out_dir, ids, block_size, rows=4, seed=0):
    """`on_evaluation(model, it)` for `train --explore`: rewrite the page at `path` (atomically)
    with one forward and backward of the current weights on a fixed batch (rows windows of
    `ids`, drawn once with a generator of its own) and the gradient-norm curves so far.

    It leaves the model's gradients and the package's random state as it found them, so the
    run trains exactly as without it. Raises ValueError at once when `path` holds a file
    that is not an explorer page (it is never overwritten).
    """
    import os

    import numpy as np

    import microtensor
    import viz
    from viz.explore import check_page_path

    check_page_path(path)
    rng = np.random.default_rng(seed)
    starts = rng.integers(0, len(ids) - block_size - 1, size=rows)
    x = np.stack([ids[s:s + block_size] for s in starts]).astype(np.int64)  # [rows, T]
    y = np.stack([ids[s + 1:s + block_size + 1] for s in starts]).astype(np.int64)

    def write(model, it):
        params = list(model.parameters())
        grads, state = [p.grad for p in params], microtensor.random.get_rng_state()
        for p in params:
            p.grad = None
        try:
            with viz.record_steps():
                _, loss = model(x, y)
                loss.backward()
            viz.explore(loss, path, title=f"a training step at iter {it}: loss {loss.item():.3f}",
                        curves=grad_norm_curves(os.path.join(out_dir, "metrics.jsonl")))
        finally:
            for p, g in zip(params, grads):
                p.grad = g
            microtensor.random.set_rng_state(state)

    return write
