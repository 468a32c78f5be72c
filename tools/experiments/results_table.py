#!/usr/bin/env python3
"""results_table.py — Markdown tables of a `scaf bench pairs` run (or an overhead or pools run) from its results.json, for docs/results.md.

    tools/experiments/results_table.py RESULTS_DIR_OR_JSON [...] [--candidate NAME] [--baselines LIST]

For each folder (or its results.json) it prints, from the raw runs and with the bench's own arithmetic
(python/scaf/lib/bench/report.py, the code `scaf bench report` renders with):

- a line naming the commit the run measured (results.json's machine.scaf_commit), the command of every
  session that wrote it, and the machine;
- the pairs' Σspeedup per configuration (serial time / time in the pair, summed over both programs;
  medians over the repeats);
- the candidate (speedup, scaf or equipartition, as the bench picks it, or --candidate) and its warm twin
  against the best baseline of each pair (the highest Σspeedup of unmodified, omp-dynamic, static and
  partition that ran there, or of --baselines), with the factor taken within each repeat where a pair ran twice
  or more;
- for an overhead run, each variant's median ratio to plain libgomp in the same round;
- for a `scaf bench pools` run, its makespans as `scaf bench pools` printed them (python/scaf/lib/bench/pools.py;
  a pools run records no commit).

Exit status 0; 2 when an argument cannot be read as a bench's results (the reason on stderr).
"""

from __future__ import annotations

import argparse
import json
import shlex
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "python"))

from scaf.lib.bench import configs, pools, report, store

POOLS_FORMAT = "scaf-bench-pools"


def fmt(x: float | None, digits: int = 3) -> str:
    return "-" if x is None else f"{x:.{digits}f}"


