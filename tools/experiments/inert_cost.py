#!/usr/bin/env python3
"""CPU cost per parallel region with the layer preloaded and no daemon (inert), against plain libgomp.

A tiny GNU OpenMP program opens N empty regions on one thread (so that no barrier spins and the
machine's load cannot stretch a region); each variant runs it once per round, in a fixed order,
and its CPU time (user + sys, from wait4) is taken. The report is the median over rounds of
(variant CPU time - plain CPU time) / N: the nanoseconds the layer adds to each region. Give
several layers (an older build's, say) to compare them side by side. Not a test: prints a table.

    build/venv/bin/python tools/experiments/inert_cost.py [--regions 2000000] [--rounds 9] \\
        [--threaded] [--layer NAME=PATH ...]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "python"))

from scaf.lib import paths

PROG = r"""
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
static void body(volatile int *x) { (void)x; }
static void *idle(void *arg) { (void)arg; for (;;) pause(); return NULL; }
int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 1000000;
    volatile int x = 0;
    pthread_t t;
    /* A second thread, as any real parallel program has: glibc's single-thread shortcuts are off for all. */
    if (argc > 2 && atoi(argv[2]))
        pthread_create(&t, NULL, idle, NULL);
    for (long i = 0; i < n; i++) {
#pragma omp parallel num_threads(1)
        body(&x);
    }
    printf("done %ld\n", n);
    return 0;
}
"""


def cpu_time(argv: list[str], env: dict[str, str]) -> float:
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL)
    _, status, ru = os.wait4(proc.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{argv} failed with status {status}")
    return ru.ru_utime + ru.ru_stime


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--regions", type=int, default=2_000_000)
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--threaded", action="store_true",
                    help="start an idle second thread in every variant: a process that is multi-threaded anyway "
                         "(any real parallel program) pays nothing for the layer's own helper thread")
    ap.add_argument("--layer", action="append", default=[], metavar="NAME=PATH",
                    help="a layer to measure (default: this build's)")
    args = ap.parse_args()
    layers = dict(x.split("=", 1) for x in args.layer) or {"inert": str(paths.layer())}
    with tempfile.TemporaryDirectory(prefix="scaf-inert-") as d:
        src, exe = Path(d, "regions1.c"), Path(d, "regions1")
        src.write_text(PROG)
        subprocess.run(["gcc", "-O2", "-fopenmp", "-pthread", "-o", str(exe), str(src)], check=True)
        base = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
        base["SCAF_SOCKET"] = "/nonexistent/scaf-inert/none.sock"
        variants = {"plain": base, **{n: {**base, "LD_PRELOAD": p} for n, p in layers.items()}}
        times: dict[str, list[float]] = {v: [] for v in variants}
        for _ in range(args.rounds):
            for v, env in variants.items():
                times[v].append(cpu_time([str(exe), str(args.regions), str(int(args.threaded))], env))
    print(f"{args.regions} one-thread regions{' (threaded)' if args.threaded else ''}, {args.rounds} rounds; CPU time per run (median), "
          "and per region over plain (median over rounds of the same round's difference)")
    print(f"{'variant':<12}{'cpu_s':>10}{'ns/region':>12}{'added ns/region':>18}")
    for v, ts in times.items():
        added = statistics.median((t - p) / args.regions * 1e9 for t, p in zip(ts, times["plain"], strict=True))
        print(f"{v:<12}{statistics.median(ts):>10.3f}{statistics.median(ts) / args.regions * 1e9:>12.1f}"
              f"{added:>18.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
