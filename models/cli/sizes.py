"""The flags `--batch --seq --d-model --heads` shared by the course tools `shapes` and `flops`."""
from .checks import count


def add_size_flags(parser, seq, d_model, heads):
    """Register the four size flags with these defaults (batch defaults to 2)."""
    parser.add_argument("--batch", metavar="B", type=count(1), default=2,
                        help="batch size (default: 2)")
    parser.add_argument("--seq", metavar="T", type=count(1), default=seq,
                        help=f"sequence length (default: {seq})")
    parser.add_argument("--d-model", metavar="D", type=count(1), default=d_model,
                        help=f"model width (default: {d_model})")
    parser.add_argument("--heads", metavar="H", type=count(1), default=heads,
                        help=f"number of heads (default: {heads})")


def check_sizes(args):
    """ValueError naming both flags if D is not divisible by H (each size is >= 1 by its type)."""
    if args.d_model % args.heads:
        raise ValueError(f"--d-model {args.d_model} is not divisible by --heads {args.heads}")
