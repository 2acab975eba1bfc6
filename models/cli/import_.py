"""`microtensor import`: a Hugging Face GPT-2 directory or nanoGPT ckpt.pt into our checkpoint.

(`import` is a Python keyword, hence the module name `import_`.)
"""


def add_parser(subparsers):
    p = subparsers.add_parser(
        "import", help="read a Hugging Face GPT-2 or nanoGPT model into a checkpoint",
        description="Read a Hugging Face GPT-2 directory (config.json, model.safetensors, a "
                    "character-level tokenizer.json) or a nanoGPT ckpt.pt with its meta.pkl, "
                    "and write a checkpoint that sample, graph and attention read. Never "
                    "unpickles beyond plain data: pytorch_model.bin is refused, ckpt.pt is "
                    "read with torch.load(weights_only=True).")
    p.add_argument("--from", dest="source", metavar="DIR", required=True,
                   help="a Hugging Face GPT-2 directory, or a directory holding ckpt.pt "
                        "(or the ckpt.pt file itself)")
    p.add_argument("--out", metavar="OUT", required=True,
                   help="checkpoint directory to write")
    p.add_argument("--meta", metavar="PATH",
                   help="nanoGPT's meta.pkl (default: the one next to ckpt.pt)")
    p.add_argument("--overwrite", action="store_true",
                   help="replace a checkpoint already in OUT")
    p.set_defaults(run=run)


def run(args):
    import os

    from models.interop import hf, nanogpt
    from models.training import checkpoint, out_dir

    source = args.source
    if not os.path.exists(source):
        raise FileNotFoundError(f"--from {source!r} does not exist")
    ckpt = source if os.path.isfile(source) else os.path.join(source, nanogpt.CHECKPOINT_FILE)
    is_nanogpt = os.path.isfile(ckpt)
    if args.meta and not is_nanogpt:
        raise ValueError("--meta goes with a nanoGPT ckpt.pt")
    try:  # refused before anything is read or written: nothing in OUT changes
        out_dir.open_out_dir(args.out, overwrite=args.overwrite)
    except out_dir.CheckpointExists:
        raise ValueError(f"--out {args.out!r} already holds a checkpoint; give --overwrite "
                         "to replace it, or another directory") from None
    if is_nanogpt:
        model, tokenizer, notes = nanogpt.import_nanogpt(ckpt, args.meta)
    else:
        model, tokenizer, notes = hf.import_hf(source)
    checkpoint.save_model(args.out, model, tokenizer, iter=notes.pop("iter", 0), info=notes)
    print(f"imported {source} ({notes['imported_from']}, "
          f"{model.num_parameters():,} parameters, vocabulary {tokenizer.vocab_size}) "
          f"into {args.out}")
    return 0
