"""`microtensor graph`: draw the computation graph of one training step (forward and backward) of a
GPT, with gradient norms.

The picture is `viz.draw_graph` of the loss after `loss.backward()`; Graphviz's `dot` lays it
out. A model comes from a preset (fresh weights) or from a checkpoint of `microtensor train`
(--out DIR).
"""
import contextlib
import os
import re
import time

from .checks import count, directory, picture_file


def add_parser(subparsers):
    p = subparsers.add_parser(
        "graph", help="draw the computation graph of one training step",
        description="Run one training step (forward and backward) of a GPT on a small batch "
                    "and draw its computation graph: one box per op, edges as wide and red as "
                    "the gradient that flowed back along them, one dashed cluster per module. "
                    "--depth folds modules into single boxes; --focus draws the inside of one.")
    add_model_source(p)
    p.add_argument("--attention", choices=["ordinary", "tiled"],
                   help="with --preset: ordinary attention (each step a box) or tiled (one box, "
                        "notes 3.8; default: ordinary)")
    p.add_argument("--depth", metavar="N", type=int,
                   help="fold modules N levels down into one box each (1: embeddings, blocks "
                        "and final norm; default: draw every op)")
    p.add_argument("--focus", metavar="MODULE",
                   help="draw only the inside of this module, e.g. blocks.0.attn (then "
                        "--depth counts from it)")
    p.add_argument("--format", choices=["svg", "png", "pdf", "dot"],
                   help="picture format (default: from the --output suffix, else svg)")
    p.add_argument("--output", "-o", metavar="FILE", type=picture_file,
                   help="where to write the picture (needed unless --animate is given)")
    p.add_argument("--animate", metavar="FILE", type=picture_file,
                   help="also (or only) write backprop step by step: one frame per graph node "
                        "in the order backward() processes it, as an animated .gif or a "
                        "multi-page .pdf; use with --focus to keep it short")
    p.add_argument("--overlay", choices=["flops", "saved", "grad"],
                   help="print in each box the FLOPs or the bytes saved for backward that "
                        "microtensor.profile() counts for it, or on every edge the gradient "
                        "norm backward() sent along it")
    p.add_argument("--rankdir", choices=["TB", "LR"], default="TB",
                   help="layout direction: top to bottom or left to right (default: %(default)s)")
    p.add_argument("--batch-size", metavar="B", type=count(1), default=2,
                   help="sequences in the batch (default: %(default)s)")
    p.add_argument("--seq-len", metavar="T", type=count(1), default=16,
                   help="tokens (characters, for a character-level model) per sequence, "
                        "at most the model's block size "
                        "(default: %(default)s)")
    p.add_argument("--direction", choices=["forward", "backward"], default="forward",
                   help="arrows the way data flows (forward) or the way the gradient flows "
                        "(backward); the layout is the same (default: %(default)s)")
    p.add_argument("--unfold", action="store_true",
                   help="with --depth: draw repeated blocks one box each instead of one "
                        "folded 'blocks.0–3 · TransformerBlock ×4' box")
    add_page_flags(p)
    p.add_argument("--show-saved", action="store_true",
                   help="list in each op box the arrays it saved for backward")
    p.add_argument("--forward-only", action="store_true",
                   help="draw the forward graph, without running backward()")
    p.add_argument("--seed", metavar="S", type=count(0), default=0,
                   help="random seed for the weights and the batch (default: %(default)s)")
    p.set_defaults(run=run)


def add_page_flags(p, dpi=144):
    """--size and --dpi, shared by the picture commands."""
    p.add_argument("--size", metavar="PAGE",
                   help="fill a page: 16:9 or 4:3 (a 13.33-inch-wide slide) or WxH in inches, "
                        "e.g. 10x5.625 (default: the picture's natural size)")
    p.add_argument("--dpi", metavar="N", type=float, default=dpi,
                   help="pixels per inch of a PNG; 144 makes a 16:9 picture 1920 pixels wide "
                        "(default: %(default)s)")


def output_path(output, fmt):
    """(path, format): the format from --format or the suffix; a missing suffix is added.

    Raises ValueError when --format and the suffix disagree or the suffix is unknown.
    """
    suffix = os.path.splitext(output)[1].lstrip(".").lower()
    if not suffix:
        fmt = fmt or "svg"
        return f"{output}.{fmt}", fmt
    if suffix not in ("svg", "png", "pdf", "dot"):
        raise ValueError(f"--output {output!r}: unknown suffix .{suffix}; use .svg, .png, .pdf "
                         "or .dot (or give --format)")
    if fmt and fmt != suffix:
        raise ValueError(f"--format {fmt} does not match --output {output!r}")
    return output, suffix


