"""`microtensor translate`: train the encoder-decoder Transformer on the built-in dates task (`translate train`) and translate with it (`translate run`).

The task turns a date in words into ISO form ("the third of march, 1999" -> "1999-03-03");
see models/translation.py. Every setting of models.train_translation.TranslateConfig has a flag.
"""
import argparse
import dataclasses

HELP = {
    "d_model": "model width D",
    "n_heads": "attention heads per layer (must divide --d-model)",
    "n_encoder_layers": "encoder layers",
    "n_decoder_layers": "decoder layers",
    "d_ff": "width of the feed-forward layers",
    "dropout": "dropout probability while training",
    "norm_first": "pre-norm layers; --no-norm-first is the 2017 post-norm",
    "batch_size": "sentence pairs per step",
    "max_iters": "optimizer steps",
    "learning_rate": "peak learning rate",
    "min_lr": "final learning rate of the cosine decay",
    "warmup_iters": "steps of linear warmup",
    "weight_decay": "AdamW weight decay",
    "beta1": "AdamW beta1",
    "beta2": "AdamW beta2 (the paper: 0.98)",
    "grad_clip": "clip the global gradient norm to this (0: off)",
    "label_smoothing": "label smoothing of the loss (the paper: 0.1)",
    "n_train": "training pairs generated",
    "n_test": "held-out pairs (dates never seen in training)",
    "eval_interval": "evaluate and checkpoint every this many steps",
    "seed": "random seed for the data, init and batches",
}


def add_parser(subparsers):
    from models.train_translation import TranslateConfig

    p = subparsers.add_parser(
        "translate", help="train and run the encoder-decoder on dates in words -> ISO",
        description="The 2017 encoder-decoder Transformer on a built-in character-level "
                    "translation: dates in words to ISO form.")
    actions = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    t = actions.add_parser(
        "train", help="train on the built-in dates task",
        description="Train; prints losses and exact match on held-out dates, appends each "
                    "evaluation to OUT/metrics.jsonl and writes a checkpoint into OUT.")
    t.add_argument("--out", metavar="DIR", default="out-translate",
                   help="checkpoint directory (default: %(default)s)")
    t.add_argument("--overwrite", action="store_true",
                   help="replace a checkpoint already in --out")
    t.add_argument("--quiet", action="store_true", help="no progress bar")
    t.add_argument("--threads", metavar="N", type=int, default=1,
                   help="threads for numpy's matrix products (default: %(default)s)")
    settings = t.add_argument_group("settings")
    defaults = TranslateConfig()
    for field in dataclasses.fields(TranslateConfig):
        name = field.name
        kwargs = {"dest": name, "default": None,
                  "help": f"{HELP[name]} (default: {getattr(defaults, name)})"}
        flag = "--" + name.replace("_", "-")
        if field.type in (bool, "bool"):
            settings.add_argument(flag, action=argparse.BooleanOptionalAction, **kwargs)
        else:
            kind = float if field.type in (float, "float") else int
            settings.add_argument(flag, type=kind, metavar=kind.__name__.upper(), **kwargs)
    t.set_defaults(run=run_train)

    r = actions.add_parser("run", help="translate a date written in words",
                           description="Print the greedy translation of TEXT.")
    r.add_argument("--out", metavar="DIR", required=True,
                   help="a checkpoint directory written by `microtensor translate train`")
    r.add_argument("text", metavar="TEXT", nargs="+", help="the words of a date")
    r.set_defaults(run=run_translate)


def run_train(args):
    from threadpoolctl import threadpool_limits

    from models.train_translation import TranslateConfig, train_translation

    overrides = {f.name: getattr(args, f.name) for f in dataclasses.fields(TranslateConfig)
                 if getattr(args, f.name) is not None}
    config = TranslateConfig(**overrides).validate()
    if args.threads < 1:
        raise ValueError(f"--threads must be >= 1; got {args.threads}")
    with threadpool_limits(limits=args.threads, user_api="blas"):
        result = train_translation(config, args.out, progress=not args.quiet,
                                   overwrite=args.overwrite)
    print(f"done in {result['elapsed_s']:.1f} s: exact match {result['exact_match']:.1%} on "
          f"{config.n_test} held-out dates, val loss {result['val_loss']:.4f}; "
          f"checkpoint in {args.out}")
    return 0


def run_translate(args):
    from models.train_translation import load_translator
    from models.translation import translate

    model, src_tok, tgt_tok, _ = load_translator(args.out)
    text = " ".join(args.text)
    try:
        src_tok.encode(text)
    except ValueError as error:
        raise ValueError(f"TEXT: {error}") from None
    if len(text) > model.config.max_len:
        raise ValueError(f"TEXT has {len(text)} characters; the model reads at most "
                         f"{model.config.max_len}")
    print(translate(model, [text], src_tok, tgt_tok)[0])
    return 0
