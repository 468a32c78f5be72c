"""The simulator's prediction of each 16-CPU pair from the programs' solo runs, beside the measurement.

Reads the raw logs that stood under docs/results until commit 3a4be15 (`git show`; docs/results.md, "Raw
logs"): each program's solo wall seconds at 1/4/8/16 threads (the first loan's probe-scaling.txt) and the
third loan's pair tables (run1 and run4 pairs.txt, the latest figure of each pair and configuration, as
docs/results.md's "16-CPU device runs" table quotes them). A pair whose programs both have a solo curve becomes
a scenario: a machine of 16 contexts, each program its one-thread time as its work and its measured speedups as
a `points` curve, fixed by evidence (run1-verdicts.txt: both workloads number threads without
omp_get_num_threads), both started at once as device_pairs.sh starts them. Then

- static 8+8: the `static` configuration (OMP_NUM_THREADS = 8 each);
- scaf cold: scafd's default policy (speedup) through the daemon's decide stage, memory cold;
- scaf warm: the same with `memory = "warm"` (the run after one that taught the daemon its verdict).

The prediction is the summed finish times, the figure the pair tables give. A pair without a solo curve for one
of its programs says so instead of a prediction: no solo time on 16 CPUs was ever measured for it.

    build/venv/bin/python tools/experiments/calibrate_sim.py [--commit 3a4be15] [--json]

Exit status: 0 when every predicted pair is within --tolerance (default 0.10) of its measurement, 1 when one is
not, 2 when the raw logs cannot be read.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "python"))

from scaf.lib.sim import engine, scenario

COMMIT = "3a4be15"
SCALING = "docs/results/device-16core/probe-scaling.txt"
PAIRS = ("docs/results/device-16core-3/run1-pairs.txt", "docs/results/device-16core-3/run4-pairs.txt")
CONTEXTS = 16
# (table column, simulator configuration, memory of both programs)
CONFIGS = (("static", "static", "cold"), ("cold", "speedup", "cold"), ("warm", "speedup", "warm"))
SOLO_RE = re.compile(r"^(\w+) alone scale1 T=(\d+): ([0-9.]+)$")


class RawError(RuntimeError):
    """The raw logs are not there to read."""


@dataclass
class Row:
    pair: str
    config: str
    measured: float | None
    predicted: float | None
    note: str = ""

    @property
    def error(self) -> float | None:
        if self.measured is None or self.predicted is None:
            return None
        return self.predicted / self.measured - 1.0


def git_show(commit: str, path: str) -> str:
    try:
        r = subprocess.run(["git", "-C", str(ROOT), "show", f"{commit}:{path}"], capture_output=True, text=True,
                           timeout=60, check=False)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise RawError(f"git show {commit}:{path}: {e}") from e
    if r.returncode != 0:
        raise RawError(f"git show {commit}:{path}: {r.stderr.strip() or 'failed'}")
    return r.stdout


def solo_curves(text: str) -> dict[str, dict[int, float]]:
    """program -> {threads: wall seconds alone}."""
    out: dict[str, dict[int, float]] = {}
    for line in text.splitlines():
        m = SOLO_RE.match(line.strip())
        if m:
            out.setdefault(m.group(1), {})[int(m.group(2))] = float(m.group(3))
    return out


def pair_tables(texts: list[str]) -> dict[str, dict[str, float]]:
    """pair -> {column: summed seconds}; a later table's figure replaces an earlier one's, as the results page
    quotes the latest run of each pair."""
    out: dict[str, dict[str, float]] = {}
    for text in texts:
        header: list[str] = []
        for line in text.splitlines():
            cells = line.split()
            if cells[:1] == ["pair"]:
                header = cells
            elif header and len(cells) == len(header) and "+" in cells[0]:
                row = out.setdefault(cells[0], {})
                for col, cell in zip(header[1:], cells[1:]):
                    if re.fullmatch(r"[0-9.]+", cell):
                        row[col] = float(cell)
    return out


def pair_scenario(pair: str, solo: dict[str, dict[int, float]], memory: str) -> scenario.Scenario:
    progs = []
    for i, name in enumerate(pair.split("+")):
        times = solo[name]
        t1 = times[1]
        points = ", ".join(f"[{p}, {t1 / t:.6f}]" for p, t in sorted(times.items()) if p > 1)
        progs.append(f"""
[[program]]
name = "{name}.{i + 1}"
work_s = {t1}
team = "fixed"
memory = "{memory}"
region_s = 0.05
curve = {{ kind = "points", points = [{points}] }}
""")
    text = f"""
[scenario]
name = "calibrate-{pair.replace('+', '-')}"
description = "{pair} on 16 CPUs, from the programs' solo runs"
source = "tools/experiments/calibrate_sim.py: solo wall seconds of {COMMIT}:{SCALING}"
seed = 1

[machine]
contexts = {CONTEXTS}
smt = 1
rate_hz = 4
""" + "".join(progs)
    return scenario.parse(text, file=f"<calibrate {pair}>")


def predict(sc: scenario.Scenario, config: str) -> float | None:
    res = engine.simulate(sc, config, record=False)
    ends = [p.finish_s for p in res.programs]
    if any(e is None for e in ends):
        return None
    return sum(e for e in ends if e is not None)


def rows(commit: str) -> list[Row]:
    solo = solo_curves(git_show(commit, SCALING))
    measured = pair_tables([git_show(commit, p) for p in PAIRS])
    out: list[Row] = []
    for pair, cols in measured.items():
        missing = sorted({n for n in pair.split("+") if n not in solo or 1 not in solo[n]})
        for col, config, memory in CONFIGS:
            m = cols.get(col)
            if missing:
                out.append(Row(pair, col, m, None, f"no solo curve of {', '.join(missing)} on 16 CPUs was measured"))
                continue
            p = predict(pair_scenario(pair, solo, memory), config)
            out.append(Row(pair, col, m, p, "" if p is not None else "did not finish in the simulator"))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--commit", default=COMMIT, help="the commit whose docs/results holds the raw logs")
    ap.add_argument("--tolerance", type=float, default=0.10, help="the largest |error| that passes")
    ap.add_argument("--json", action="store_true", help="print the rows as JSON")
    a = ap.parse_args(argv)
    try:
        table = rows(a.commit)
    except (RawError, scenario.ScenarioError) as e:
        print(f"calibrate_sim: {e}", file=sys.stderr)
        return 2
    if a.json:
        print(json.dumps([{"pair": r.pair, "config": r.config, "measured": r.measured, "predicted": r.predicted,
                           "error": r.error, "note": r.note} for r in table], indent=1))
    else:
        print("| pair | config | measured (s) | predicted (s) | error | note |")
        print("| --- | --- | --- | --- | --- | --- |")
        for r in table:
            m = f"{r.measured:.2f}" if r.measured is not None else "-"
            p = f"{r.predicted:.2f}" if r.predicted is not None else "-"
            e = f"{100 * r.error:+.1f}%" if r.error is not None else "-"
            print(f"| {r.pair} | {r.config} | {m} | {p} | {e} | {r.note} |")
    worst = [abs(r.error) for r in table if r.error is not None]
    return 0 if worst and max(worst) <= a.tolerance else 1


if __name__ == "__main__":
    sys.exit(main())
