"""`scaf demo`: two workloads at once, unmodified and then under a private scaf daemon, side by side."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from scaf.lib import paths, proto
from scaf.lib.daemon import DaemonExited, DaemonTimeout, PrivateDaemon

if TYPE_CHECKING:
    from rich.console import Console

DEFAULT_WORKLOADS = "spin,cg"

# Every process the demo starts carries this variable (value: the demo's
# private directory), so that anyone can check that none outlives it.
MARKER = "SCAF_DEMO_DIR"

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
  scaf demo --plot out/                      also draw allocations and per-CPU traces
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
    p.add_argument("--plot", metavar="DIR", help="write pictures of the run into DIR: demo-alloc.png (threads per program over "
                        "time, from the daemon's log) and demo-trace-unmodified.png / demo-trace-scaf.png "
                        "(which program used each CPU over time)")
    p.add_argument("--keep", action="store_true",
                   help="keep the private directory (outputs, daemon log, allocation log) and say where")
    p.set_defaults(func=main)


class DemoFailed(Exception):
    """A run failed or did not verify; the message carries its output."""


@dataclass
class Result:
    label: str
    name: str
    code: int
    wall_s: float
    fields: dict[str, str]
    output: str
    pid: int

    @property
    def time_s(self) -> float:
        return float(self.fields["time_s"])

    @property
    def threads(self) -> str:
        return self.fields.get("threads", "?")


@dataclass
class Demo:
    keep: bool
    dir: str = field(default_factory=lambda: tempfile.mkdtemp(prefix="scaf-demo-", dir="/tmp"))
    procs: list[subprocess.Popen[bytes]] = field(default_factory=list)
    daemon: PrivateDaemon | None = None

    @property
    def socket(self) -> str:
        return os.path.join(self.dir, "scafd.sock")

    @property
    def alloc_log(self) -> str:
        return os.path.join(self.dir, "alloc.jsonl")

    @property
    def daemon_stderr(self) -> str:
        return os.path.join(self.dir, "scafd.stderr")

    def env(self, scaf: bool, serial: bool) -> dict[str, str]:
        env = dict(os.environ)
        layer = str(paths.layer())
        preload = [p for p in env.get("LD_PRELOAD", "").replace(":", " ").split() if p != layer]
        for k in ("LD_PRELOAD", "SCAF_SOCKET", "SCAF_DISABLE", "OMP_NUM_THREADS"):
            env.pop(k, None)
        if scaf:
            preload.append(layer)
            env["SCAF_SOCKET"] = self.socket
        if preload:
            env["LD_PRELOAD"] = ":".join(preload)
        if serial:
            env["OMP_NUM_THREADS"] = "1"
        env[MARKER] = self.dir
        return env

    def start_daemon(self) -> None:
        self.daemon = PrivateDaemon(["--policy", "equipartition", "--log", self.alloc_log],
                                    socket=self.socket, env=self.env(scaf=False, serial=False),
                                    stderr_path=self.daemon_stderr)
        try:
            self.daemon.start()
        except DaemonExited as e:
            raise DemoFailed(f"the private daemon exited at start ({e.returncode}):\n" + e.stderr) from None
        except DaemonTimeout as e:
            raise DemoFailed("the private daemon did not answer within 10 s:\n" + e.stderr) from None

    def trace_path(self, label: str) -> str:
        return os.path.join(self.dir, f"{label}.trace")

    def run_together(self, label: str, names: list[str], size: str, scaf: bool, serial: bool,
                     trace: bool = False) -> list[Result]:
        """Start NAMES at the same moment, wait for all, return their results (in order).

        With trace, per-CPU usage of each program's tree goes to trace_path(label).
        """
        from scaf.lib.trace import Recorder

        recorder = Recorder(self.trace_path(label)).start() if trace else None
        started: list[tuple[str, subprocess.Popen[bytes], str, float]] = []
        for i, name in enumerate(names):
            out = os.path.join(self.dir, f"{label}-{i}-{name}.out")
            with open(out, "wb") as f:
                # Own session: Ctrl-C reaches only us, and we can kill the whole group.
                p = subprocess.Popen([str(paths.workload(name)), "--size", size], stdin=subprocess.DEVNULL,
                                     stdout=f, stderr=f, env=self.env(scaf, serial), start_new_session=True)
            self.procs.append(p)
            if recorder:
                recorder.add(p.pid, name)
            started.append((name, p, out, time.monotonic()))
        results = []
        try:
            codes = [p.wait() for _, p, _, _ in started]
        finally:
            if recorder:
                recorder.stop()
        for (name, p, out, t0), code in zip(started, codes, strict=True):
            wall = time.monotonic() - t0
            text = Path(out).read_text(errors="replace")
            fields = last_line_fields(text)
            results.append(Result(label, name, code, wall, fields, text, p.pid))
        for r in results:
            if r.code != 0 or r.fields.get("verified") != "yes" or "time_s" not in r.fields:
                raise DemoFailed(f"{r.name} ({r.label}) exited {r.code} without verified=yes; its output:\n"
                                 + r.output.rstrip())
        return results

    def close(self) -> None:
        """Leave nothing running: kill our workloads' groups, stop the daemon, remove the directory."""
        for p in self.procs:
            if p.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(p.pid, signal.SIGKILL)
                p.wait()
        if self.daemon is not None:
            self.daemon.stop()
        if not self.keep:
            shutil.rmtree(self.dir, ignore_errors=True)


