"""`scaf demo`: two workloads at once, unmodified and then under a private scaf daemon, side by side."""

from __future__ import annotations

import argparse
import os
import signal
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from scaf.lib import paths, proto
from scaf.lib.demo import Demo, DemoFailed, Result, allocations

if TYPE_CHECKING:
    from rich.console import Console

DEFAULT_WORKLOADS = "spin,cg"

DESCRIPTION = """\
Show what scaf does, on this machine, in about a minute.

The demo starts a PRIVATE daemon (policy equipartition) on a socket in a new
temporary directory; it never touches a daemon you run yourself. Then, for the
chosen workloads (default: spin and cg, size W):

  1. serial:      each program alone on one thread (OMP_NUM_THREADS=1), one
                  after the other: the reference for speedups;
  2. unmodified:  all programs at once, each with libgomp's default thread
                  count (one per CPU), plain libgomp: they oversubscribe;
  3. under scaf:  all programs at once, with the layer preloaded and talking
                  to the private daemon, which splits the CPUs among them.

It prints, per program, its time in each configuration and its speedup
(serial time / time), then the sum of speedups per configuration and the
ratio scaf / unmodified. Every run must print verified=yes. OMP_NUM_THREADS
is removed from the environment of runs 2 and 3.

At the end (and on Ctrl-C or any error) it stops the daemon and every
program it started, and removes its directory unless --keep.
"""

EPILOG = """\
exit status:
  0    all runs verified
  1    a run failed or did not verify (its output is shown), or a part of scaf is not built
  2    usage error (unknown workload, bad size)
  130  interrupted

examples:
  make demo                                  build everything, then scaf demo
  scaf demo                                  spin and cg at size W
  scaf demo --size S                         a quick check (well under a minute)
  scaf demo --workloads spin,spin            two copies of the spin-lock pipeline
  scaf demo --keep                           keep outputs and the daemon's allocation log
  scaf demo --plot                           also draw allocations and per-CPU traces
                                             (into $XDG_STATE_HOME/scaf/demo-YYYYmmdd-HHMMSS)
  scaf demo --plot /tmp/pics                 the same pictures into /tmp/pics
"""


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "demo",
        help="run two workloads unmodified and under scaf; print the speedups",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--workloads", metavar="A,B", default=DEFAULT_WORKLOADS,
                   help=f"comma-separated workloads from build/workloads (default {DEFAULT_WORKLOADS})")
    p.add_argument("--size", choices=("S", "W", "A"), default="W",
                   help="problem size: S quick check, W a few seconds each (default), A longer")
    p.add_argument("--plot", metavar="DIR", nargs="?", const="",
                   help="write pictures of the run into DIR (default $XDG_STATE_HOME/scaf/demo-YYYYmmdd-HHMMSS, "
                        "that is ~/.local/state/scaf/... when XDG_STATE_HOME is unset): demo-alloc.png "
                        "(threads per program over time, from the daemon's log) and demo-trace-unmodified.png / "
                        "demo-trace-scaf.png (which program used each CPU over time)")
    p.add_argument("--keep", action="store_true",
                   help="keep the private directory (outputs, daemon log, allocation log) and say where")
    p.set_defaults(func=main)


def _speedup(serial: float, t: float) -> float | None:
    return serial / t if t > 0 and serial > 0 else None


def _fmt(v: float | None, unit: str = "") -> str:
    """Speedups with 2 decimals; times with 3 significant digits (size S runs take milliseconds)."""
    if v is None:
        return "-"
    return f"{v:.2f}{unit}" if unit else f"{v:.3g}"


def report(names: list[str], serial: list[Result], plain: list[Result], scaf: list[Result],
           alloc: dict[int, list[int]], cpus: object, size: str) -> float | None:
    from rich import box
    from rich.console import Console
    from rich.table import Table

    console = Console()
    if not console.is_terminal:
        console.width = max(console.width, 120)
    labels = names if len(set(names)) == len(names) else [f"{n}#{i + 1}" for i, n in enumerate(names)]
    table = Table(title=f"scaf demo: {' + '.join(names)} at size {size}, on {cpus} CPUs",
                  box=box.SIMPLE_HEAVY, title_justify="left")
    table.add_column("program")
    table.add_column("serial s", justify="right")
    table.add_column("unmodified s", justify="right")
    table.add_column("threads", justify="right")
    table.add_column("speedup", justify="right")
    table.add_column("under scaf s", justify="right")
    table.add_column("threads", justify="right")
    table.add_column("speedup", justify="right")
    sums = [0.0, 0.0]
    for label, s, p, c in zip(labels, serial, plain, scaf):
        sp = _speedup(s.time_s, p.time_s)
        sc = _speedup(s.time_s, c.time_s)
        sums[0] += sp or 0.0
        sums[1] += sc or 0.0
        got = alloc.get(c.pid) or []
        # Under scaf, show the allocations the daemon gave (from its log).
        scaf_threads = (f"{min(got)}" if min(got) == max(got) else f"{min(got)}-{max(got)}") if got else c.threads
        table.add_row(label, _fmt(s.time_s), _fmt(p.time_s), p.threads, _fmt(sp, "x"),
                      _fmt(c.time_s), scaf_threads, _fmt(sc, "x"))
    table.add_section()
    table.add_row("sum of speedups", "", "", "", f"[bold]{sums[0]:.2f}x[/]", "", "", f"[bold]{sums[1]:.2f}x[/]")
    console.print(table)
    ratio = sums[1] / sums[0] if sums[0] > 0 else None
    console.print(f"scaf / unmodified (sum of speedups): [bold]{_fmt(ratio, 'x')}[/]", highlight=False)
    return ratio


