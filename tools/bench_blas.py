#!/usr/bin/env python3
"""Two numpy processes doing large matmuls at once, unmodified vs under scaf: a benchmark, not a test.

    build/venv/bin/python tools/bench_blas.py [--n 1500] [--iters 20] [--repeat 3] [--stagger 1]

Each repeat runs the pair twice: plain (each process's OpenBLAS takes one thread per CPU, so
the pair oversubscribes the machine two to one) and under `scaf run` with a private scafd
(default options, equipartition policy, on a temporary socket; --daemon-arg adds options). The second process starts
`--stagger` seconds after the first. Prints each process's wall time, its speedup over the
unmodified run (unmodified time / scaf time, medians over the repeats) and their sum
(Σspeedup: 2.0 means no change). The products are checked against each other as the tests do.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "python"))

from scaf.lib import daemon, paths

PROBE = ROOT / "tests" / "progs" / "blas_probe.py"
SCAF = paths.build_dir() / "bin" / "scaf"
CLEAN = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "LD_PRELOAD", "SCAF_SOCKET",
         "SCAF_DISABLE", "SCAF_BLAS")


def run_pair(n: int, iters: int, stagger: float, socket: str | None) -> list[float]:
    """Wall seconds of each of the two processes."""
    env = {k: v for k, v in os.environ.items() if k not in CLEAN}
    argv = [sys.executable, str(PROBE), str(n), str(iters)]
    if socket:
        argv = [str(SCAF), "run", "--no-start", "--socket", socket, "--", *argv]
    procs, starts = [], []
    for i in range(2):
        if i:
            time.sleep(stagger)
        starts.append(time.monotonic())
        procs.append(subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, text=True))
    times = [0.0, 0.0]
    for i, p in enumerate(procs):
        out, err = p.communicate()
        times[i] = time.monotonic() - starts[i]
        if p.returncode != 0 or "done iters=" not in out:
            sys.exit(f"process {i} failed ({p.returncode}): {err[-1000:]}")
    return times


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=1500, help="matrix order (default 1500)")
    ap.add_argument("--iters", type=int, default=20, help="products per process (default 20)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--stagger", type=float, default=1.0, help="seconds between the two starts (default 1)")
    ap.add_argument("--daemon-arg", action="append", default=[], metavar="ARG",
                    help="one more scafd argument (repeatable), e.g. --daemon-arg=--no-lookout")
    args = ap.parse_args()

    plain: list[list[float]] = []
    scaf: list[list[float]] = []
    for r in range(args.repeat):
        plain.append(run_pair(args.n, args.iters, args.stagger, None))
        with daemon.PrivateDaemon(["--policy", "equipartition", *args.daemon_arg], prefix="scaf-bb-") as d:
            scaf.append(run_pair(args.n, args.iters, args.stagger, d.socket))
        print(f"repeat {r + 1}: unmodified {plain[-1][0]:.2f} s {plain[-1][1]:.2f} s   "
              f"scaf {scaf[-1][0]:.2f} s {scaf[-1][1]:.2f} s", flush=True)
    speedups = []
    for i in range(2):
        u = statistics.median(t[i] for t in plain)
        s = statistics.median(t[i] for t in scaf)
        speedups.append(u / s)
        print(f"process {i + 1}: unmodified {u:.2f} s, scaf {s:.2f} s, speedup {u / s:.3f}X")
    print(f"sum of speedups: {sum(speedups):.3f} (2.0 = no change); {os.cpu_count()} CPUs, n={args.n}, "
          f"iters={args.iters}, repeats={args.repeat}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
