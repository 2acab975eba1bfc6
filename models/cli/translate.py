"""`microtensor translate`: train the encoder-decoder Transformer on the built-in dates task
(`translate train`), translate with it (`translate run`), draw one training step
(`translate graph`).

The task turns a date in words into ISO form ("the third of march, 1999" -> "1999-03-03");
see models/tasks/dates.py. Every setting of models.training.settings.TranslateConfig has a flag.
"""
import sys

from .checks import (
    TRAINING_HELP,
    add_out_flag,
    add_resume_flags,
    add_settings_flags,
    given_settings,
    picture_file,
)
from .graph import add_page_flags

HELP = {
    "d_model": "model width D",
    "n_heads": "attention heads per layer (must divide --d-model)",
    "n_encoder_layers": "encoder layers",
    "n_decoder_layers": "decoder layers",
    "d_ff": "width of the feed-forward layers",
    "norm_first": "pre-norm layers; --no-norm-first is the 2017 post-norm",
    "attention": "ordinary or tiled (online softmax, O(T) memory, the same values; notes 3.8)",
    "batch_size": "sentence pairs per step",
    "weight_decay": "AdamW weight decay",
    "beta2": "AdamW beta2 (the paper: 0.98)",
    "label_smoothing": "label smoothing of the loss (the paper: 0.1)",
    "n_train": "training pairs generated",
    "n_test": "held-out pairs (dates never seen in training)",
    "seed": "random seed for the data, init and batches",
    **TRAINING_HELP,
}


def add_parser(subparsers):
    from models.training.settings import TranslateConfig

    p = subparsers.add_parser(
        "translate", help="train and run the encoder-decoder on dates in words -> ISO",
        description="The 2017 encoder-decoder Transformer on a built-in character-level "
                    "translation: dates in words to ISO form.")
    actions = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    t = actions.add_parser(
        "train", help="train on the built-in dates task",
        description="Train; prints losses and exact match on held-out dates, appends each "
                    "evaluation to OUT/metrics.jsonl and writes a checkpoint into OUT.")
    add_out_flag(t, default="out/translate", help="checkpoint directory (default: %(default)s)")
    add_resume_flags(t)
    t.add_argument("--quiet", action="store_true", help="no progress bar")
    settings = t.add_argument_group("settings")
    defaults = TranslateConfig()
    help = {name: text + ("" if getattr(defaults, name) is None
                          else f" (default: {getattr(defaults, name)})")
            for name, text in HELP.items()}
    add_settings_flags(settings, TranslateConfig, help,
                       choices={"attention": ["ordinary", "tiled"]})
    t.set_defaults(run=run_train)

    r = actions.add_parser("run", help="translate a date written in words",
                           description="Print the greedy translation of TEXT.")
    add_out_flag(r, help="a checkpoint directory written by `microtensor translate train`")
    r.add_argument("text", metavar="TEXT", nargs="+", help="the words of a date")
    r.add_argument("--attention", metavar="FILE", type=picture_file,
                   help="also draw the cross-attention weights (source characters across, "
                        "output characters down) of each head: .png, .svg or .pdf")
    r.add_argument("--layer", metavar="L", type=int, default=-1,
                   help="with --attention: the decoder layer to draw (default: the last)")
    add_page_flags(r)
    r.set_defaults(run=run_translate)

    g = actions.add_parser(
        "graph", help="draw the computation graph of one training step",
        description="One training step (forward and backward) of a fresh 1 + 1-layer "
                    "encoder-decoder on two dates, drawn by viz.draw_graph: the encoder's "
                    "output reaches the decoder, and the gradient the encoder, only through "
                    "the cross-attention's keys and values.")
    g.add_argument("--output", "-o", metavar="FILE", type=picture_file, required=True,
                   help="picture to write: .svg, .png, .pdf or .dot")
    g.add_argument("--depth", metavar="N", type=int, default=2,
                   help="fold modules N levels down (2: the layers' sub-layers; default: "
                        "%(default)s)")
    g.add_argument("--focus", metavar="MODULE",
                   help="draw only the inside of this module, e.g. decoder.0.multihead_attn")
    add_page_flags(g)
    g.set_defaults(run=run_graph)


def run_train(args):
    from models.training.run import Interrupted, TrainingRun
    from models.training.settings import TranslateConfig
    from models.training.translate import KIND, train_translation

    run = TrainingRun(args.out, resume=args.resume, overwrite=args.overwrite, kind=KIND)
    # resolved here, once (on resume: the checkpoint's); train_translation reads run.config
    config = run.settings(TranslateConfig, flags=given_settings(args, TranslateConfig))
    try:
        result = train_translation(run, progress=not args.quiet)
    except Interrupted as stop:
        print(stop, file=sys.stderr)
        return stop.exit_status
    print(f"done in {result['elapsed_s']:.1f} s: exact match {result['exact_match']:.1%} on "
          f"{config.n_test} held-out dates, val loss {result['val_loss']:.4f} (best "
          f"{result['best_val_loss']:.4f}); checkpoint in {args.out}")
    return 0


