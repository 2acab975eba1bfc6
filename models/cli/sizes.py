"""The flags `--batch --seq --d-model --heads` shared by the course tools `shapes` and `flops`."""


def add_size_flags(parser, seq, d_model, heads):
    """Register the four size flags with these defaults (batch defaults to 2)."""
    parser.add_argument("--batch", metavar="B", type=int, default=2, help="batch size (default: 2)")
    parser.add_argument("--seq", metavar="T", type=int, default=seq,
                        help=f"sequence length (default: {seq})")
    parser.add_argument("--d-model", metavar="D", type=int, default=d_model,
                        help=f"model width (default: {d_model})")
    parser.add_argument("--heads", metavar="H", type=int, default=heads,
                        help=f"number of heads (default: {heads})")


def check_sizes(args, *extra):
    """ValueError naming the flag if a size is < 1 or D is not divisible by H."""
    for name in ("batch", "seq", "d_model", "heads") + extra:
        value = getattr(args, name, None)
        if value is not None and value < 1:
            raise ValueError(f"--{name.replace('_', '-')} must be >= 1; got {value}")
    if args.d_model % args.heads:
        raise ValueError(f"--d-model {args.d_model} is not divisible by --heads {args.heads}")
