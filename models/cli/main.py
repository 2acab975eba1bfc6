"""The `microtensor` command: an argparse front end, one module per subcommand (train, sample, ...).

Each subcommand module defines `add_parser(subparsers)`, which registers its flags and
sets `run`, a function args -> exit status. Adding a subcommand means adding its
module to COMMANDS. Heavy imports happen inside `run`, so `--help` stays fast.
Every command gets `--threads N` here (default 1), and its `run` runs with that many
BLAS threads: set once, in this file.
"""
import argparse
import os
import sys

from . import (
    attention,
    course,
    exercises,
    explore,
    export,
    flops,
    gradflow,
    graph,
    import_,
    plot_loss,
    sample,
    shapes,
    train,
    translate,
)
from .checks import add_threads_flag

COMMANDS = [train, sample, translate, graph, explore, attention, gradflow, plot_loss, shapes, flops,
            export, import_, exercises, course]


def _version():
    """The installed package's version (or "unknown" when run from a source tree not installed)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("microtensor")
    except PackageNotFoundError:
        return "unknown"


class CommandParser(argparse.ArgumentParser):
    """An ArgumentParser that knows whether it branches into subcommands. add_subparsers makes
    its children of the parent's class (argparse's documented default for parser_class), so
    every parser below the top one is a CommandParser too, and `made` lists them all."""

    def __init__(self, *args, made, **kwargs):
        super().__init__(*args, **kwargs)
        self.made, self.branches = made, False
        made.append(self)

    def add_subparsers(self, **kwargs):
        self.branches = True
        kwargs.setdefault("parser_class", lambda *a, **k: CommandParser(*a, made=self.made, **k))
        return super().add_subparsers(**kwargs)


def build_parser():
    made = []
    parser = CommandParser(
        prog="microtensor", made=made,
        description="Train and sample a character-level GPT built on the microtensor "
                    "autograd engine.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for command in COMMANDS:
        command.add_parser(subparsers)
    for command_parser in made:  # the parsers that run something: the leaves (`translate train`)
        if command_parser.branches:
            continue
        command_parser.set_defaults(command_parser=command_parser)
        if command_parser.get_default("threads") is None:
            add_threads_flag(command_parser)
    return parser


def main(argv=None):
    """Run the command line on argv (default sys.argv[1:]); returns the exit status.

    Bad input (a missing file, an invalid setting) prints one `error:` line to stderr
    and returns 1 (so does running out of memory, e.g. for a huge --n-embd); argparse's
    usage errors return 2; Ctrl-C returns 130. Set the environment variable
    MICROTENSOR_DEBUG=1 to see the traceback instead.
    """
    parser = build_parser()
    try:
        args, unknown = parser.parse_known_args(argv)
        if unknown:  # reported with the subcommand's own usage, not the top-level one
            args.command_parser.error(f"unrecognized arguments: {' '.join(unknown)}")
    except SystemExit as stop:  # --help (0) or a usage error (2), already printed
        return stop.code
    from threadpoolctl import threadpool_limits

    try:
        with threadpool_limits(limits=args.threads, user_api="blas"):
            return args.run(args) or 0
    except BrokenPipeError:  # e.g. `microtensor shapes | head -1`: the reader left early
        sys.stderr.close()
        return 0
    except KeyboardInterrupt:
        print("microtensor: interrupted", file=sys.stderr)
        return 130
    except (OSError, ValueError, RuntimeError, MemoryError) as error:
        if os.environ.get("MICROTENSOR_DEBUG"):
            raise
        hint = " (try smaller settings)" if isinstance(error, MemoryError) else ""
        print(f"microtensor {args.command}: error: {error}{hint}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