def run_translate(args):
    from models.tasks.dates import translate
    from models.training.translate import load_translator

    model, src_tok, tgt_tok, _ = load_translator(args.out)
    text = " ".join(args.text)
    try:
        src_tok.encode(text)
    except ValueError as error:
        raise ValueError(f"TEXT: {error}") from None
    if len(text) > model.config.max_len:
        raise ValueError(f"TEXT has {len(text)} characters; the model reads at most "
                         f"{model.config.max_len}")
    if args.attention:
        from viz.save import page_size, picture_format

        picture_format(args.attention)  # a bad suffix or page size fails before any work
        if args.size is not None:
            page_size(args.size)
    output = translate(model, [text], src_tok, tgt_tok)[0]
    print(output)
    if args.attention:
        n_layers = model.config.n_decoder_layers
        if not -n_layers <= args.layer < n_layers:
            raise ValueError(f"--layer {args.layer} is out of range: the decoder has "
                             f"{n_layers} layers (0 .. {n_layers - 1})")
        draw_cross_attention(model, src_tok, tgt_tok, text, args.layer % n_layers,
                             args.attention, dpi=args.dpi, size=args.size)
        print(f"wrote {args.attention}")
    return 0


def cross_attention_weights(model, src_tokenizer, text):
    """(weights [L, H, T_out, T_src], output labels [T_out]) while the model translates `text`.

    Teacher forcing with the model's own greedy output gives the same weights as decoding
    step by step, in one forward; row i is the query that wrote output token i.
    """
    import numpy as np

    import microtensor
    import nn

    src = np.array([src_tokenizer.encode(text)])                         # [1, T_src]
    out = model.generate(src, model.config.max_len)[0]                   # [T_out], eos last
    tgt_in = np.concatenate([[model.config.bos_id], out[:-1]])[None]     # [1, T_out]
    nn.use_attention(model, "ordinary")  # a tiled model never forms the weights drawn here
    with microtensor.no_grad(), nn.keep_attention(model):   # the picture asks for the weights
        model(src, tgt_in)
    weights = np.stack([layer.multihead_attn.last_attention.data[0] for layer in model.decoder])
    return weights, out


def head_columns(n_heads, t_out, t_src, page=None):
    """How many heads side by side: 1 (stacked) at the natural size; on a page (width,
    height in inches) the divisor of n_heads that gives the largest character cells, allowing
    about 1.5 inches across (tick labels, colour bar) and 0.9 down per panel (title, ticks)."""
    if page is None:
        return 1
    width, height = page

    def cell(columns):
        rows = n_heads // columns
        return min((width - 1.5) / columns / t_src, ((height - 0.6) / rows - 0.9) / t_out)

    return max((c for c in range(1, n_heads + 1) if n_heads % c == 0), key=cell)


def draw_cross_attention(model, src_tokenizer, tgt_tokenizer, text, layer, path, dpi=144,
                         size=None):
    """viz.attention_heatmap of one decoder layer's heads: source across, output down.

    At the natural size the heads are stacked; `size` ("16:9", "WxH" in inches) fills that
    page instead, with the heads in the grid that draws the characters largest (2 x 2 for
    4 heads on a 16:9 slide)."""
    import viz
    from viz.save import page_size

    page = page_size(size) if size is not None else None
    weights, out = cross_attention_weights(model, src_tokenizer, text)
    weights = weights[layer]                                             # [H, T_out, T_src]
    n_heads, t_out, t_src = weights.shape
    columns = head_columns(n_heads, t_out, t_src, page)
    rows = ["<eos>" if i == model.config.eos_id else tgt_tokenizer.decode([i]) for i in out]
    # attention_heatmap draws layers as rows and heads as columns; here its rows and columns
    # both hold heads, row-major, so panel k (figure.axes[k]) is head k
    grid = weights.reshape(n_heads // columns, columns, t_out, t_src)
    title = f"cross-attention of decoder layer {layer}: {text!r} -> {tgt_tokenizer.decode(out)!r}"
    figure = viz.attention_heatmap(grid, list(text), query_chars=rows, title=title)
    for head, ax in enumerate(figure.axes[:n_heads]):                    # the colour bar is last
        ax.set_title(f"head {head}", fontsize=9)
        ax.set_ylabel("output character", fontsize=8)
        ax.set_xlabel("source character", fontsize=8)
    if page is None:  # the size that fits the characters (and the title), one head per row
        figure.set_size_inches(max(0.2 * t_src + 2.0, 0.1 * len(title)),
                               n_heads * (0.2 * t_out + 0.9) + 0.6)
    viz.save_figure(figure, path, dpi=dpi, size=page)


def run_graph(args):
    import microtensor
    import viz
    from models.seq2seq import Seq2SeqTransformer
    from models.tasks import dates as task
    from models.training.settings import TranslateConfig
    from viz.save import FORMATS, picture_format

    picture_format(args.output, FORMATS + ("dot",))  # a bad suffix fails before any work
    microtensor.manual_seed(0)
    src_tok, tgt_tok = task.source_tokenizer(), task.target_tokenizer()
    config = TranslateConfig(d_model=16, n_heads=2, n_encoder_layers=1, n_decoder_layers=1,
                             d_ff=32)
    model = Seq2SeqTransformer(config.model_config())
    pairs = [("3 Mar 1999", "1999-03-03"), ("the third of may, 2001", "2001-05-03")]
    _, loss = model(*task.encode_batch(pairs, src_tok, tgt_tok))
    with viz.record_grad_norms():  # the norms the picture draws on its edges
        loss.backward()
    graph = viz.draw_graph(loss, depth=args.depth, focus=args.focus, size=args.size)
    viz.save(graph, args.output, dpi=args.dpi)
    print(f"wrote {args.output}: one training step on {len(pairs)} dates, "
          f"loss {loss.item():.4f}")
    return 0
