"""`scaf daemon`: run scafd in the foreground with the given options (the process becomes scafd)."""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys

from scaf.lib import paths

DESCRIPTION = """\
Run the scaf daemon, scafd, in the foreground. `scaf daemon OPTIONS` is
`build/bin/scafd OPTIONS`: the options go to scafd unchanged and scaf
replaces itself with it (same pid, same signals, same exit status).

The daemon decides how many threads each client program (started with
`scaf run`) may use, and re-decides at every arrival, departure, and 4 times
a second. It needs no privileges. Stop it with Ctrl-C or SIGTERM: it removes
its socket and exits 0. SIGUSR1 switches to the next policy.

One daemon per socket: a second one on a live socket refuses to start.
`scaf run` starts a per-user daemon by itself when none answers; start one
yourself to choose its options, or for a system-wide daemon.
"""

EPILOG = """\
examples:
  scaf daemon                                        default socket and policy
  scaf daemon --policy equipartition -t 2            print a scoreboard every 2 s
  scaf daemon --cpus 16 --log alloc.jsonl            allocate as if there were 16 contexts, log every change
  sudo -u scaf scaf daemon --socket /run/scaf/scafd.sock --shared
                                                     a system-wide daemon; clients set
                                                     SCAF_SOCKET=/run/scaf/scafd.sock
  kill -USR1 $(scaf status --json | jq .daemon_pid)  switch policy
"""


def register(sub: argparse._SubParsersAction) -> None:
    # Every argument belongs to scafd: no prefix character argparse knows, so
    # nothing here is parsed as an option (--help included; main() handles it).
    p = sub.add_parser(
        "daemon",
        help="run the scaf daemon (scafd) in the foreground",
        add_help=False,
        prefix_chars="\x01",
        usage="scaf daemon [-h] [scafd options]",
    )
    p.add_argument("args", nargs=argparse.REMAINDER)
    p.set_defaults(func=main)


def _scafd_help(scafd: str) -> str:
    try:
        out = subprocess.run([scafd, "--help"], check=False, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"  (cannot run {scafd} --help: {e})\n"
    text = out.stdout or out.stderr
    return text if text.endswith("\n") else text + "\n"


def print_help(scafd: str) -> None:
    sys.stdout.write("usage: scaf daemon [-h] [scafd options]\n\n" + DESCRIPTION + "\n")
    if os.access(scafd, os.X_OK):
        sys.stdout.write(f"scafd's options ({scafd} --help):\n\n" + _scafd_help(scafd) + "\n")
    else:
        sys.stdout.write(f"scafd's options: {scafd} is not built yet; run make.\n\n")
    sys.stdout.write(EPILOG)


def main(args: argparse.Namespace) -> int:
    scafd = str(paths.scafd())
    argv: list[str] = list(args.args)
    if argv[:1] == ["--"]:
        argv = argv[1:]
    if any(a in ("-h", "--help") for a in argv):
        print_help(scafd)
        return 0
    if not os.access(scafd, os.X_OK):
        print(f"scaf: the daemon {scafd} is missing; run make", file=sys.stderr)
        return 1
    sys.stdout.flush()
    sys.stderr.flush()
    # Python ignores SIGPIPE and SIGXFSZ, and exec keeps ignored signals: give
    # scafd what it would get from a shell.
    for sig in (signal.SIGPIPE, signal.SIGXFSZ):
        signal.signal(sig, signal.SIG_DFL)
    try:
        os.execv(scafd, [scafd, *argv])
    except OSError as e:
        print(f"scaf: cannot run {scafd}: {e.strerror}", file=sys.stderr)
        return 1
    return 1  # not reached