def md_table(header: list[str], rows: list[list[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join("---" for _ in header) + " |"]
    return lines + ["| " + " | ".join(r) + " |" for r in rows]


def load(arg: str) -> tuple[Path, dict]:
    """The results folder named by ARG (a folder, or the results.json in one) and its results."""
    path = Path(arg)
    if path.is_file():
        if path.name != store.RESULTS:
            raise store.ResultsError(f"{path}: give a `scaf bench` output folder or its {store.RESULTS}")
        path = path.parent
    elif not path.exists():
        raise store.ResultsError(f"{path}: no such file or folder")
    try:
        return path, store.load(path)
    except store.ResultsError:
        try:
            data = json.loads((path / store.RESULTS).read_text())
        except (OSError, ValueError):
            data = None
        if isinstance(data, dict) and data.get("format") == POOLS_FORMAT and isinstance(data.get("runs"), list):
            return path, data
        raise


def provenance(data: dict) -> list[str]:
    """Commit, command and machine of a run, as docs/results.md names them."""
    m = data.get("machine", {})
    sessions = data.get("sessions", [])
    commits = list(dict.fromkeys(str(s.get("machine", {}).get("scaf_commit") or "?") for s in sessions))
    if not commits:
        commits = [str(m.get("scaf_commit") or "?")]
    commands = list(dict.fromkeys("scaf " + shlex.join(s.get("argv", [])) for s in sessions))
    t = m.get("topology", {})
    machine = f"{m.get('cpu_model', '?')}, {t.get('logical_cpus', '?')} logical CPUs, {m.get('kernel', '?')}"
    params = ", ".join(f"{k}={v}" for k, v in data.get("params", {}).items() if k != "programs")
    lines = [f"- commit: {', '.join(commits)}"]
    lines += [f"- command: `{c}`" for c in commands]
    lines += [f"- machine: {machine}", f"- {len(data['runs'])} runs; {params}"]
    return lines


def total_cell(e: report.PairEntry | None) -> str:
    if e is None:
        return "-"
    if e.total is not None:
        return f"{e.total:.2f}"
    return "FAILED" if e.ok_runs == 0 else "n/a"


def pair_tables(runs: list[dict], wanted: str | None, baselines: list[str] | None = None) -> list[str]:
    serial = report.serial_times(runs)
    entries = report.pair_entries(runs, serial)
    if not entries:
        return []
    order = report.config_order(runs)
    out = ["Σspeedup per pair and configuration (medians over the repeats):", ""]
    out += md_table(["pair", *order], [[f"{a}+{b}", *(total_cell(entries[(a, b)].get(c)) for c in order)]
                                       for a, b in sorted(entries)])
    failures = report.collect_failures(runs, serial)
    if failures:
        out += ["", f"{len(failures)} failed program run(s) are left out (`scaf bench report` lists them)."]
    cand = configs.candidate(order, wanted)
    best_names = report.best_of(order, cand) if cand else []
    if cand and baselines is not None:
        best_names = [b for b in baselines if b in order and b != cand]
    if cand is None or not best_names:
        return [*out, ""]
    twin = configs.warm_of(cand)
    warm = twin if twin in order else None
    versus = report.vs_best(entries, cand, best_names, warm)
    cands = [cand, *([warm] if warm else [])]
    paired = report.paired_factors(runs, serial, cands, best_names)
    repeated = any(len(fs) >= 2 for by in paired.values() for fs in by.values())

    def per_repeat(pair: tuple[str, str], c: str) -> str:
        fs = sorted(paired.get(pair, {}).get(c, []))
        if len(fs) < 2:
            return "-"
        return f"{statistics.median(fs):.3f} ({fs[0]:.3f}-{fs[-1]:.3f})"

    header = ["pair", "best baseline", "Σ best"]
    for c in cands:
        header += [f"Σ {c}", f"{c} / best"] + ([f"{c} / best, per repeat"] if repeated else [])
    header.append(f"{cand} / unmodified")
    rows = []
    for pair, v in sorted(versus.items()):
        row = [f"{pair[0]}+{pair[1]}", v.best or "-", fmt(v.best_total, 2)]
        for c, total, factor in ((cand, v.candidate_total, v.factor_best), (warm, v.warm_total, v.warm_factor_best)):
            if c is None:
                continue
            row += [fmt(total, 2), fmt(factor)] + ([per_repeat(pair, c)] if repeated else [])
        row.append(fmt(v.factor_unmodified))
        rows.append(row)
    gm = ["geometric mean", "", ""]
    for c, attr in ((cand, "factor_best"), (warm, "warm_factor_best")):
        if c is None:
            continue
        xs = [getattr(v, attr) for v in versus.values() if getattr(v, attr) is not None]
        gm += ["", fmt(report.geomean(xs))] + ([""] if repeated else [])
    gm.append(fmt(report.geomean([v.factor_unmodified for v in versus.values() if v.factor_unmodified])))
    rows.append(gm)
    out += ["", (f"{' and '.join(cands)} against the best of {', '.join(best_names)} in each pair "
                 "(factor = Σ / Σ best; per repeat: median and range of the factor taken within each repeat):"), ""]
    return [*out, *md_table(header, rows), ""]


def overhead_table(runs: list[dict]) -> list[str]:
    rows = report.overhead_rows(runs)
    if not rows:
        return []
    out = ["Per-region overhead: median time, and the median over rounds of time / plain time of that round:", ""]
    out += md_table(["variant", "rounds", "median time (s)", "ratio to plain", "failed"],
                    [[r["variant"], str(r["rounds"]), fmt(r["median_time_s"]), fmt(r["median_ratio"], 4),
                      str(r["failed"])] for r in rows])
    return [*out, ""]


def pools_tables(directory: Path, data: dict) -> list[str]:
    argv = data.get("argv", [])
    head = [f"### {directory.resolve().name}", "", "- commit: not recorded (a pools run records none)",
            f"- command: `scaf {shlex.join(argv[1:])}`", f"- machine: {data.get('cpus', '?')} CPUs",
            (f"- {len(data['runs'])} runs; {data.get('task')} tasks {data.get('sizes')} over {data.get('workers')} "
             f"workers, {data.get('rounds')} rounds; load average at start {data.get('load')}"), ""]
    table = [line for line in pools.render(pools.summarize(data["runs"], data.get("cpus", 0)), data).splitlines() if line.startswith("|")]
    return [*head, "Makespans, medians (scaf / this: scaf's makespan over this configuration's):", "", *table, ""]


def tables(directory: Path, data: dict, wanted: str | None, baselines: list[str] | None = None) -> list[str]:
    if data.get("format") == POOLS_FORMAT:
        return pools_tables(directory, data)
    runs = data["runs"]
    body = pair_tables(runs, wanted, baselines) + overhead_table(runs)
    if not body:
        raise store.ResultsError(f"{directory}: no pair or overhead runs to tabulate")
    return [f"### {directory.resolve().name}", "", *provenance(data), "", *body]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="results_table.py", description=__doc__.split("\n\n")[0].split(" — ", 1)[1])
    ap.add_argument("results", nargs="+", metavar="RESULTS_DIR_OR_JSON",
                    help="a `scaf bench pairs`, `overhead` or `pools` output folder, or its results.json")
    ap.add_argument("--candidate", metavar="NAME",
                    help="the configuration set against the baselines (default: as `scaf bench report` picks it)")
    ap.add_argument("--baselines", metavar="LIST",
                    help="comma-separated baselines to take the best of (default: unmodified, omp-dynamic, static "
                         "and partition, those that ran)")
    args = ap.parse_args(argv)
    out: list[str] = []
    for arg in args.results:
        try:
            directory, data = load(arg)
            out += tables(directory, data, args.candidate, args.baselines.split(",") if args.baselines else None)
        except store.ResultsError as e:
            print(f"results_table.py: {e}", file=sys.stderr)
            return 2
    sys.stdout.write("\n".join(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
