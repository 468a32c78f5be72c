"""`scaf trace`: how much of each CPU each process tree used, period by period (like pidpcpu)."""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import subprocess
import sys
from typing import TextIO

from scaf.lib.trace import trace

EPILOG = """\
output (text, the default; one row per tree and CPU with nonzero use in a period):
  # scaf-trace 1 period=0.1 cpus=2 start=1700000000.000 clock=schedstat
  # tree 4242 ep
  0.100 4242@0 0.981
  0.100 4242@1 0.122
  columns: seconds since the start (end of the period), root pid of the tree @ CPU,
  fraction of that CPU the tree used during the period (1.000 = the whole CPU).
  --csv writes the same rows as `time,pid,name,cpu,usage` with a header.

  A tree is the given process, its threads and all its descendants (found at each
  sample, so children forked later count too; a descendant stays in the tree when
  its parent exits). Each thread's CPU time in the period is charged to the CPU it
  ran on last, as the original pidpcpu did.

examples:
  scaf trace 4242 4243                       trace two running programs until they exit
  scaf trace -o run.trace -- scaf run -- gm convert -size 3000x3000 plasma: -blur 0x9 /tmp/p.ppm
  scaf trace --csv --period 0.5 -o t.csv 4242
  scaf plot trace run.trace -o run.png       draw it
"""


def _run_command(args: argparse.Namespace, out: TextIO) -> int:
    try:
        child = subprocess.Popen(args.command)
    except OSError as e:
        print(f"scaf trace: cannot run {args.command[0]}: {e.strerror or e}", file=sys.stderr)
        return 127
    # The command shares our terminal: Ctrl-C reaches it directly; we keep sampling until it
    # ends. SIGTERM and SIGHUP sent to us are passed on, so that the command ends and we follow.
    def forward(signum: int, frame: object) -> None:
        if child.poll() is None:
            child.send_signal(signum)

    old = {signal.SIGINT: signal.signal(signal.SIGINT, signal.SIG_IGN)}
    for sig in (signal.SIGTERM, signal.SIGHUP):
        old[sig] = signal.signal(sig, forward)
    try:
        try:
            trace([child.pid], out, args.period, args.csv, child=child,
                  names={child.pid: os.path.basename(args.command[0])})
        except ProcessLookupError:
            pass  # the command ended before the first sample
        rc = child.wait()
    finally:
        for sig, handler in old.items():
            signal.signal(sig, handler)
    return 128 - rc if rc < 0 else rc


def cmd_trace(args: argparse.Namespace) -> int:
    if args.period <= 0 or args.period > 3600:
        print(f"scaf trace: --period must be in (0, 3600] seconds, not {args.period}", file=sys.stderr)
        return 2
    command = list(args.target)
    if command and command[0] == "--":
        command = command[1:]
        args.command = command
        if not command:
            print("scaf trace: nothing to run after --", file=sys.stderr)
            return 2
    else:
        args.command = None
    pids: list[int] = []
    if args.command is None:
        if not command:
            print("scaf trace: give PIDs to trace or -- COMMAND (see --help)", file=sys.stderr)
            return 2
        for p in command:
            if not p.isdigit() or int(p) <= 0:
                print(f"scaf trace: not a process id: {p!r} (run a command with `-- CMD`)",
                      file=sys.stderr)
                return 2
            pids.append(int(p))
    with contextlib.ExitStack() as stack:
        out: TextIO = sys.stdout
        if args.output:
            try:
                out = stack.enter_context(open(args.output, "w", buffering=1))
            except OSError as e:
                print(f"scaf trace: cannot write {args.output}: {e.strerror or e}", file=sys.stderr)
                return 1
        try:
            if args.command is not None:
                return _run_command(args, out)
            try:
                trace(list(dict.fromkeys(pids)), out, args.period, args.csv)
            except ProcessLookupError as e:
                print(f"scaf trace: no such process: {e.args[0]}", file=sys.stderr)
                return 1
            return 0
        except BrokenPipeError:
            # The reader went away (e.g. `| head`); stop quietly.
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
            return 0


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "trace",
        help="sample how much of each CPU each process tree uses",
        description=(
            "Sample, for each process tree (all threads, all descendants), how much of each CPU "
            "it used in each period. Stops when the traced processes exit; with `-- CMD` runs "
            "CMD, traces it, and exits with its status."
        ),
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--period", type=float, default=0.1, metavar="S",
                   help="sampling period in seconds (default 0.1)")
    p.add_argument("--csv", action="store_true", help="write CSV with a header instead of text rows")
    p.add_argument("-o", "--output", metavar="FILE", help="write rows to FILE (default stdout)")
    p.add_argument("target", nargs=argparse.REMAINDER, metavar="PID... | -- CMD ARGS",
                   help="process ids to trace, or -- and a command to run and trace")
    p.set_defaults(func=cmd_trace)
