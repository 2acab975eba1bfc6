"""`microtensor train`: train a GPT on a text file's characters (or BPE tokens) and checkpoint it.

Without --data it trains on the built-in corpus (models.training.data.default_corpus).

Every setting of a preset has a flag named as nanoGPT names it, with dashes
(`max_iters` -> `--max-iters`); a flag overrides the preset's value. With --resume the
settings come from the checkpoint instead, and only --max-iters may change.
"""
import os
import sys

from .checks import (
    TRAINING_HELP,
    add_out_flag,
    add_resume_flags,
    add_settings_flags,
    count,
    file_path,
    given_settings,
)
from .explore import html_file

HELP = {
    "n_layer": "number of Transformer blocks",
    "n_head": "attention heads per block (must divide --n-embd)",
    "n_embd": "embedding width D",
    "block_size": "context length T in tokens (characters, or BPE tokens)",
    "bias": "biases in Linear and LayerNorm layers",
    "activation": "MLP activation",
    "norm_first": "pre-norm blocks (GPT-2); --no-norm-first is the 2017 post-norm",
    "attention": "ordinary (keeps the T×T weights) or tiled (online softmax, O(T) memory, "
                 "the same values; notes 3.8)",
    "batch_size": "sequences per step",
    "weight_decay": "AdamW weight decay on matrices",
    "beta2": "AdamW beta2",
    "eval_iters": "batches per split in each evaluation",
    "seed": "random seed for init, batches and dropout",
    **TRAINING_HELP,
}


def add_parser(subparsers):
    from models.tokenizer_choice import add_tokenizer_flags
    from models.training.settings import PRESETS, TrainConfig

    p = subparsers.add_parser(
        "train", help="train a GPT on characters (or BPE tokens)",
        description="Train a GPT on characters (or BPE tokens: --tokenizer bpe); prints "
                    "train/val loss, appends each evaluation to OUT/metrics.jsonl and writes a "
                    "checkpoint into OUT.")
    p.add_argument("--data", metavar="PATH", type=file_path,
                   help="UTF-8 text file (default: the built-in corpus, CPython's help topics; "
                        "with --resume: the checkpoint's)")
    add_out_flag(p, default="out", help="checkpoint directory (default: %(default)s)")
    add_resume_flags(p)
    p.add_argument("--preset", choices=sorted(PRESETS), default=None,
                   help="starting settings, each overridable by its flag (default: baby)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.add_argument("--processes", metavar="N", type=count(1), default=1,
                   help="training processes that split each batch (data parallel), one core "
                        "each; BLAS runs 1 thread in each (default: %(default)s; faster only "
                        "on free cores; a resume may change it)")
    p.add_argument("--log-grad-norms", action="store_true",
                   help="add each module's gradient norm (of the last step before each "
                        "evaluation) to metrics.jsonl; `microtensor plot-loss` draws them")
    p.add_argument("--explore", metavar="FILE.html", type=html_file,
                   help="rewrite this page at every evaluation: one step's graph with the "
                        "current weights and the per-module gradient-norm curves so far, "
                        "to watch in a browser (reload it); implies --log-grad-norms")
    add_tokenizer_flags(p)
    settings = p.add_argument_group("settings (defaults from the preset)")
    help = {name: text + " (" + ", ".join(f"{k}: {getattr(v, name)}"
                                          for k, v in sorted(PRESETS.items())) + ")"
            for name, text in HELP.items()}
    add_settings_flags(settings, TrainConfig, help, choices={"activation": ["gelu", "relu"],
                                                          "attention": ["ordinary", "tiled"]})
    p.set_defaults(run=run)


def check_processes(processes, threads, batch_size):
    """ValueError unless --processes fits the batch and comes without several --threads."""
    from models.training.data_parallel import share_sizes

    share_sizes(batch_size, processes)  # raises for more processes than rows
    if processes > 1 and threads > 1:
        raise ValueError(f"--processes {processes} runs one BLAS thread in each process; "
                         f"drop --threads {threads}")


def run(args):
    from microtensor.memory import keep_freed_memory
    from models.tokenizer_choice import choose_tokenizer
    from models.training.data import DEFAULT_CORPUS_NAME, load_corpus
    from models.training.run import Interrupted, TrainingRun
    from models.training.settings import TrainConfig
    from models.training.train import train

    if args.explore:  # viz (and graphviz) only when a picture is asked for
        from viz.explore import check_page_path

        from .explore import training_explorer
        check_page_path(args.explore)  # a file the explorer did not write is refused first
    # Refuse (or find what to resume) before the data is read: nothing in --out changes.
    run = TrainingRun(args.out, resume=args.resume, overwrite=args.overwrite)
    # resolved here, once (settings.resolve_settings; on resume: the checkpoint's): train()
    # reads run.config
    config = run.settings(TrainConfig, args.preset, given_settings(args, TrainConfig))
    data_path = args.data
    if args.resume and not data_path:  # the saved --data (checked: a str), or the built-in
        data_path = run.manifest["info"]["data"].get("path")
    check_processes(args.processes, args.threads, config.batch_size)
    corpus = load_corpus(data_path)  # (tokenizer, ids), ids read from the prepared id file
    corpus = choose_tokenizer(corpus, args.tokenizer, args.vocab_size, run)  # char or BPE
    source = f"data file {data_path!r}" if data_path else DEFAULT_CORPUS_NAME
    explore = (training_explorer(args.explore, args.out, corpus[1], config.block_size)
               if args.explore else None)
    keep_freed_memory()  # a training step frees and reallocates the same large buffers
    try:
        result = train(run, corpus, source=source, progress=not args.quiet,
                       data_path=os.path.abspath(data_path) if data_path else None,
                       log_grad_norms=args.log_grad_norms or bool(explore),
                       processes=args.processes, on_evaluation=explore)
    except Interrupted as stop:
        print(stop, file=sys.stderr)
        return stop.exit_status
    in_all = " in all" if args.resume else ""  # elapsed_s counts the run before the resume too
    print(f"done in {result['elapsed_s']:.1f} s{in_all}: train loss {result['train_loss']:.4f}, "
          f"val loss {result['val_loss']:.4f} (best {result['best_val_loss']:.4f}); "
          f"checkpoint in {args.out}")
    return 0
