"""The `scaf` command line: one subcommand per module, each with register(subparsers)."""

from __future__ import annotations

import argparse
import importlib
import sys

from scaf import __version__

# Each module defines register(sub) that adds its parser and sets `func`.
# Heavy imports (matplotlib, numpy) happen inside the command functions.
COMMANDS = [
    "daemon_cmd",
    "run",
    "status",
    "allocate",
    "demo",
    "bench",
    "trace",
    "plot",
    "doctor",
    "sim",
]

EPILOG = """\
examples:
  scaf daemon --policy equipartition        start a daemon in the foreground
  scaf run -- ./my_omp_program args         run a program under scaf
  scaf status                               show clients and their threads
  scaf <command> --help                     help on one command
"""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="scaf",
        description="Space-share the machine among OpenMP programs that run at the same time.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"scaf {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMANDS:
        try:
            module = importlib.import_module(f"scaf.{name}")
        except ModuleNotFoundError as e:
            if e.name == f"scaf.{name}":
                continue  # not built yet
            raise
        module.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help(sys.stderr)
        return 2
    try:
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        return 130
