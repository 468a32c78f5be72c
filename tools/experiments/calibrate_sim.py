"""The simulator's prediction of each 16-CPU pair from the programs' solo runs, beside the measurement.

Reads the raw logs that stood under docs/results until commit 3a4be15 (`git show`; docs/results.md, "Raw
logs"). The solo curves, each program's wall seconds alone at 1/4/8/16 threads, are the first loan's
(device-16core/probe-scaling.txt, 2026-11-26); only xgbhist and dtgroup have one. The pairs come from two
loans:

- the first loan's (2026-11-26, device-16core.md "Probe 1" and "Probe 2"): the same machine as the solo curves.
  MAKESPAN of the pair, both at size x1: xgbhist static 8+8, scaf cold and scaf warm (probe-scaling.txt);
  dtgroup static 8+8, plain (both at 16 threads, unmodified), OMP_DYNAMIC and scaf after `scaf check`
  (probe-pairs.txt);
- the third loan's (2026-11-27, device-16core-3/run1-pairs.txt and run4-pairs.txt, the latest figure of each
  pair and configuration, as docs/results.md's "16-CPU device runs" table quotes them): SUMMED seconds of the
  two programs, on other machines than the solo curves' (runs 1 and 4 were on two different VMs).

The loans are different VMs, and the same configuration of the same pair ran differently on them: dtgroup x1
static 8+8 had a makespan of 4.83 s on the first loan (probe-pairs.txt; 4.52 s alone at 8 threads there) but
each program took 5.43-5.50 s on the third (run1-each.txt). A cross-machine row's error mixes the model's error
with the machines' difference, so those rows are printed and reported but do not decide the exit status. A
same-machine row outside the tolerance is printed as it is and fails: nothing here is fitted to a row it is then
compared with (the plain row's note says what k its measurement alone would need; that k predicts nothing).

A pair whose programs both have a solo curve becomes a scenario: a machine of 16 contexts, each program its
one-thread time as its work and its measured speedups as a `points` curve, fixed by evidence
(run1-verdicts.txt: both workloads number threads without omp_get_num_threads), both started at once as
device_pairs.sh starts them. Then

- static 8+8: the `static` configuration (OMP_NUM_THREADS = 8 each);
- plain: the `unmodified` configuration (each its 16 threads, time-sliced);
- scaf cold: scafd's default policy (speedup) through the daemon's decide stage, memory cold;
- scaf warm: the same with `memory = "warm"` (the run after one that taught the daemon its verdict).

The prediction is the simulator's figure of the same kind as the measurement: the later finish for a makespan, the
summed finish times for a sum. Beside its error, each row's error over static: the error on its ratio to the same
pair's static row, what the configuration changes without what two programs side by side cost each other on that
machine (the model leaves that out; the exit status is still the absolute error). Rows with no prediction say why:
a program never timed alone on 16 CPUs, OMP_DYNAMIC (no such configuration in the simulator), and dtgroup after
`scaf check` (malleable by check, not the fixed-by-evidence model; and the daemon's log shows both started beside
foreign load it counted as 13.8 CPUs, from a dtgroup not under scaf). The first loan's other lines (size x3,
spin-count variants, single programs) are listed as not compared, with the reason.

    build/venv/bin/python tools/experiments/calibrate_sim.py [--commit 3a4be15] [--tolerance 0.10] [--json]

A new loan's figures instead (`--from DIR`): DIR holds what one session of a lent machine wrote, the solo curves
of tools/experiments/device_curves.sh (scaling.txt) and the pairs of device_pairs.sh (pairs.txt, its table of
summed seconds; verdicts.txt, the layer's verdict of each program, which makes a program fixed in its scenario
when the layer kept its team fixed, malleable otherwise), both run by device_session.sh with CURVES set, so on one
machine: every pair whose programs both have a curve is judged, plain, static, scaf cold and scaf warm.

    build/venv/bin/python tools/experiments/calibrate_sim.py --from DIR

Exit status: 0 when every same-machine row with a simulator configuration has a prediction within --tolerance
(default 0.10) of its measurement, 1 when one does not (or lacks its figure), 2 when the raw logs cannot be read.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "python"))

from scaf.lib.sim import engine, scenario

COMMIT = "3a4be15"
SCALING = "docs/results/device-16core/probe-scaling.txt"
PROBE_PAIRS = "docs/results/device-16core/probe-pairs.txt"
PAIRS = ("docs/results/device-16core-3/run1-pairs.txt", "docs/results/device-16core-3/run4-pairs.txt")
FIRST = "first (2026-11-26)"
THIRD = "third (2026-11-27), {run}"
SAME = "from the same machine"
OTHER = "from another loan's machine"
NONE = "none was measured"
CONTEXTS = 16
# Third loan: (table column, simulator configuration, memory of both programs)
CONFIGS = (("static", "static", "cold"), ("cold", "speedup", "cold"), ("warm", "speedup", "warm"))
CHECKED = ("malleable by scaf check's word, not the fixed-by-evidence model the simulator runs here; and "
           "probe-pairs-daemon.log has both start beside foreign load it counted as 13.8 CPUs (a dtgroup not "
           "under scaf): start teams 2 and 1")
DYNAMIC = "OMP_DYNAMIC: the simulator has no such configuration"
# First loan: (pair, column, log, the line's label, simulator configuration, memory, or None and why not)
FIRST_ROWS = (
    ("xgbhist+xgbhist", "static", SCALING, "xgbhist pair 8+8 makespan", "static", "cold"),
    ("xgbhist+xgbhist", "cold", SCALING, "xgbhist pair scaf cold makespan", "speedup", "cold"),
    ("xgbhist+xgbhist", "warm", SCALING, "xgbhist pair scaf warm makespan", "speedup", "warm"),
    ("dtgroup+dtgroup", "static", PROBE_PAIRS, "dtgroup static", "static", "cold"),
    ("dtgroup+dtgroup", "plain", PROBE_PAIRS, "dtgroup plain", "unmodified", "cold"),
    ("dtgroup+dtgroup", "dynamic", PROBE_PAIRS, "dtgroup dynamic", None, DYNAMIC),
    ("dtgroup+dtgroup", "checked", PROBE_PAIRS, "dtgroup scaf checked", None, CHECKED),
)
# The first loan's lines that are no row above, and why not, from what device-16core.md says of each where it
# does: listed so that no figure of that loan goes unaccounted for.
NOT_COMPARED = {
    "xgbhist s3 static": "size x3: no solo curve at x3 was measured",
    "xgbhist s3 warm": "size x3: no solo curve at x3 was measured; device-16core.md calls these not comparable "
                       "(started with 3 and 2 of 16 beside foreign load the lookout still counted)",
    "prime xgbhist": "a priming run; device-16core.md gives no figure for it",
    "xgbhist alone T=8 spin10000": "one program alone, not a pair",
    "xgbhist alone scaf warm T=?": "one program alone, not a pair",
    "xgbhist pair 8+8 spin10000 makespan": "static 8+8 with GOMP_SPINCOUNT=10000; the simulator has no spin count",
    "xgbhist pair scaf warm default-spin makespan": "scaf warm with libgomp's default spin count; the simulator "
                                                    "has no spin count",
}
SOLO_RE = re.compile(r"^(\w+) alone scale1 T=(\d+): ([0-9.]+)$")
LABELLED_RE = re.compile(r"^(.*?)\s*:\s*([0-9]+(?:\.[0-9]+)?)$")


class RawError(RuntimeError):
    """The raw logs are not there to read."""


@dataclass
class Row:
    loan: str
    solo: str  # SAME, OTHER or NONE
    pair: str
    config: str
    figure: str  # "makespan" or "sum"
    measured: float | None
    predicted: float | None
    note: str = ""
    source: str = ""  # the raw log the measurement came from
    sim_config: str | None = None
    error_over_static: float | None = None  # over_static

    @property
    def error(self) -> float | None:
        if self.measured is None or self.predicted is None:
            return None
        return self.predicted / self.measured - 1.0

    @property
    def judged(self) -> bool:
        """Whether this row decides the exit status: a cross-machine error says as much about the two machines
        as about the model."""
        return self.solo == SAME and self.sim_config is not None


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


def labelled(text: str) -> dict[str, list[float]]:
    """The probes' `label: seconds` lines, label -> every figure in order (a label may repeat: the x3 rounds)."""
    out: dict[str, list[float]] = {}
    for line in text.splitlines():
        line = line.strip()
        m = LABELLED_RE.match(line)
        if m and not SOLO_RE.match(line):
            out.setdefault(m.group(1), []).append(float(m.group(2)))
    return out


