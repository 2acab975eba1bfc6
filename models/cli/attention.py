"""`microtensor attention`: heatmaps of the attention weights A = softmax(QKᵀ/√d_k + M) of a trained
GPT on a prompt, per layer and head (notes 3.1–3.5)."""
from .checks import add_out_flag, count, picture_file
from .graph import add_page_flags


def add_parser(subparsers):
    p = subparsers.add_parser(
        "attention", help="draw a trained model's attention weights on a prompt",
        description="Run a checkpoint on a prompt and draw each head's attention weights as a "
                    "heatmap: queries (the prompt's tokens: characters, or BPE tokens) down, "
                    "keys across; each row sums to 1, and the causal mask leaves the upper "
                    "triangle empty.")
    add_out_flag(p, help="a checkpoint directory written by `microtensor train` (its best "
                         "model is drawn)")
    p.add_argument("--prompt", metavar="TEXT", required=True,
                   help="the text to run (its last block_size tokens are kept; a character "
                        "model must know each of its characters)")
    p.add_argument("--output", "-o", metavar="FILE", type=picture_file, required=True,
                   help="picture to write: .png, .svg or .pdf")
    p.add_argument("--layer", metavar="L", type=count(0),
                   help="draw only this layer (0 = nearest the input; default: all)")
    p.add_argument("--head", metavar="H", type=count(0), help="draw only this head (default: all)")
    add_page_flags(p)
    p.set_defaults(run=run)


def attention_weights(model, ids):
    """Attention weights [L, H, T, T] of `model` (a GPT) for one sequence of token ids [T]."""
    import numpy as np

    import microtensor
    import nn

    model.eval()
    nn.use_attention(model, "ordinary")  # a tiled model never forms the weights drawn here
    with microtensor.no_grad(), nn.keep_attention(model):   # the picture asks for the weights
        model(np.asarray([ids], dtype=np.int64))
    return np.stack([block.attn.last_attention.data[0] for block in model.blocks])


def _pick(value, count, flag):
    if value is None:
        return list(range(count))
    if not 0 <= value < count:
        raise ValueError(f"{flag} {value} is out of range: the model has {count} "
                         f"(0 .. {count - 1})")
    return [value]


def run(args):
    import viz
    from models.training.checkpoint import load_checkpoint
    from viz.save import picture_format

    picture_format(args.output)  # a bad suffix fails before the model is loaded
    model, tokenizer, _ = load_checkpoint(args.out)
    if not args.prompt:
        raise ValueError("--prompt must not be empty")
    try:
        ids = tokenizer.encode(args.prompt)
    except ValueError as error:
        raise ValueError(f"--prompt: {error}") from None
    if len(ids) > model.config.block_size:
        ids = ids[-model.config.block_size:]
        print(f"note: the prompt is longer than the block size; keeping its last {len(ids)} "
              f"{tokenizer.unit}")
    # each query and key labelled by its token's text (a BPE token cut inside a character: U+FFFD)
    labels = [tokenizer.decode([i]) for i in ids]
    text = tokenizer.decode(ids)
    layers = _pick(args.layer, model.config.n_layer, "--layer")
    heads = _pick(args.head, model.config.n_head, "--head")
    weights = attention_weights(model, ids)[layers][:, heads]    # [L', H', T, T]
    figure = viz.attention_heatmap(weights, labels, layers, heads,
                                   title=f"attention weights A on {text!r}")
    viz.save_figure(figure, args.output, dpi=args.dpi, size=args.size)
    print(f"wrote {args.output}: {len(layers)} layer(s) x {len(heads)} head(s) over "
          f"{len(ids)} {tokenizer.unit}")
    return 0