def plot_home() -> Path:
    """Where --plot without a folder puts the pictures: a new folder under the results home."""
    from scaf.lib.bench import common

    return common.results_home() / common.stamped("demo")


def _plot(demo: Demo, labels: list[str], out_dir: str, err: Console) -> bool:
    """The allocation timeline and, per concurrent phase, the per-CPU trace (time- vs space-sharing)."""
    from scaf.lib.plot import plot_alloc_log, plot_trace

    os.makedirs(out_dir, exist_ok=True)
    jobs = [(plot_alloc_log, demo.alloc_log, os.path.join(out_dir, "demo-alloc.png"))]
    jobs += [(plot_trace, demo.trace_path(lb), os.path.join(out_dir, f"demo-trace-{lb}.png")) for lb in labels]
    ok = True
    for fn, src, png in jobs:
        try:
            note = fn(src, png)
        except Exception as e:  # noqa: BLE001 - a failed picture must not hide the measurements above
            err.print(f"[red]scaf: plotting {src} failed: {e}[/]")
            ok = False
            continue
        err.print(f"wrote {png}" + (f" ({note})" if note else ""))
    return ok


def _raise_exit(signum: int, _frame: object) -> None:
    raise SystemExit(128 + signum)


def main(args: argparse.Namespace) -> int:
    from rich.console import Console

    err = Console(stderr=True, highlight=False, soft_wrap=True)
    names = [w.strip() for w in args.workloads.split(",") if w.strip()]
    if not names:
        print("scaf demo: error: --workloads names no workload", file=sys.stderr)
        return 2
    wdir = paths.workloads_dir()
    built = sorted(p.name for p in wdir.iterdir() if os.access(p, os.X_OK)) if wdir.is_dir() else []
    for n in names:
        if "/" in n or not os.access(paths.workload(n), os.X_OK):
            if built:
                print(f"scaf demo: error: unknown workload {n!r} (built: {', '.join(built)})", file=sys.stderr)
                return 2
            print(f"scaf: the workloads are not built ({wdir} is empty); run make", file=sys.stderr)
            return 1
    for need in (paths.scafd(), paths.layer()):
        if not need.exists():
            print(f"scaf: {need} is missing; run make", file=sys.stderr)
            return 1

    # SIGTERM and SIGHUP must run the cleanup too, not just Ctrl-C.
    old = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    for s in (signal.SIGTERM, signal.SIGHUP):
        if old[s] != signal.SIG_IGN:
            signal.signal(s, _raise_exit)
    demo = Demo(keep=args.keep)
    ok = True
    try:
        err.print(f"scaf demo: private daemon (equipartition) on {demo.socket}")
        demo.start_daemon()
        cpus = proto.status(demo.socket).get("cpus", "?")
        serial = []
        for i, n in enumerate(names):
            with err.status(f"[{i + 1}/{len(names)}] serial: {n} --size {args.size} on 1 thread"):
                serial += demo.run_together("serial", [n], args.size, scaf=False, serial=True)
            err.print(f"serial: {n} {serial[-1].time_s:.2f} s")
        together = " and ".join(names)
        with err.status(f"unmodified: {together} at once, default threads, plain libgomp"):
            plain = demo.run_together("unmodified", names, args.size, scaf=False, serial=False,
                                      trace=args.plot is not None)
        err.print("unmodified: " + ", ".join(f"{r.name} {r.time_s:.2f} s" for r in plain))
        with err.status(f"under scaf: {together} at once, sharing {cpus} CPUs through the private daemon"):
            scaf = demo.run_together("scaf", names, args.size, scaf=True, serial=False,
                                     trace=args.plot is not None)
        err.print("under scaf: " + ", ".join(f"{r.name} {r.time_s:.2f} s" for r in scaf))
        alloc = allocations(demo.alloc_log, {r.pid: r.name for r in scaf})
        for r in scaf:
            if not alloc.get(r.pid):
                err.print(f"[yellow]scaf demo: {r.name} (pid {r.pid}) never appeared in the daemon's "
                          f"allocation log: did the layer connect? (see {demo.daemon_stderr})[/]")
        report(names, serial, plain, scaf, alloc, cpus, args.size)
        if args.plot is not None:
            ok = _plot(demo, ["unmodified", "scaf"], args.plot or str(plot_home()), err)
        if args.keep:
            err.print(f"kept outputs, the daemon's stderr and its allocation log in {demo.dir}")
        return 0 if ok else 1
    except DemoFailed as e:
        print(f"scaf demo: {e}", file=sys.stderr)
        return 1
    finally:
        # A second Ctrl-C or SIGTERM must not cut the cleanup short.
        for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(s, signal.SIG_IGN)
        try:
            demo.close()
        finally:
            for s, h in old.items():
                signal.signal(s, h)