def pair_tables(texts: list[tuple[str, str]]) -> dict[str, dict[str, tuple[float, str]]]:
    """(path, text) of each table -> pair -> {column: (summed seconds, path)}; a later table's figure replaces an
    earlier one's, as the results page quotes the latest run of each pair."""
    out: dict[str, dict[str, tuple[float, str]]] = {}
    for path, text in texts:
        header: list[str] = []
        for line in text.splitlines():
            cells = line.split()
            if cells[:1] == ["pair"]:
                header = cells
            elif header and len(cells) == len(header) and "+" in cells[0]:
                row = out.setdefault(cells[0], {})
                for col, cell in zip(header[1:], cells[1:]):
                    if re.fullmatch(r"[0-9.]+", cell):
                        row[col] = (float(cell), path)
    return out


def pair_scenario(pair: str, solo: dict[str, dict[int, float]], memory: str, commit: str = COMMIT,
                  teams: dict[str, str] | None = None, source: str = "",
                  contexts: int = CONTEXTS) -> scenario.Scenario:
    """The pair as a scenario of `contexts` contexts from its programs' solo curves; teams: each program's team kind
    (the layer's verdict), "fixed" where not given (the first and third loans' workloads, run1-verdicts.txt)."""
    progs = []
    for i, name in enumerate(pair.split("+")):
        times = solo[name]
        t1 = times[1]
        points = ", ".join(f"[{p}, {t1 / t:.6f}]" for p, t in sorted(times.items()) if 1 < p <= contexts)
        team = (teams or {}).get(name, "fixed")
        progs.append(f"""
[[program]]
name = "{name}.{i + 1}"
work_s = {t1}
team = "{team}"
memory = "{memory}"
region_s = 0.05
curve = {{ kind = "points", points = [{points}] }}
""")
    text = f"""
[scenario]
name = "calibrate-{pair.replace('+', '-')}"
description = "{pair} on {contexts} CPUs, from the programs' solo runs"
source = "tools/experiments/calibrate_sim.py: solo wall seconds of {source or f'{commit}:{SCALING}'}"
seed = 1

[machine]
contexts = {contexts}
smt = 1
rate_hz = 4
""" + "".join(progs)
    return scenario.parse(text, file=f"<calibrate {pair}>")


