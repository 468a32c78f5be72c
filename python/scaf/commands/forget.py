"""`scaf forget`: make the daemon forget what it remembers of one of your programs, or of all of them."""

from __future__ import annotations

import argparse
import os
import sys

from scaf.lib import autostart, progkey, proto, sockpath
from scaf.lib.launch import resolve

# Exit statuses (EPILOG).
EXIT_NOTHING = 1
EXIT_USAGE = 2
EXIT_NO_MEMORY = 3
EXIT_NO_DAEMON = 4
EXIT_UNSAFE = 122
EXIT_SCAF = 125

DESCRIPTION = """\
The daemon remembers, per user, what it learned of each program between its
runs: whether the program keeps its team (then `scaf run` starts it with its
share of the machine), which of its parallel regions may be steered from
their first instance, how its speed grows with threads (docs/memory.md in
scaf's source tree). It relearns all of it when it must: a new build or a
changed script is another program. `scaf forget` is for when you know better
now: after you changed an input that changes how the program behaves, or to
start over.

  scaf forget -- PROG [ARGS...]
      forget the program that `scaf run -- PROG [ARGS...]` would start: PROG
      found like a shell finds it, a `#!` script as its interpreter running
      it, and for python, R, Rscript, julia and octave the script, module
      (-m) or code (-c, -e) the ARGS name, exactly as the layer names it.
      Other arguments do not matter: they are the program's input.
  scaf forget
      forget every program of yours.

Only your own programs: on a shared daemon the kernel tells it who asks.
It prints what was forgotten. When no daemon answers on your own socket,
one is started (as scaf run starts one) to do it; on another socket
(--socket, $SCAF_SOCKET) none is started.
"""

EPILOG = """\
exit status:
  0    forgotten (with no PROG: every program of yours, even none)
  1    nothing was remembered of PROG (or PROG cannot be named: its code comes
       from stdin or a terminal)
  2    usage error (bad option, PROG not found or not executable)
  3    the daemon keeps no memory (scafd --no-memory), or speaks an older
       protocol that has none
  4    no daemon answers on the socket (and none could be started there)
  122  your socket's directory cannot be used safely, or another user's
       daemon answers on your socket
  125  scaf itself failed (libscaf_launch.so or scafd not built, the daemon
       could not write its memory, a daemon would not start)

examples:
  scaf forget -- ./solver input.dat            forget ./solver
  scaf forget -- Rscript group.R               forget that R script (not Rscript's other scripts)
  scaf forget -- python3 -m xgboost.cli        forget a module run with -m
  scaf forget                                  forget every program of yours
  scaf forget --socket /run/scaf/scafd.sock    ... on the shared daemon
"""


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "forget",
        help="forget what the daemon remembers of a program (or of all of yours)",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        usage="scaf forget [-h] [--socket P] [--no-start] [-- PROG [ARGS...]]",
    )
    p.add_argument("--socket", metavar="P", help="the daemon's socket (default: $SCAF_SOCKET, "
                   "$XDG_RUNTIME_DIR/scaf/scafd.sock, /tmp/scaf-$UID/scafd.sock)")
    p.add_argument("--no-start", action="store_true", help="do not start a daemon when none answers")
    p.add_argument("argv", nargs=argparse.REMAINDER, metavar="-- PROG ARGS",
                   help="the program as scaf run would start it; none: every program of yours")
    p.set_defaults(func=main, _parser=p)


def _err(msg: str) -> None:
    print(f"scaf forget: {msg}", file=sys.stderr, flush=True)


def _usage(args: argparse.Namespace, msg: str) -> int:
    args._parser.print_usage(sys.stderr)
    print(f"scaf forget: error: {msg}", file=sys.stderr)
    return EXIT_USAGE


def main(args: argparse.Namespace) -> int:
    argv = list(args.argv)
    if argv and argv[0] == "--":
        argv = argv[1:]
    key = None
    if argv:
        path, code = resolve(argv[0], os.environ.get("PATH"))
        if path is None:
            what = ("No such file or directory" if "/" in argv[0] else "command not found") if code == 127 \
                else "Permission denied (not an executable file)"
            return _usage(args, f"{argv[0]}: {what}")
        try:
            key = progkey.of_command(path, argv)
        except progkey.KeyLibraryMissing as e:
            _err(str(e))
            return EXIT_SCAF
        except OSError as e:
            return _usage(args, f"{argv[0]}: {e.strerror}")
        if key.key == 0:
            print(f"nothing remembered of {key.name}: it cannot be named (its code comes from stdin or a terminal)")
            return EXIT_NOTHING
    sock = args.socket or sockpath.default_socket()
    got = autostart.daemon_for(sock, autostart.own_socket(sock) and not args.no_start)
    if got.problem:
        _err(got.message)
        return {"unsafe-dir": EXIT_UNSAFE, "untrusted": EXIT_UNSAFE, "failed": EXIT_SCAF}.get(got.problem,
                                                                                             EXIT_NO_DAEMON)
    if got.started:
        _err(autostart.started_line(got.started))
    try:
        r = proto.memory(sock, proto.MEMORY_FORGET, key=key.key if key else 0)
    except proto.UntrustedDaemon as e:
        _err(str(e))
        return EXIT_UNSAFE
    except proto.DaemonUnavailable as e:
        # A daemon that answered STATUS but not MEMORY speaks an older protocol: it refused the request.
        _err(f"{e} (a daemon without memory: nothing to forget)")
        return EXIT_NO_MEMORY
    if r.status == proto.MEMORY_OFF:
        _err(f"the daemon on {sock} keeps no memory (scafd --no-memory): nothing to forget")
        return EXIT_NO_MEMORY
    if r.status == proto.MEMORY_UNKNOWN:
        print(f"nothing remembered of {key.name if key else 'your programs'}")
        return EXIT_NOTHING
    if r.status != proto.MEMORY_OK:
        _err(f"the daemon on {sock} could not forget (status {r.status}; its log says why)")
        return EXIT_SCAF
    if key is None:
        print(f"forgot {r.forgotten} program{'' if r.forgotten == 1 else 's'}")
    else:
        print(f"forgot {key.name}")
    return 0