def last_line_fields(text: str) -> dict[str, str]:
    lines = [ln for ln in text.strip().splitlines() if ln.strip()]
    if not lines:
        return {}
    return dict(kv.split("=", 1) for kv in lines[-1].split() if "=" in kv)


def allocations(log: str, pids: dict[int, str]) -> dict[int, list[int]]:
    """Threads each of PIDS was allocated over the daemon's log (empty list: never a client)."""
    seen: dict[int, list[int]] = {pid: [] for pid in pids}
    try:
        with open(log, encoding="utf-8", errors="replace") as f:
            for line in f:
                try:
                    entry = json.loads(line)
                except ValueError:
                    continue
                for c in entry.get("clients") or []:
                    if c.get("pid") in seen and isinstance(c.get("threads"), int):
                        seen[c["pid"]].append(c["threads"])
    except OSError:
        pass
    return seen


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


def _plot(demo: Demo, labels: list[str], out_dir: str, err: Console) -> bool:
    """The allocation timeline and, per concurrent phase, the per-CPU trace (time- vs space-sharing)."""
    from scaf.lib.plot import plot_alloc_log, plot_trace

    os.makedirs(out_dir, exist_ok=True)
    jobs = [(plot_alloc_log, demo.alloc_log, os.path.join(out_dir, "demo-alloc.png"))]
    jobs += [(plot_trace, demo.trace_path(lb), os.path.join(out_dir, f"demo-trace-{lb}.png")) for lb in labels]
    ok = True
    for fn, src, png in jobs:
        try:
            fn(src, png)
        except Exception as e:  # noqa: BLE001 - a failed picture must not hide the measurements above
            err.print(f"[red]scaf: plotting {src} failed: {e}[/]")
            ok = False
            continue
        err.print(f"wrote {png}")
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
                                      trace=bool(args.plot))
        err.print("unmodified: " + ", ".join(f"{r.name} {r.time_s:.2f} s" for r in plain))
        with err.status(f"under scaf: {together} at once, sharing {cpus} CPUs through the private daemon"):
            scaf = demo.run_together("scaf", names, args.size, scaf=True, serial=False, trace=bool(args.plot))
        err.print("under scaf: " + ", ".join(f"{r.name} {r.time_s:.2f} s" for r in scaf))
        alloc = allocations(demo.alloc_log, {r.pid: r.name for r in scaf})
        for r in scaf:
            if not alloc.get(r.pid):
                err.print(f"[yellow]scaf demo: {r.name} (pid {r.pid}) never appeared in the daemon's "
                          f"allocation log: did the layer connect? (see {demo.daemon_stderr})[/]")
        report(names, serial, plain, scaf, alloc, cpus, args.size)
        if args.plot:
            ok = _plot(demo, ["unmodified", "scaf"], args.plot, err)
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
