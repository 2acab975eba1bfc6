"""`microtensor plot-loss`: the training and validation loss curves of a run, from the metrics.jsonl
that `microtensor train` writes."""
import os

from .checks import picture_file
from .graph import add_page_flags


def add_parser(subparsers):
    p = subparsers.add_parser(
        "plot-loss", help="plot train and validation loss of a training run",
        description="Plot the train and validation loss of each evaluation recorded in "
                    "metrics.jsonl ({iter, train_loss, val_loss, elapsed_s} per line).")
    p.add_argument("--metrics", metavar="PATH", required=True,
                   help="a metrics.jsonl file, or the run directory that holds one")
    p.add_argument("--output", "-o", metavar="FILE", type=picture_file, required=True,
                   help="picture to write: .png, .svg or .pdf")
    p.add_argument("--title", default="Training and validation loss",
                   help="chart title (default: %(default)s)")
    add_page_flags(p)
    p.set_defaults(run=run)


def run(args):
    import viz
    from viz.save import picture_format

    picture_format(args.output)
    path = args.metrics
    if os.path.isdir(path):
        path = os.path.join(path, "metrics.jsonl")
    if not os.path.isfile(path):
        raise FileNotFoundError(f"metrics file {path!r} does not exist (`microtensor train "
                                "--out DIR` writes DIR/metrics.jsonl)")
    records = viz.read_metrics(path)
    viz.save_figure(viz.loss_curve(records, title=args.title), args.output, dpi=args.dpi,
                    size=args.size)
    last = records[-1]
    print(f"wrote {args.output}: {len(records)} evaluations; last at iter {last['iter']}: "
          f"train {last['train_loss']:.4f}, val {last['val_loss']:.4f}")
    return 0
