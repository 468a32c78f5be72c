"""How long a pool's processes sit without a region and without CPU, and how long a busy program's regions stand still: the figures behind the idle rule's window.

    build/venv/bin/python tools/experiments/idle_gaps.py [--period 0.01] -- CMD ARGS...

Runs CMD under `scaf run` on a private daemon (`--idle-after 0`: nobody is made idle, so nothing changes
what is measured), samples the daemon's status every PERIOD seconds and each client's CPU time from
/proc/PID/stat, and prints per client the stretches in which its `regions` counter stood still: how many,
how long (median and longest), and the CPU they burned. A stretch that burned less than 10% of one context
is *quiet* (what the idle rule looks for); the others are serial work between regions. docs/daemon.md
("Idle clients") quotes the output.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "python"))

from scaf.lib import proto
from scaf.lib.daemon import PrivateDaemon

HZ = os.sysconf("SC_CLK_TCK")


def cpu_ticks(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return int(fields[11]) + int(fields[12])


def cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            words = f.read().split(b"\0")
    except OSError:
        return "?"
    return " ".join(w.decode(errors="replace") for w in words[:4])[:90]


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--period", type=float, default=0.01)
    p.add_argument("--show", type=float, default=0.05, help="list the stretches at least this long (seconds)")
    p.add_argument("cmd", nargs=argparse.REMAINDER)
    a = p.parse_args()
    cmd = a.cmd[1:] if a.cmd[:1] == ["--"] else a.cmd
    # pid -> [(t, regions, ticks)]
    samples: dict[int, list[tuple[float, int, int]]] = {}
    names: dict[int, str] = {}
    with PrivateDaemon(["--idle-after", "0", "--no-lookout"]) as d:
        prog = subprocess.Popen([str(ROOT / "build" / "bin" / "scaf"), "run", "--socket", d.socket, "--", *cmd],
                                stdout=subprocess.PIPE, text=True)
        t0 = time.monotonic()
        while prog.poll() is None:
            try:
                st = proto.status(d.socket)
            except (OSError, proto.DaemonUnavailable):
                st = {"clients": []}
            now = time.monotonic() - t0
            for c in st.get("clients", []):
                ticks = cpu_ticks(c["pid"])
                if ticks is None:
                    continue
                samples.setdefault(c["pid"], []).append((now, c["regions"], ticks))
                names.setdefault(c["pid"], cmdline(c["pid"]))
            time.sleep(a.period)
        out = prog.stdout.read() if prog.stdout else ""
    print(out.strip()[:300])
    for pid, s in samples.items():
        quiet: list[float] = []
        serial: list[float] = []
        shown: list[str] = []
        i = 0
        while i < len(s) - 1:
            j = i
            while j + 1 < len(s) and s[j + 1][1] == s[i][1]:
                j += 1
            if j > i:
                dt = s[j][0] - s[i][0]
                frac = (s[j][2] - s[i][2]) / HZ / dt if dt > 0 else 0.0
                (quiet if frac < 0.10 else serial).append(dt)
                if dt >= a.show:
                    shown.append(f"{s[i][0]:.2f}+{dt:.2f}s@{frac:.0%}")
            i = j + 1 if j > i else i + 1
        def fmt(v: list[float]) -> str:
            if not v:
                return "none"
            return f"{len(v)}, median {statistics.median(v) * 1e3:.0f} ms, longest {max(v) * 1e3:.0f} ms"
        last = s[-1][0] - s[0][0]
        print(f"pid {pid} ({names[pid]}), {last:.2f} s as a client, regions {s[-1][1]}")
        print(f"  quiet stretches (< 10% of a context): {fmt(quiet)}")
        print(f"  stretches with CPU (serial work): {fmt(serial)}")
        print(f"  stretches of {a.show:g} s or more (start+length@CPU): {' '.join(shown) or 'none'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
