"""The reclaim: from an idle client's first region to its share back, read from the daemon's --log.

    build/venv/bin/python tools/experiments/reclaim.py [--rounds 10] [--idle 1.5]

A private scafd (its defaults: speedup policy, --idle-after 0.25, lookout on) with --log; a busy OpenMP
workload (spin) beside a small OpenMP program that runs regions, sleeps IDLE seconds (idle: its share goes to
the workload) and runs regions again, noting the wall-clock time of that first region's entry. Per round: the time from that print (its next
region comes microseconds later) to the first --log line that shows it busy with a share again, and that
line's share. docs/daemon.md ("Idle clients") quotes the output.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "python"))

from scaf.lib.daemon import PrivateDaemon

# The client: OpenMP regions for half a second, then IDLE seconds asleep (idle), then the wall-clock time of
# its next region's entry, printed after that region (so the print costs the region nothing).
CLIENT_C = r"""
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
static double now(clockid_t c) { struct timespec t; clock_gettime(c, &t); return t.tv_sec + t.tv_nsec / 1e9; }
static volatile double sink;
static void regions(double secs) {
    double end = now(CLOCK_MONOTONIC) + secs;
    while (now(CLOCK_MONOTONIC) < end) {
        double s = 0;
        #pragma omp parallel for reduction(+:s)
        for (int i = 0; i < 200000; i++) s += i * 0.5;
        sink = s;
    }
}
int main(int argc, char **argv) {
    int rounds = atoi(argv[1]);
    double idle = atof(argv[2]);
    regions(0.5);
    for (int r = 0; r < rounds; r++) {
        usleep((useconds_t)(idle * 1e6));
        double t = now(CLOCK_REALTIME);
        regions(0.5);
        printf("region %.6f\n", t);
        fflush(stdout);
    }
    return 0;
}
"""


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=10)
    p.add_argument("--idle", type=float, default=1.5)
    a = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp, PrivateDaemon([], log=Path(tmp) / "alloc.jsonl") as d:
        stop = os.path.join(tmp, "stop")
        src, prog = os.path.join(tmp, "idler.c"), os.path.join(tmp, "idler")
        Path(src).write_text(CLIENT_C)
        subprocess.run(["gcc", "-O2", "-fopenmp", src, "-o", prog], check=True)
        spin = subprocess.Popen([str(ROOT / "build" / "bin" / "scaf"), "run", "--no-start", "--socket", d.socket,
                                 "--", str(ROOT / "build" / "workloads" / "spin"), "--size", "A", "--until", stop],
                                stdout=subprocess.DEVNULL)
        r = subprocess.run([str(ROOT / "build" / "bin" / "scaf"), "run", "--no-start", "--socket", d.socket, "--",
                            prog, str(a.rounds), str(a.idle)], capture_output=True, text=True, check=False)
        Path(stop).touch()
        spin.wait()
        time.sleep(0.3)
        starts = [float(ln.split()[1]) for ln in r.stdout.splitlines() if ln.startswith("region ")]
        with open(d.log, encoding="utf-8") as f:
            lines = [json.loads(ln) for ln in f if ln.strip()]
    pids = {c["pid"] for ln in lines for c in ln["clients"] if c["name"] == "idler"}
    delays, shares, idle_before = [], [], 0
    for t in starts:
        before = [c for ln in lines if ln["time"] < t for c in ln["clients"] if c["pid"] in pids]
        idle_before += bool(before) and before[-1]["idle"]
        after = [(ln["time"], c) for ln in lines if ln["time"] >= t for c in ln["clients"]
                 if c["pid"] in pids and not c["idle"] and c["share"] >= 1]
        if after:
            delays.append(after[0][0] - t)
            shares.append(after[0][1]["share"])
    print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}; {len(starts)} regions after idling, "
          f"{idle_before} of them idle before it (share 0), {len(delays)} reclaimed")
    if delays:
        ms = sorted(x * 1e3 for x in delays)
        print(f"reclaim (first region -> --log line with the share back): median {statistics.median(ms):.2f} ms, "
              f"max {max(ms):.2f} ms, min {min(ms):.2f} ms; shares back {sorted(set(shares))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
