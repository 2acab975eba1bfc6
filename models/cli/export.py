"""`microtensor export`: a checkpoint as a Hugging Face GPT-2 directory or nanoGPT's ckpt.pt."""


def add_parser(subparsers):
    p = subparsers.add_parser(
        "export", help="write a checkpoint in Hugging Face or nanoGPT format",
        description="Write the model of a `microtensor train` checkpoint for PyTorch: "
                    "--format hf writes a Hugging Face GPT-2 directory (config.json, "
                    "model.safetensors, tokenizer.json) for transformers' "
                    "AutoModelForCausalLM; --format nanogpt writes ckpt.pt, meta.pkl and "
                    "nanogpt_config.py for nanoGPT's sample.py and train.py "
                    "--init_from=resume (needs PyTorch).")
    p.add_argument("--out", metavar="DIR", default="out",
                   help="checkpoint directory of `microtensor train` (default: %(default)s)")
    p.add_argument("--to", metavar="EXPORT_DIR", required=True,
                   help="directory to write the exported files into")
    p.add_argument("--format", choices=["hf", "nanogpt"], required=True,
                   help="hf: Hugging Face GPT-2; nanogpt: nanoGPT's ckpt.pt + meta.pkl")
    p.add_argument("--dataset", metavar="NAME",
                   help="nanogpt: the dataset name nanoGPT looks up as data/NAME/meta.pkl "
                        "(default: microtensor_char)")
    p.add_argument("--data", metavar="PATH",
                   help="nanogpt: also write train.bin and val.bin of this text file, encoded "
                        "with the model's characters, for nanoGPT's train.py")
    p.add_argument("--overwrite", action="store_true",
                   help="replace files of an earlier export in EXPORT_DIR")
    p.set_defaults(run=run)


def run(args):
    import os

    from models.interop import hf, nanogpt
    from models.training.checkpoint import load_checkpoint
    from models.training.id_file import read_text

    if args.format == "hf" and (args.data or args.dataset):
        raise ValueError("--data and --dataset go with --format nanogpt")
    names = hf.FILES if args.format == "hf" else (
        nanogpt.CHECKPOINT_FILE, nanogpt.META_FILE, nanogpt.CONFIG_FILE,
        *(nanogpt.BIN_FILES if args.data else ()))
    if args.format == "hf" and _holds_a_checkpoint(args.to):  # --overwrite or not
        raise ValueError(f"--to {args.to!r} holds a microtensor checkpoint, whose config.json "
                         "the export would replace; give another directory")
    existing = [n for n in names if os.path.exists(os.path.join(args.to, n))]
    if existing and not args.overwrite:
        raise ValueError(f"--to {args.to!r} already holds {', '.join(existing)}; give "
                         "--overwrite to replace them, or another directory")
    if args.format == "hf":  # the best model, what `sample` reads
        model, tokenizer, manifest = load_checkpoint(args.out)
        paths = hf.export_hf(model, tokenizer, args.to)
        what = f"the best model (iter {manifest['best']['iter']})"
    else:  # the latest training state, what a resumed run continues
        model, tokenizer, train_state, optimizer = nanogpt.training_state(args.out)
        # the characters training read from the file (a text-mode open would turn CRLF into LF)
        text = read_text(args.data) if args.data else None
        paths = nanogpt.export_nanogpt(model, tokenizer, args.to, train_state, optimizer,
                                       dataset=args.dataset or "microtensor_char", text=text)
        what = (f"the latest state (iter {train_state['iter']}, "
                f"{'with its AdamW moments' if optimizer else 'a fresh optimizer'})")
    print(f"exported {what} of {args.out} as {args.format}: " + ", ".join(paths))
    return 0


def _holds_a_checkpoint(directory):
    """Whether `directory` holds a checkpoint of ours (its config.json says so)."""
    from models.training.out_dir import CheckpointError, read_manifest

    try:
        return read_manifest(directory) is not None
    except CheckpointError as error:  # ours but broken, or another program's config.json
        return "not a microtensor checkpoint" not in str(error)