def predict(sc: scenario.Scenario, config: str, figure: str) -> float | None:
    res = engine.simulate(sc, config, record=False)
    ends = [p.finish_s for p in res.programs]
    if any(e is None for e in ends):
        return None
    done = [e for e in ends if e is not None]
    return max(done) if figure == "makespan" else sum(done)


def missing_solo(pair: str, solo: dict[str, dict[int, float]]) -> list[str]:
    return sorted({n for n in pair.split("+") if n not in solo or 1 not in solo[n]})


def implied_k(row: Row, solo: dict[str, dict[int, float]], contexts: int = CONTEXTS) -> str:
    """For plain two copies of one program: the k the measurement alone would need. In the model each of the
    2N threads gets half a context, so each copy runs at S(N/2) / (1 + k) and takes t(N/2) (1 + k): the pair's
    makespan that, its sum twice that. Said beside the row, never used to predict it (nor can a solo run past
    the machine stand in for it: on the 2-vCPU VM one copy at 4 threads lost 2-41% to its 2-thread time where
    the same programs' plain pairs needed k = 1.22-3.40, docs/simulator.md)."""
    names = row.pair.split("+")
    half = solo.get(names[0], {}).get(contexts // 2)
    if row.sim_config != "unmodified" or len(set(names)) != 1 or row.measured is None or half is None:
        return ""
    each = row.measured / 2 if row.figure == "sum" else row.measured
    return (f"the measurement alone would need k = {each / half - 1.0:.2f} (t{contexts // 2} (1 + k) = "
            f"{each:.2f} s) where the model's oversub_slowdown is {scenario.DEFAULT_OVERSUB_SLOWDOWN:.2f}")


def first_loan_rows(commit: str, solo: dict[str, dict[int, float]]) -> tuple[list[Row], list[dict]]:
    logs = {path: labelled(git_show(commit, path)) for path in (SCALING, PROBE_PAIRS)}
    out: list[Row] = []
    used: set[tuple[str, str]] = set()
    for pair, col, path, label, sim, memory in FIRST_ROWS:
        used.add((path, label))
        found = logs[path].get(label, [])
        row = Row(FIRST, SAME, pair, col, "makespan", found[0] if len(found) == 1 else None, None,
                  source=f"{commit}:{path}", sim_config=sim)
        if len(found) != 1:
            row.note = f"{len(found)} lines '{label}: ...' in {path}, not one"
        elif sim is None:
            row.note = memory
        elif missing := missing_solo(pair, solo):
            row.note = f"no solo curve of {', '.join(missing)} on 16 CPUs was measured"
        else:
            row.predicted = predict(pair_scenario(pair, solo, memory, commit), sim, "makespan")
            row.note = implied_k(row, solo) if row.predicted is not None else "did not finish in the simulator"
        out.append(row)
    skipped = [{"source": f"{commit}:{path}", "line": label, "seconds": figures,
                "why": NOT_COMPARED.get(label, "a line device-16core.md does not tabulate")}
               for path, lines in logs.items() for label, figures in lines.items() if (path, label) not in used]
    return out, skipped


def third_loan_rows(commit: str, solo: dict[str, dict[int, float]]) -> list[Row]:
    measured = pair_tables([(p, git_show(commit, p)) for p in PAIRS])
    out: list[Row] = []
    for pair, cols in measured.items():
        missing = missing_solo(pair, solo)
        for col, config, memory in CONFIGS:
            m, path = cols.get(col, (None, ""))
            run = re.search(r"run\d+", path)
            row = Row(THIRD.format(run=run.group(0).replace("run", "run ") if run else "?"), NONE if missing else
                      OTHER, pair, col, "sum", m, None, source=f"{commit}:{path}" if path else "", sim_config=config)
            if m is None:
                row.note = f"no {col} figure in {', '.join(PAIRS)}"
            elif missing:
                row.note = f"no solo curve of {', '.join(missing)} on 16 CPUs was measured"
            else:
                row.predicted = predict(pair_scenario(pair, solo, memory, commit), config, "sum")
                if row.predicted is None:
                    row.note = "did not finish in the simulator"
            out.append(row)
    return out


# A new loan (--from DIR): (table column, simulator configuration, memory of both programs).
FROM_CONFIGS = (("plain", "unmodified", "cold"), *CONFIGS)
VERDICT_RE = re.compile(r"^\s*\d+\s+(\S+)\s+(fixed|malleable):")


def verdicts(text: str) -> dict[str, str]:
    """device_pairs.sh's verdicts.txt -> program -> "fixed" or "malleable": a workload by its file's name, a Python
    program as `xgboost` (the corpus's XGBoost script, the only Python program the device scripts run); fixed where
    any of its runs was kept fixed."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        m = VERDICT_RE.match(line)
        if not m:
            continue
        exe = m.group(1).rsplit("/", 1)[-1]
        name = "xgboost" if exe.startswith("python") else exe
        out[name] = "fixed" if m.group(2) == "fixed" or out.get(name) == "fixed" else "malleable"
    return out


def read_dir(d: Path, name: str, required: bool = True) -> str:
    try:
        return (d / name).read_text()
    except OSError as e:
        if not required:
            return ""
        raise RawError(f"{d / name}: {e.strerror or e}") from e


def from_rows(d: Path) -> list[Row]:
    """One session's curves and pairs (--from DIR): every row of one machine."""
    solo = solo_curves(read_dir(d, "scaling.txt"))
    teams = verdicts(read_dir(d, "verdicts.txt", required=False))
    table = read_dir(d, "pairs.txt")
    measured = pair_tables([("pairs.txt", table)])
    # device_pairs.sh's first line names the machine: a session on another size is judged at its own size.
    machine = re.search(r"^machine: (\d+) CPUs", table, re.MULTILINE)
    contexts = int(machine.group(1)) if machine else CONTEXTS
    loan = f"{d.name} (--from)"
    out: list[Row] = []
    for pair, cols in measured.items():
        missing = missing_solo(pair, solo)
        for col, config, memory in FROM_CONFIGS:
            if col not in cols:
                continue  # a configuration the session did not run (or a run that failed: no figure to judge)
            m = cols[col][0]
            row = Row(loan, NONE if missing else SAME, pair, col, "sum", m, None, source=str(d / "pairs.txt"),
                      sim_config=config)
            if missing:
                row.note = f"no solo curve of {', '.join(missing)} in scaling.txt"
            else:
                unknown = sorted({n for n in pair.split("+") if n not in teams})
                sc = pair_scenario(pair, solo, memory, teams={n: teams.get(n, "malleable") for n in pair.split("+")},
                                   source=str(d / "scaling.txt"), contexts=contexts)
                row.predicted = predict(sc, config, "sum")
                row.note = "did not finish in the simulator" if row.predicted is None else "; ".join(filter(None, (
                    f"no verdict of {', '.join(unknown)} in verdicts.txt: malleable assumed" if unknown else "",
                    implied_k(row, solo, contexts))))
            out.append(row)
    return out


def rows(commit: str) -> tuple[list[Row], list[dict]]:
    solo = solo_curves(git_show(commit, SCALING))
    first, skipped = first_loan_rows(commit, solo)
    return first + third_loan_rows(commit, solo), skipped


def over_static(table: list[Row]) -> None:
    """Each row's error on its ratio to the same loan's static row of the same pair: what the configuration
    changes, without what the machine does to any two programs side by side (on the 2-vCPU VM, each of two
    one-thread programs ran 12-28% slower than alone, which every row of a pair shares and no solo curve shows).
    Said beside the absolute error, never instead of it."""
    static = {(r.loan, r.pair): r for r in table if r.config == "static"}
    for r in table:
        s = static.get((r.loan, r.pair))
        if s is None or s is r or None in (r.measured, r.predicted, s.measured, s.predicted):
            continue
        assert r.measured and r.predicted and s.measured and s.predicted
        r.error_over_static = (r.predicted / s.predicted) / (r.measured / s.measured) - 1.0


def verdict(table: list[Row], tolerance: float) -> int:
    """0 when every judged row is within tolerance; a judged row without an error (its figure missing, or the
    simulation unfinished) fails too, since nothing was checked."""
    judged = [r for r in table if r.judged]
    if not judged:
        return 1
    return 0 if all(r.error is not None and abs(r.error) <= tolerance for r in judged) else 1


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--commit", default=COMMIT, help="the commit whose docs/results holds the raw logs")
    ap.add_argument("--tolerance", type=float, default=0.10, help="the largest |error| that passes")
    ap.add_argument("--json", action="store_true", help="print the rows as JSON")
    ap.add_argument("--from", dest="src", type=Path, metavar="DIR",
                    help="a new loan's scaling.txt, pairs.txt and verdicts.txt (device_session.sh with CURVES) "
                         "instead of the old loans' raw logs")
    a = ap.parse_args(argv)
    try:
        table, skipped = (from_rows(a.src), []) if a.src else rows(a.commit)
    except (RawError, scenario.ScenarioError) as e:
        print(f"calibrate_sim: {e}", file=sys.stderr)
        return 2
    over_static(table)
    status = verdict(table, a.tolerance)
    if a.json:
        print(json.dumps({"rows": [{**asdict(r), "same_machine": r.solo == SAME, "error": r.error,
                                    "judged": r.judged} for r in table],
                          "not_compared": skipped, "tolerance": a.tolerance, "status": status}, indent=1))
        return status
    print("| loan | solo curve | pair | config | figure | measured (s) | predicted (s) | error | error over static "
          "| note |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in table:
        m = f"{r.measured:.2f}" if r.measured is not None else "-"
        p = f"{r.predicted:.2f}" if r.predicted is not None else "-"
        e = f"{round(100 * r.error, 1) + 0.0:+.1f}%" if r.error is not None else "-"
        o = f"{round(100 * r.error_over_static, 1) + 0.0:+.1f}%" if r.error_over_static is not None else "-"
        print(f"| {r.loan} | {r.solo} | {r.pair} | {r.config} | {r.figure} | {m} | {p} | {e} | {o} | {r.note} |")
    judged = [r for r in table if r.judged]
    bad = [r for r in judged if r.error is None or abs(r.error) > a.tolerance]
    print(f"\nSame-machine rows (they decide the exit status): {len(judged) - len(bad)} of {len(judged)} within "
          f"{100 * a.tolerance:.0f}%" + (", not: " + "; ".join(
              f"{r.pair} {r.config} " + (f"{100 * r.error:+.1f}%" if r.error is not None else "no figure")
              for r in bad) if bad else "") + ".")
    if skipped:
        print("Not compared (the first loan's other lines):")
    for s in skipped:
        print(f"- {s['line']}: {', '.join(f'{x:.2f}' for x in s['seconds'])} ({s['why']})")
    return status


if __name__ == "__main__":
    sys.exit(main())
