#!/usr/bin/env python3
"""Cost of one serial experiment against heap size: fork time and the slowdown of the instance it runs in.

Runs tests/progs/bigheap (every region writes every heap page) under the layer and a private scafd,
twice per heap size and repetition, side by side: once with exactly one forced experiment (at
region 1), once with experiments off (SCAF_EXPERIMENTS=0). The slowdown is region 1's time with the
experiment over region 1's time without, from the same repetition. Not a test: prints a table.

    build/venv/bin/python tools/experiments/experiment_cost.py [--heaps 10,1024] [--reps 3] [--threads 2]
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "python"))

from scaf.lib import paths
from scaf.lib.daemon import DaemonError, PrivateDaemon


def build_bigheap() -> Path:
    src = ROOT / "tests" / "progs" / "bigheap.c"
    out = paths.build_dir() / "tests" / "progs" / "bigheap"
    if not out.exists() or out.stat().st_mtime < src.stat().st_mtime:
        out.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run([os.environ.get("CC", "cc"), "-std=c11", "-O2", "-fopenmp", "-o", str(out), str(src)],
                       check=True)
    return out


def run(prog: Path, sock: str, heap: int, threads: int, experiment: bool) -> tuple[list[int], float | None]:
    """Per-region times (ns) and the fork time (ms) the layer reported, if it forked."""
    env = dict(os.environ, LD_PRELOAD=str(paths.layer()), SCAF_SOCKET=sock, OMP_NUM_THREADS=str(threads),
               SCAF_LAZY="0", SCAF_INPLACE_MAX_MS="0", SCAF_EXPERIMENT_INTERVAL_S="3600", SCAF_VERBOSE="1",
               SCAF_EXPERIMENTS="1" if experiment else "0", SCAF_EXPERIMENT_MAX_S="60")
    r = subprocess.run([str(prog), "--heap-mib", str(heap), "--regions", "4", "--times"], env=env,
                       capture_output=True, text=True, check=True, timeout=600)
    times = [int(m.group(1)) for m in re.finditer(r"region=\d+ ns=(\d+)", r.stdout)]
    fork = re.search(r"forked in ([0-9.]+) ms", r.stderr)
    if experiment and "forked" not in r.stderr:
        raise SystemExit(f"no experiment was forked: {r.stderr}")
    return times, float(fork.group(1)) if fork else None


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--heaps", default="10,1024", help="heap sizes in MiB, comma-separated (default 10,1024)")
    ap.add_argument("--reps", type=int, default=3, help="repetitions per heap size (default 3)")
    ap.add_argument("--threads", type=int, default=2, help="OMP_NUM_THREADS (default 2)")
    args = ap.parse_args()
    prog = build_bigheap()
    d = PrivateDaemon(["--cpus", "4", "--no-lookout", "--policy", "equipartition"], capture=False, prefix="scaf-b-")
    try:
        d.start()
    except DaemonError:
        d.cleanup()
        raise SystemExit("scafd did not start") from None
    sock = d.socket
    rows = []
    try:
        for heap in (int(h) for h in args.heaps.split(",")):
            forks, with_exp, without, ratios = [], [], [], []
            for _ in range(args.reps):
                t_exp, fork = run(prog, sock, heap, args.threads, True)
                t_plain, _ = run(prog, sock, heap, args.threads, False)
                # Region 0 measures the site; region 1 is the one forked for.
                forks.append(fork or 0.0)
                with_exp.append(t_exp[1] / 1e6)
                without.append(t_plain[1] / 1e6)
                ratios.append(t_exp[1] / t_plain[1])
            rows.append((heap, statistics.median(forks), statistics.median(with_exp), statistics.median(without),
                         statistics.median(ratios)))
    finally:
        d.stop()
        d.cleanup()
    print(f"experiment cost, bigheap (every region writes every page), {args.threads} threads, "
          f"median of {args.reps}, run side by side")
    print(f"{'heap MiB':>9} {'fork ms':>9} {'inst. w/ exp ms':>16} {'inst. w/o ms':>13} {'slowdown':>9}")
    for heap, fork, we, wo, ratio in rows:
        print(f"{heap:>9} {fork:>9.2f} {we:>16.1f} {wo:>13.1f} {ratio:>8.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
