"""`microtensor train`: train a character-level GPT on a text file, or on the built-in corpus, and checkpoint it.

Every setting of a preset has a flag named as nanoGPT names it, with dashes
(`max_iters` -> `--max-iters`); a flag overrides the preset's value.
"""
import argparse
import dataclasses

HELP = {
    "n_layer": "number of Transformer blocks",
    "n_head": "attention heads per block (must divide --n-embd)",
    "n_embd": "embedding width D",
    "block_size": "context length T in characters",
    "dropout": "dropout probability while training",
    "bias": "biases in Linear and LayerNorm layers",
    "activation": "MLP activation",
    "norm_first": "pre-norm blocks (GPT-2); --no-norm-first is the 2017 post-norm",
    "batch_size": "sequences per step",
    "max_iters": "optimizer steps",
    "learning_rate": "peak learning rate",
    "min_lr": "final learning rate of the cosine decay",
    "warmup_iters": "steps of linear warmup",
    "lr_decay_iters": "steps of cosine decay (default: --max-iters)",
    "weight_decay": "AdamW weight decay on matrices",
    "beta1": "AdamW beta1",
    "beta2": "AdamW beta2",
    "grad_clip": "clip the global gradient norm to this (0: off)",
    "eval_interval": "evaluate and checkpoint every this many steps",
    "eval_iters": "batches per split in each evaluation",
    "seed": "random seed for init, batches and dropout",
}


def add_parser(subparsers):
    from models.presets import PRESETS, TrainConfig

    p = subparsers.add_parser(
        "train", help="train a character-level GPT",
        description="Train a character-level GPT; prints train/val loss, appends each "
                    "evaluation to OUT/metrics.jsonl and writes a checkpoint into OUT.")
    p.add_argument("--data", metavar="PATH",
                   help="UTF-8 text file (default: the built-in corpus, CPython's help topics)")
    p.add_argument("--out", metavar="DIR", default="out",
                   help="checkpoint directory (default: %(default)s)")
    p.add_argument("--preset", choices=sorted(PRESETS), default="baby",
                   help="starting settings, each overridable by its flag (default: %(default)s)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.add_argument("--threads", metavar="N", type=int, default=1,
                   help="threads for numpy's matrix products (default: %(default)s; the "
                        "matrices are small, and several BLAS threads slow down tenfold "
                        "when another program shares the cores)")
    settings = p.add_argument_group("settings (defaults from the preset)")
    for field in dataclasses.fields(TrainConfig):
        name = field.name
        preset_values = ", ".join(f"{k}: {getattr(v, name)}" for k, v in sorted(PRESETS.items()))
        kwargs = dict(dest=name, default=None, help=f"{HELP[name]} ({preset_values})")
        flag = "--" + name.replace("_", "-")
        if field.type in (bool, "bool"):
            settings.add_argument(flag, action=argparse.BooleanOptionalAction, **kwargs)
        elif name == "activation":
            settings.add_argument(flag, choices=["gelu", "relu"], **kwargs)
        else:
            kind = float if field.type in (float, "float") else int
            settings.add_argument(flag, type=kind, metavar=kind.__name__.upper(), **kwargs)
    p.set_defaults(run=run)


def run(args):
    from threadpoolctl import threadpool_limits

    from models.data import DEFAULT_CORPUS_NAME, load_corpus
    from models.presets import TrainConfig, get_preset
    from models.train import train

    overrides = {f.name: getattr(args, f.name) for f in dataclasses.fields(TrainConfig)}
    config = get_preset(args.preset, **overrides).validate()
    corpus = load_corpus(args.data)  # (tokenizer, ids), ids memory-mapped for a file
    source = f"data file {args.data!r}" if args.data else DEFAULT_CORPUS_NAME
    if args.threads < 1:
        raise ValueError(f"--threads must be >= 1; got {args.threads}")
    with threadpool_limits(limits=args.threads, user_api="blas"):
        result = train(config, corpus, args.out, source=source, progress=not args.quiet)
    print(f"done in {result['elapsed_s']:.1f} s: train loss {result['train_loss']:.4f}, "
          f"val loss {result['val_loss']:.4f}; checkpoint in {args.out}")
    return 0
