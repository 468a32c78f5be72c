"""The user's own programs in a bench (--program NAME='CMD ARGS'): their options, parsing, and judging a run by exit status and output."""

from __future__ import annotations

import argparse
import hashlib
import os
import re
import shlex
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from scaf.lib.bench import known
from scaf.lib.bench.errors import BenchError

# Names become file names (logs/NAME+NAME...) and pair labels (NAME+NAME).
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")


@dataclass(frozen=True)
class UserProgram:
    """A command the bench runs in place of a workload. Each run gets a fresh empty working folder;
    outputs are files it writes there (or absolute paths), compared across runs with its stdout."""

    name: str
    argv: tuple[str, ...]
    text: str  # the command as given, for results.json and messages
    outputs: tuple[str, ...] = ()
    ignore: re.Pattern[str] | None = field(default=None, compare=False)
    # A count the program itself reads for a runtime that has no variable (a program the bench knows: its
    # script's WORK_THREADS, which it gives DuckDB's SET threads): the static split and the serial run set it.
    count_var: str | None = None


def parse(specs: list[str], outputs: list[str], ignore: str | None,
          builtin: list[str] | None = None) -> dict[str, UserProgram]:
    """--program NAME='CMD ARGS' (each), --output NAME=FILE, --ignore REGEX -> name -> program.

    Raises BenchError with the option at fault. The command's first word is resolved now (a path
    relative to the current folder, or through PATH), because the program runs in a folder of its own.
    """
    try:
        if ignore:
            re.compile(ignore)
    except re.error as e:
        raise BenchError(f"--ignore {ignore!r} is not a regular expression: {e}") from None
    cmds: dict[str, tuple[tuple[str, ...], str]] = {}
    own: dict[str, str] = {}  # the stdout lines a program known by name ignores of itself
    counts: dict[str, str] = {}  # the count variable of a program known by name
    for spec in specs:
        name, sep, cmd = spec.partition("=")
        name = name.strip()
        if name in cmds:
            raise BenchError(f"--program {name} is given twice")
        if not sep and name in known.KNOWN:
            argv, why = known.KNOWN[name].command()
            if argv is None:
                raise BenchError(f"--program {name}: not installed here: {why}")
            cmds[name] = (tuple(argv), shlex.join(argv))
            if known.KNOWN[name].ignore:
                own[name] = str(known.KNOWN[name].ignore)
            if known.KNOWN[name].count_var:
                counts[name] = str(known.KNOWN[name].count_var)
            continue
        if not sep or not _NAME.fullmatch(name):
            raise BenchError(f"--program {spec!r}: expected NAME='COMMAND ARGS...' with NAME made of "
                             "letters, digits, '_', '.', '-', or the name of a program the bench knows: "
                             f"{', '.join(known.KNOWN)}")
        if builtin and name in builtin:
            raise BenchError(f"--program {name}: a built-in workload has that name; choose another")
        try:
            argv = shlex.split(cmd)
        except ValueError as e:
            raise BenchError(f"--program {name}: {e}") from None
        if not argv:
            raise BenchError(f"--program {name}: no command after '='")
        argv[0] = _resolve(name, argv[0])
        cmds[name] = (tuple(argv), cmd.strip())
    files: dict[str, list[str]] = {n: [] for n in cmds}
    for spec in outputs:
        name, sep, path = spec.partition("=")
        if not sep or not path:
            raise BenchError(f"--output {spec!r}: expected NAME=FILE")
        if name not in cmds:
            raise BenchError(f"--output {spec!r}: no --program named {name!r}")
        files[name].append(path)
    return {n: UserProgram(n, argv, text, tuple(files[n]), _either(own.get(n), ignore), counts.get(n))
            for n, (argv, text) in cmds.items()}


def _either(mine: str | None, ignore: str | None) -> re.Pattern[str] | None:
    """A line matching the program's own pattern (a program known by name) or --ignore's."""
    either = [f"(?:{p})" for p in (mine, ignore) if p]
    return re.compile("|".join(either)) if either else None


def _resolve(name: str, word: str) -> str:
    if "/" in word:
        path = Path(word).expanduser().absolute()
        if not (path.is_file() and os.access(path, os.X_OK)):
            raise BenchError(f"--program {name}: {path} is not an executable file")
        return str(path)
    found = shutil.which(word)
    if not found:
        raise BenchError(f"--program {name}: {word!r} is not found in PATH")
    return found


def judge(prog: UserProgram, stdout: str, cwd: str) -> tuple[str | None, str | None]:
    """(digest of what the program produced, error): stdout without the --ignore lines, then each
    --output file. Runs of one program are compared by this digest (report.program_failure)."""
    h = hashlib.sha256()
    for line in stdout.splitlines():
        if prog.ignore is not None and prog.ignore.search(line):
            continue
        h.update(line.encode(errors="replace") + b"\n")
    for rel in prog.outputs:
        path = Path(cwd) / rel  # an absolute rel stays itself
        try:
            data = path.read_bytes()
        except OSError as e:
            return None, f"did not write its --output {rel} ({e.strerror or e})"
        h.update(f"\0{rel}\0{len(data)}\0".encode())
        h.update(data)
    return h.hexdigest()[:16], None


def add_arguments(p: argparse.ArgumentParser) -> None:
    """--program, --output and --ignore, as `scaf bench pairs` and `scaf doctor` take them."""
    p.add_argument("--program", action="append", metavar="NAME='CMD ARGS'|NAME",
                   help="your own program instead of the built workloads (repeatable): it runs alone "
                        "on one thread, then in pairs under each configuration; its time is the wall "
                        "time; it is correct when it exits 0 and prints (and writes) the same as on "
                        "one thread. Each run starts in a fresh empty folder: name inputs by absolute "
                        "path. With --workloads too, both are paired. A NAME alone names a program the bench "
                        "knows, where it is installed: xgboost-hist and datatable (the corpus's XGBoost and R "
                        "data.table scripts), tbb-for and tbb-reduce (the oneTBB test programs)")
    p.add_argument("--output", action="append", metavar="NAME=FILE",
                   help="a file program NAME writes (relative to its folder), compared across runs "
                        "(repeatable)")
    p.add_argument("--ignore", metavar="REGEX",
                   help="stdout lines matching REGEX (Python re.search) are left out of the "
                        "comparison, e.g. --ignore 'time|elapsed' for timing lines")


def from_args(args: argparse.Namespace, builtin: Callable[[], list[str]]) -> dict[str, UserProgram]:
    """--program/--output/--ignore -> the user's programs (BenchError when malformed). BUILTIN lists the built
    workloads, whose names a program may not take; it is asked only when programs are given."""
    if not args.program:
        if args.output or args.ignore:
            raise BenchError("--output and --ignore apply to --program commands; none is given")
        return {}
    return parse(args.program, args.output or [], args.ignore, builtin())
