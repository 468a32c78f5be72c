"""The `scaf` command line: the top-level parser; each subcommand is a module of scaf.commands with register(subparsers)."""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable

from scaf import __version__

# Each module defines register(sub) that adds its parser and sets `func`.
# Heavy imports (matplotlib, numpy) happen inside the command functions.
COMMANDS = [
    "daemon",
    "run",
    "check",
    "forget",
    "rules",
    "status",
    "allocate",
    "demo",
    "bench",
    "trace",
    "plot",
    "doctor",
    "sim",
]

DESCRIPTION = """\
Space-share the machine among OpenMP programs that run at the same time.

A daemon (scafd) decides how many threads each program may use; a layer
preloaded into each program (libscaf_gomp.so) applies that count at every
parallel region. Programs are not modified or recompiled.
"""

EPILOG = """\
socket: --socket P, else $SCAF_SOCKET, else $XDG_RUNTIME_DIR/scaf/scafd.sock,
        else /tmp/scaf-$UID/scafd.sock

examples:
  make demo                                 build, then compare two programs with and without scaf
  scaf daemon --policy equipartition        start a daemon in the foreground
  scaf run -- ./my_omp_program args         run a program under scaf
  scaf status                               show clients and their threads
  scaf <command> --help                     help on one command
"""


class CommandParser(argparse.ArgumentParser):
    """A subcommand's parser that rejects options it does not know itself, so that the error comes
    with its own usage line (`usage: scaf bench pairs ...`), not the top-level one. argparse leaves a
    subparser's leftovers to the top-level parser, whose usage says nothing about the subcommand."""

    def parse_known_args(self, args=None, namespace=None):
        ns, extras = super().parse_known_args(args, namespace)
        if extras:
            self.error(f"unrecognized arguments: {' '.join(extras)}")
        return ns, extras


def _broken(name: str, err: BaseException) -> Callable[[argparse.Namespace], int]:
    def run(_args: argparse.Namespace) -> int:
        print(f"scaf: the {name} command cannot load: {type(err).__name__}: {err}", file=sys.stderr)
        return 1

    return run


def build_parser(argv: list[str] | None = None) -> argparse.ArgumentParser:
    """The parser; with ARGV naming a command first, only that command's module is loaded: `scaf run` is
    on the path to every program a user starts under scaf, and the other commands' imports would be paid
    before each (a third of a second with a cold bytecode cache)."""
    parser = argparse.ArgumentParser(
        prog="scaf",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"scaf {__version__}")
    # Nested subcommands (bench pairs, plot trace) inherit the class: add_subparsers defaults to it.
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=CommandParser)
    # `scaf --version` answers from the top parser: no command's module is needed (0.2 s of imports).
    only = [argv[0]] if argv and argv[0] in COMMANDS else [] if argv == ["--version"] else COMMANDS
    for name in only:
        try:
            module = importlib.import_module(f"scaf.commands.{name}")
            module.register(sub)
        except ModuleNotFoundError as e:
            if e.name == f"scaf.commands.{name}":
                continue  # not built yet
            _add_broken(sub, name, e)
        except Exception as e:  # noqa: BLE001 - one broken command must not take the others down
            _add_broken(sub, name, e)
    return parser


def _add_broken(sub: argparse._SubParsersAction, name: str, err: BaseException) -> None:
    if name in sub.choices:
        return
    p = sub.add_parser(name, help=f"(cannot load: {err})", add_help=False, prefix_chars="\x01")
    p.add_argument("args", nargs=argparse.REMAINDER)
    p.set_defaults(func=_broken(name, err))


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = build_parser(argv)
    args = parser.parse_args(argv)
    args._words = argv[1:]  # the command's own words, as typed: `scaf run` keys its replays by them
    if not getattr(args, "func", None):
        parser.print_help(sys.stderr)
        return 2
    # Raised before a command can word it: the launch library (the rules every command shares with the layer and
    # scafd) is not built.
    from scaf.lib import progkey

    try:
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        return 130
    except progkey.KeyLibraryMissing as e:
        print(f"scaf: {e}", file=sys.stderr)
        return 125
