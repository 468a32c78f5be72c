"""soak.py — churn against one scafd: waves of real OpenMP clients connect, run and are SIGKILLed.

`make soak` runs it against the ASan+UBSan daemon for SOAK_S seconds. Each wave
starts --wave real programs (workloads built by `make`, the layer preloaded),
waits until the daemon counts them as clients, lets them run a moment and
SIGKILLs every one, in random order (each is SIGSTOPped once registered, so
that hundreds of them do not drown the machine). Afterwards the daemon must
have 0 clients, as many open descriptors as before the first wave, an RSS
that did not grow wave after wave, no sanitizer report, and exit 0 on SIGTERM.
Exit status: 0 when every check holds, 1 otherwise, 2 on bad arguments.
"""

from __future__ import annotations

import argparse
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "python"))

from scaf.lib import daemon, paths, proto

SANITIZER_MARKERS = ("AddressSanitizer", "LeakSanitizer", "UndefinedBehaviorSanitizer", "runtime error:")
WORKLOADS = ("ep", "regions")  # long regions, and many short ones through every GOMP entry point


def rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def nfds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def nclients(d: daemon.PrivateDaemon) -> int:
    return len(d.status()["clients"])


def wave(d: daemon.PrivateDaemon, n: int, rng: random.Random, env: dict[str, str]) -> dict[str, int]:
    """One wave: start n clients, SIGSTOP each once the daemon counts it, then SIGKILL them all.

    A stopped client keeps its connection and page but burns no CPU, so a wave of hundreds
    does not drown the machine, and each client still ran its first regions under the daemon.
    """
    procs: dict[int, subprocess.Popen[bytes]] = {}
    stopped: set[int] = set()
    peak = 0
    for batch in range(0, n, 50):
        for i in range(batch, min(n, batch + 50)):
            prog = paths.build_dir() / "workloads" / WORKLOADS[i % len(WORKLOADS)]
            p = subprocess.Popen([str(prog), "--size", "A"], env=env, stdin=subprocess.DEVNULL,
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            procs[p.pid] = p
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            pids = {c["pid"] for c in d.status()["clients"]}
            peak = max(peak, len(pids))
            for pid in pids & procs.keys() - stopped:
                os.kill(pid, signal.SIGSTOP)
                stopped.add(pid)
            if len(stopped) >= min(n, batch + 50) * 9 // 10:
                break
            time.sleep(0.3)
    time.sleep(rng.uniform(0.2, 1.0))
    order = list(procs.values())
    rng.shuffle(order)
    killed = 0
    for k, p in enumerate(order):
        if p.poll() is None:
            p.send_signal(signal.SIGKILL)
            killed += 1
        if k % 100 == 99:
            time.sleep(0.05)  # kills in bursts, not all in one batch
    for p in order:
        p.wait()
    return {"started": n, "peak_clients": peak, "killed": killed, "registered": len(stopped)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scafd", default=str(paths.scafd()), help="the daemon to soak (default: the plain build)")
    ap.add_argument("--seconds", type=float, default=600, help="how long to run waves (default 600)")
    ap.add_argument("--wave", type=int, default=1000, help="clients per wave, 1..1000 (default 1000)")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    if args.seconds <= 0 or not 1 <= args.wave <= 1000:
        ap.error("--seconds must be > 0 and --wave 1..1000")
    rng = random.Random(args.seed)
    # A small ASan quarantine (256 MB by default) so that freed memory held back for use-after-free
    # checks does not look like growth; leaks are LeakSanitizer's, at exit.
    denv = dict(os.environ)
    denv.setdefault("ASAN_OPTIONS", "quarantine_size_mb=4")
    d = daemon.PrivateDaemon(["--max-clients", "1024"], binary=args.scafd, env=denv, prefix="scaf-soak-")
    failures: list[str] = []
    try:
        d.start()
        time.sleep(1.5)  # the lookout's first samples, so the baseline is the serving daemon's
        base_fds, base_rss = nfds(d.pid), rss_kb(d.pid)
        env = dict(os.environ, LD_PRELOAD=str(paths.layer()), SCAF_SOCKET=d.socket, OMP_NUM_THREADS="2")
        print(f"soak: {args.scafd}, waves of {args.wave} clients for {args.seconds:.0f} s; "
              f"baseline {base_fds} fds, RSS {base_rss} kB", flush=True)
        t0 = time.monotonic()
        rss_after: list[int] = []
        totals = {"started": 0, "killed": 0, "registered": 0}
        while time.monotonic() - t0 < args.seconds:
            w = wave(d, args.wave, rng, env)
            totals["started"] += w["started"]
            totals["killed"] += w["killed"]
            totals["registered"] += w["registered"]
            rss_after.append(rss_kb(d.pid))
            print(f"soak: wave {len(rss_after)} at {time.monotonic() - t0:.0f} s: {w['started']} started, "
                  f"{w['registered']} seen as clients, {w['peak_clients']} at once, {w['killed']} SIGKILLed; RSS {rss_after[-1]} kB, "
                  f"{nfds(d.pid)} fds", flush=True)
            if not d.alive():
                failures.append("the daemon died")
                break
        deadline = time.monotonic() + 30
        while d.alive() and nclients(d) and time.monotonic() < deadline:
            time.sleep(0.2)
        left = nclients(d) if d.alive() else -1
        deadline = time.monotonic() + 10
        while d.alive() and nfds(d.pid) > base_fds and time.monotonic() < deadline:
            time.sleep(0.2)
        end_fds, end_rss = nfds(d.pid), rss_kb(d.pid)
        print(f"soak: {len(rss_after)} waves, {totals['started']} clients started, {totals['registered']} seen "
              f"as clients, {totals['killed']} SIGKILLed, "
              f"in {time.monotonic() - t0:.0f} s", flush=True)
        print(f"soak: after: {left} clients, {end_fds} fds (baseline {base_fds}), RSS {end_rss} kB "
              f"(baseline {base_rss} kB, after wave 1 {rss_after[0] if rss_after else 0} kB, "
              f"peak after a wave {max(rss_after, default=0)} kB)", flush=True)
        if left != 0:
            failures.append(f"{left} clients left")
        if end_fds > base_fds:
            failures.append(f"{end_fds - base_fds} descriptors leaked")
        # Bounded: no growth wave after wave beyond the first wave's footprint (allocator and ASan
        # quarantine reach their working size in the first wave).
        if rss_after and end_rss > rss_after[0] * 3 // 2 + 32 * 1024:
            failures.append(f"RSS grew from {rss_after[0]} kB after wave 1 to {end_rss} kB")
        code = d.stop()
        if code != 0:
            failures.append(f"the daemon exited {code} on SIGTERM")
        log = d.stderr()
        for marker in SANITIZER_MARKERS:
            if marker in log:
                failures.append(f"sanitizer report ({marker}) in the daemon's stderr")
    except proto.DaemonUnavailable as e:
        failures.append(f"the daemon stopped answering: {e}")
    finally:
        d.cleanup()
    for f in failures:
        print(f"soak: FAILED: {f}", file=sys.stderr)
    if not failures:
        print("soak: passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