def training_batch(tokenizer, batch_size, seq_len):
    """x, y int64 [B, T]: windows of the built-in corpus encoded by `tokenizer` (a character
    one drops the characters outside its vocabulary; a BPE encodes them all), or random ids
    when too little of it is left."""
    import numpy as np

    import microtensor
    from models.training.data import default_corpus, get_batch

    def encodes(ch):
        try:
            tokenizer.encode(ch)
        except ValueError:  # a character tokenizer's: not in its vocabulary
            return False
        return True

    text = default_corpus()
    unknown = {ch for ch in set(text) if not encodes(ch)}
    if unknown:
        text = "".join(ch for ch in text if ch not in unknown)
    ids = np.array(tokenizer.encode(text), dtype=np.int64)
    if len(ids) > seq_len:
        return get_batch(ids, batch_size, seq_len)
    ids = microtensor.random.generator().integers(0, tokenizer.vocab_size,
                                                  size=(batch_size, seq_len + 1))
    return ids[:, :-1], ids[:, 1:]


def add_model_source(p):
    """--out DIR or --preset NAME (with --n-layer): the model that `load_model` reads."""
    source = p.add_mutually_exclusive_group()
    source.add_argument("--out", metavar="DIR", type=directory,
                        help="the best model of a checkpoint directory written by "
                             "`microtensor train`")
    source.add_argument("--preset", metavar="NAME",
                        help="a freshly initialised model of this preset: baby or tiny "
                             "(the default: baby)")
    p.add_argument("--n-layer", metavar="N", type=count(1),
                   help="with --preset: this many blocks instead of the preset's")


def load_model(args):
    """(model, tokenizer) from --out, or a fresh model of --preset (default baby)."""
    from models import GPT, CharTokenizer
    from models.training.checkpoint import load_checkpoint
    from models.training.data import default_corpus
    from models.training.settings import TrainConfig, resolve_settings

    if args.out:
        if args.n_layer is not None:
            raise ValueError("--n-layer goes with --preset; a checkpoint fixes its own depth")
        if getattr(args, "attention", None) is not None:
            raise ValueError("--attention goes with --preset; a checkpoint fixes its own")
        model, tokenizer, _ = load_checkpoint(args.out)
        return model, tokenizer
    config = resolve_settings(TrainConfig, args.preset, {
        "n_layer": args.n_layer, "attention": getattr(args, "attention", None)})
    tokenizer = CharTokenizer.from_text(default_corpus())
    return GPT(config.model_config(tokenizer.vocab_size)), tokenizer


def run(args):
    import microtensor
    import viz
    from viz.save import picture_format

    if not args.output and not args.animate:
        raise ValueError("give --output FILE (the picture) or --animate FILE (the frames), or both")
    if args.animate and (args.depth is not None or args.forward_only):
        raise ValueError("--animate draws backward() through every op: use --focus MODULE to "
                         "keep it short, not --depth or --forward-only")
    path, fmt = output_path(args.output, args.format) if args.output else (None, None)
    if args.animate:
        picture_format(args.animate, ("gif", "pdf"))
    microtensor.manual_seed(args.seed)
    model, tokenizer = load_model(args)
    if args.seq_len > model.config.block_size:
        raise ValueError(f"--seq-len {args.seq_len} exceeds the model's block size "
                         f"{model.config.block_size}")
    model.train()  # one training step: dropout, if the model has any, is on
    x, y = training_batch(tokenizer, args.batch_size, args.seq_len)

    start = time.perf_counter()
    costs = viz.record_costs() if args.overlay in ("flops", "saved") else contextlib.nullcontext()
    with costs:
        _, loss = model(x, y)
    if not args.forward_only:
        # the norms the picture draws on its edges, and backward's order for the frames
        with viz.record_backward_order() as order:
            loss.backward()
    stepped = time.perf_counter()
    if args.animate:
        frames = viz.backprop_frames(loss, order, focus=args.focus, rankdir=args.rankdir,
                                     size=args.size)
        viz.save_animation(frames, args.animate, dpi=min(args.dpi, 96))
        print(f"wrote {args.animate}: {len(frames)} frames, one per graph node in the order "
              f"backward() processed them ({time.perf_counter() - stepped:.1f} s)")
    if not path:
        return 0
    drawn_from = time.perf_counter()
    graph = viz.draw_graph(loss, depth=args.depth, focus=args.focus,
                           show_saved=args.show_saved, rankdir=args.rankdir,
                           direction=args.direction, fold=not args.unfold, size=args.size,
                           overlay=args.overlay)
    drawn = time.perf_counter()
    viz.save(graph, path, dpi=args.dpi)
    saved = time.perf_counter()
    boxes = sum(1 for line in graph.body if re.match(r"\s*n\d+ \[", line))  # node statements
    writer = "write" if fmt == "dot" else "dot"
    print(f"wrote {path}: {boxes} boxes; step {stepped - start:.2f} s, "
          f"graph {drawn - drawn_from:.2f} s, {writer} {saved - drawn:.2f} s")
    return 0
