"""The checks every command's flags share, as argparse `type=` functions, and the flags
several commands share (--out, --threads, --resume/--overwrite, a training config's settings).

Each turns a bad value into one message naming the flag, the value and what is expected,
before any work starts.

argparse prints "argument --top-k: must be an integer >= 1; got '0'" under the
subcommand's own usage and exits 2. Settings of a training run are checked by
`settings.resolve_settings` instead (exit 1), because a preset and a resumed checkpoint supply
them too.
"""
import argparse
import dataclasses
import math
import os


def count(minimum):
    """A type for an integer flag that must be >= minimum (e.g. count(1) for sizes)."""
    def parse(text):
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be an integer >= {minimum}; "
                                             f"got {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be an integer >= {minimum}; got {text!r}")
        return value
    return parse


def number(above=None, minimum=None):
    """A type for a finite float flag, optionally > `above` or >= `minimum`."""
    expected = "a finite number" + (f" > {above}" if above is not None else "") + (
        f" >= {minimum}" if minimum is not None else "")

    def parse(text):
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be {expected}; got {text!r}") from None
        if (not math.isfinite(value) or (above is not None and value <= above)
                or (minimum is not None and value < minimum)):
            raise argparse.ArgumentTypeError(f"must be {expected}; got {text!r}")
        return value
    return parse


def directory(text):
    """A type for --out: a directory path (it may not exist yet), not empty, not in a file."""
    if not text.strip():
        raise argparse.ArgumentTypeError(f"must name a directory; got {text!r}")
    if os.path.exists(text) and not os.path.isdir(text):
        raise argparse.ArgumentTypeError(f"{text!r} is a file; give a directory")
    if os.path.islink(text) and not os.path.exists(text):
        raise argparse.ArgumentTypeError(f"{text!r} is a symbolic link to nothing (or a loop); "
                                         "give a directory")
    _refuse_inside_a_file(text, "a directory")
    return text


def picture_file(text):
    """A type for a picture a command writes (--output, --attention, --animate): a file name,
    not empty, not a directory, not inside a file; the command checks the suffix."""
    if not text.strip():
        raise argparse.ArgumentTypeError(f"must name a picture file, e.g. graph.svg; got {text!r}")
    if os.path.isdir(text) or not os.path.basename(text):
        raise argparse.ArgumentTypeError(f"{text!r} names a directory; give a file name in "
                                         f"it, e.g. {os.path.join(text, 'graph.svg')!r}")
    _refuse_inside_a_file(text, "a file name in a directory")
    return text


def _refuse_inside_a_file(text, expected):
    """ArgumentTypeError if the nearest existing path above `text` is a file, not a folder
    (os.makedirs would fail there with "[Errno 17] File exists")."""
    parent = os.path.dirname(os.path.abspath(text))
    while not os.path.exists(parent):  # the nearest existing folder above it
        parent = os.path.dirname(parent)
    if not os.path.isdir(parent):
        raise argparse.ArgumentTypeError(f"{text!r} lies inside the file {parent!r}; give "
                                         f"{expected}")


def file_path(text):
    """A type for an input file flag (--data): not empty, a UTF-8 name (config.json records
    it); reading the file checks the rest."""
    if not text.strip():
        raise argparse.ArgumentTypeError(f"must name a file; got {text!r}")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # bytes the file system gave that are not UTF-8
        raise argparse.ArgumentTypeError(f"the name {text!r} is not UTF-8; rename the "
                                         "file") from None
    return text


def add_out_flag(parser, help, default=None):
    """--out DIR, the flag of every command that writes or reads a checkpoint directory."""
    parser.add_argument("--out", metavar="DIR", type=directory, default=default,
                        required=default is None, help=help)


def add_threads_flag(parser):
    """--threads N (default 1): BLAS threads for numpy's matrix products, set by main.py."""
    parser.add_argument("--threads", metavar="N", type=count(1), default=1,
                        help="threads for numpy's matrix products (default: %(default)s; the "
                             "matrices are small, and several BLAS threads slow down tenfold "
                             "when another program shares the cores)")


# The help of the settings every training command has (a trainer's HELP adds its own).
TRAINING_HELP = {
    "dropout": "dropout probability while training",
    "max_iters": "optimizer steps",
    "learning_rate": "peak learning rate",
    "min_lr": "final learning rate of the cosine decay",
    "warmup_iters": "steps of linear warmup",
    "lr_decay_iters": "steps of cosine decay (default: --max-iters)",
    "beta1": "AdamW beta1",
    "grad_clip": "clip the global gradient norm to this (0: off)",
    "eval_interval": "evaluate and checkpoint every this many steps",
}


def add_resume_flags(parser):
    """--resume or --overwrite (not both), for a command that trains into --out."""
    again = parser.add_mutually_exclusive_group()
    again.add_argument("--resume", action="store_true",
                       help="continue the latest state in --out with its saved settings "
                            "(--max-iters may change)")
    again.add_argument("--overwrite", action="store_true",
                       help="start afresh, replacing the checkpoint in --out")


def add_settings_flags(group, config_class, help, choices=None):
    """A flag for each field of the dataclass config_class, named by settings.flag_name.

    A bool gets --name/--no-name, a field in `choices` ({name: values}) those values, any
    other an int or a float. help: {field name: text}. Every default is None, so that
    `given_settings` tells the flags given from the values a preset or checkpoint supplies.
    """
    from models.training.settings import flag_name

    for field in config_class.setting_fields():
        name = field.name
        kwargs = dict(dest=name, default=None, help=help[name])
        if field.type in (bool, "bool"):
            group.add_argument(flag_name(name), action=argparse.BooleanOptionalAction, **kwargs)
        elif choices and name in choices:
            group.add_argument(flag_name(name), choices=choices[name], **kwargs)
        else:
            kind = float if field.type in (float, "float") else int
            group.add_argument(flag_name(name), type=kind, metavar=kind.__name__.upper(),
                               **kwargs)


def given_settings(args, config_class):
    """{field name: value} of the flags of `add_settings_flags` given on the command line."""
    return {f.name: getattr(args, f.name) for f in dataclasses.fields(config_class)
            if getattr(args, f.name) is not None}
