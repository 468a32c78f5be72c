"""`scaf bench report`'s output from the analysis (report.py): tables printed, CSV files, report.md, report.json and PNGs."""

from __future__ import annotations

import csv
import json
import statistics
from pathlib import Path
from typing import Any

from scaf.lib.bench import configs, machine, store
from scaf.lib.bench.report import (
    BEST,
    LOSS,
    WIN,
    PairEntry,
    VsBest,
    best_of,
    collect_failures,
    config_order,
    geomean,
    improvement,
    overhead_rows,
    pair_entries,
    paired_factors,
    resource_rows,
    serial_times,
    solo_rows,
    summary_rows,
    vs_best,
)

FILES = ("summary.csv", "pairs.csv", "improvement.csv", "best_baseline.csv", "paired.csv", "solo.csv", "overhead.csv",
         "resources.csv", "report.md", "report.json", "improvement_sorted.png", "pairs_bars.png", "solo_speedup.png")


def _fmt(x: float | None, digits: int = 3) -> str:
    return "-" if x is None else f"{x:.{digits}f}"


# ---------------------------------------------------------------- plots


def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plot_improvement(factors_by_baseline: dict[str, list[float]], candidate: str, png: Path,
                     warm: tuple[str, list[float]] | None = None) -> None:
    """The candidate's factors over each baseline, sorted; WARM (its warm twin's name and factors over the best
    baseline of each pair) as one more curve, dashed."""
    plt = _plt()
    import matplotlib.ticker
    fig, ax = plt.subplots(figsize=(8, 4.5))
    for base, factors in factors_by_baseline.items():
        fs = sorted(factors)
        if fs:
            style = {"color": "black", "linewidth": 2} if base == BEST else {}
            label = "over the best baseline of each pair" if base == BEST else f"over {base}"
            ax.plot(range(1, len(fs) + 1), fs, marker="o", markersize=3, label=label, **style)
    if warm and warm[1]:
        fs = sorted(warm[1])
        ax.plot(range(1, len(fs) + 1), fs, marker="s", markersize=3, color="black", linewidth=2, linestyle="--",
                label=f"{warm[0]} (memory warm) over the best baseline of each pair")
    ax.axhline(1.0, color="0.3", linewidth=0.8)
    ax.axhspan(LOSS, WIN, color="0.9", zorder=0, label=f"even ({LOSS}-{WIN})")
    ax.xaxis.set_major_locator(matplotlib.ticker.MaxNLocator(integer=True))
    ax.set_xlabel("pairs, sorted by improvement factor")
    ax.set_ylabel(f"Σspeedup({candidate}) / Σspeedup(baseline)" if not warm else "Σspeedup(scaf) / Σspeedup(baseline)")
    ax.set_title(f"improvement of {candidate} over each baseline" if not warm
                 else f"improvement of {candidate} (cold) and {warm[0]} (warm) over the baselines")
    ax.legend(fontsize="small")
    fig.tight_layout()
    fig.savefig(png, dpi=110)
    plt.close(fig)


def plot_pairs(entries: dict, order: list[str], png: Path) -> None:
    plt = _plt()
    import numpy as np

    pairs = sorted(entries)
    n, k = len(pairs), len(order)
    width = 0.8 / max(k, 1)
    fig, ax = plt.subplots(figsize=(min(60.0, max(8.0, 0.25 * n * k + 2)), 4.8))
    x = np.arange(n)
    for i, c in enumerate(order):
        ys = [entries[p][c].total if c in entries[p] and entries[p][c].total else 0.0 for p in pairs]
        bars = ax.bar(x + (i - (k - 1) / 2) * width, ys, width, label=c)
        for j, p in enumerate(pairs):
            if c in entries[p] and entries[p][c].total is None:
                # No usable run: mark the empty slot so that it is not read as zero speedup.
                ax.text(bars[j].get_x() + width / 2, 0.02, "✗", ha="center", va="bottom",
                        color="red", fontsize=8)
    ax.set_xticks(x, [f"{a}+{b}" for a, b in pairs], rotation=60, ha="right", fontsize="small")
    ax.set_ylabel("Σspeedup of the pair")
    ax.set_title("sum of both programs' speedups, per pair and configuration (✗: failed)")
    ax.legend(fontsize="small", ncols=min(k, 6))
    fig.tight_layout()
    fig.savefig(png, dpi=110)
    plt.close(fig)


def plot_solo(rows: list[dict], png: Path) -> None:
    plt = _plt()
    fig, ax = plt.subplots(figsize=(7, 4.5))
    workloads = sorted({r["workload"] for r in rows})
    tmax = max(r["threads"] for r in rows)
    for w in workloads:
        pts = [(r["threads"], r["speedup"]) for r in rows if r["workload"] == w and r["speedup"]]
        if pts:
            ax.plot(*zip(*pts), marker="o", label=w)
    ax.plot([1, tmax], [1, tmax], color="0.6", linestyle="--", linewidth=1, label="ideal")
    ax.set_xlabel("threads")
    ax.set_ylabel("speedup over 1 thread")
    ax.set_title("solo speedup curves")
    ax.legend(fontsize="small", ncols=2)
    fig.tight_layout()
    fig.savefig(png, dpi=110)
    plt.close(fig)


# ---------------------------------------------------------------- tables: console, CSV, Markdown, JSON


def _write_csv(path: Path, header: list[str], rows: list[list]) -> None:
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(header)
        w.writerows(rows)


def _md_table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)


def _show(console: Any, title: str, header: list[str], cells: list[list[str]], left: tuple[str, ...],
          footer: int = 0) -> None:
    """One table on the console: the columns named in `left` left-aligned, the others right-aligned;
    the last `footer` rows (totals, means) set apart by a rule."""
    from rich.table import Table

    t = Table(title=title)
    for h in header:
        t.add_column(h, justify="left" if h in left else "right")
    for i, c in enumerate(cells):
        t.add_row(*c, end_section=footer > 0 and i == len(cells) - footer - 1)
    console.print(t)


def _total_cell(e: PairEntry | None) -> str:
    if e is None:
        return "-"
    if e.total is not None:
        return f"{e.total:.2f}"
    # Runs that worked but give no speedup: no usable serial time, or a 0 s time.
    return "FAILED" if e.ok_runs == 0 else "n/a"


def _vs_best_json(v: VsBest, warm: str | None) -> dict:
    return {"best_baseline": v.best, "best_sum_speedup": v.best_total, "candidate_sum_speedup": v.candidate_total,
            "factor_vs_best": v.factor_best, "unmodified_sum_speedup": v.unmodified_total,
            "factor_vs_unmodified": v.factor_unmodified, "below_best": v.below,
            "below_unmodified": v.below_unmodified,
            "warm": None if warm is None else {
                "config": warm, "sum_speedup": v.warm_total, "factor_vs_best": v.warm_factor_best,
                "factor_vs_unmodified": v.warm_factor_unmodified, "below_best": v.warm_below}}


def _render_vs_best(console: Any, directory: Path, doc: dict, entries: dict, cand: str, best_names: list[str],
                    versus: dict[tuple[str, str], VsBest], warm: str | None = None) -> list[str]:
    """The table of the candidate (cold) and its warm twin WARM, when it ran, against each pair's best
    baseline, its CSV and JSON; returns its Markdown."""

    def mean(attr: str) -> tuple[float | None, int]:
        xs = [getattr(v, attr) for v in versus.values() if getattr(v, attr) is not None]
        return geomean(xs), len(xs)

    gm_best, n_best = mean("factor_best")
    gm_unmod, n_unmod = mean("factor_unmodified")
    gm_wbest, n_wbest = mean("warm_factor_best")
    gm_wunmod, n_wunmod = mean("warm_factor_unmodified")
    under = round((1 - LOSS) * 100)

    def flags(v: VsBest) -> str:
        out = ["BELOW"] if v.below else []
        if warm:
            out += ["WARM BELOW"] if v.warm_below else []
            out += ["COLD < PLAIN"] if v.below_unmodified else []
        return " ".join(out)

    def cell(pair: tuple[str, str], config: str) -> str:
        return _total_cell(entries[pair].get(config))

    if warm:
        header = ["pair", "best baseline", "Σ best", f"Σ {cand}", f"Σ {warm}", f"{cand} / best", f"{warm} / best",
                  f"{cand} / unmodified", f"{warm} / unmodified", "flag"]
        cells = [[f"{a}+{b}", v.best or "-", _fmt(v.best_total, 2), cell((a, b), cand), cell((a, b), warm),
                  _fmt(v.factor_best), _fmt(v.warm_factor_best), _fmt(v.factor_unmodified),
                  _fmt(v.warm_factor_unmodified), flags(v)] for (a, b), v in sorted(versus.items())]
        counts = ", ".join(dict.fromkeys(str(n) for n in (n_best, n_wbest, n_unmod, n_wunmod)))
        gm_flags = " ".join([*(["BELOW"] if gm_best is not None and gm_best < LOSS else []),
                             *(["WARM BELOW"] if gm_wbest is not None and gm_wbest < LOSS else []),
                             *(["COLD < PLAIN"] if gm_unmod is not None and gm_unmod < 1.0 else [])])
        cells.append([f"geometric mean ({counts} pairs)", "-", "-", "-", "-", _fmt(gm_best), _fmt(gm_wbest),
                      _fmt(gm_unmod), _fmt(gm_wunmod), gm_flags])
        title = (f"{cand} (memory cold) and {warm} (memory warm) against the best baseline of each pair (highest "
                 f"Σspeedup of {', '.join(best_names)}); factor = Σscaf / Σbaseline; BELOW, WARM BELOW: more "
                 f"than {under}% under the best; COLD < PLAIN: {cand} under unmodified")
        left = ("pair", "best baseline", "flag")
    else:
        header = ["pair", "best baseline", "Σ best", f"Σ {cand}", "factor vs best", "factor vs unmodified", "flag"]
        cells = [[f"{a}+{b}", v.best or "-", _fmt(v.best_total, 2), cell((a, b), cand),
                  _fmt(v.factor_best), _fmt(v.factor_unmodified), flags(v)] for (a, b), v in sorted(versus.items())]
        counts = f"{n_best} pairs" if n_best == n_unmod else f"{n_best} / {n_unmod} pairs"
        cells.append([f"geometric mean ({counts})", "-", "-", "-", _fmt(gm_best), _fmt(gm_unmod),
                      "BELOW" if gm_best is not None and gm_best < LOSS else ""])
        title = (f"{cand} against the best baseline of each pair (highest Σspeedup of {', '.join(best_names)}); "
                 f"factor = Σ{cand} / Σbaseline; BELOW: more than {under}% under the best")
        left = ("pair", "best baseline", "flag")
    _show(console, title, header, cells, left, footer=1)

    def opt(x: object) -> object:
        return "" if x is None else x

    _write_csv(directory / "best_baseline.csv",
               ["first", "second", "candidate", "best_baseline", "best_sum_speedup", "candidate_sum_speedup",
                "factor_vs_best", "unmodified_sum_speedup", "factor_vs_unmodified", "below_best",
                "below_unmodified", "warm", "warm_sum_speedup", "warm_factor_vs_best", "warm_factor_vs_unmodified",
                "warm_below_best"],
               [[a, b, cand, v.best, v.best_total, v.candidate_total, v.factor_best, v.unmodified_total,
                 v.factor_unmodified, "yes" if v.below else "no", "yes" if v.below_unmodified else "no",
                 opt(warm), opt(v.warm_total), opt(v.warm_factor_best), opt(v.warm_factor_unmodified),
                 ("yes" if v.warm_below else "no") if warm else ""]
                for (a, b), v in sorted(versus.items())])
    doc["warm"] = warm
    doc["vs_best"] = [{"first": a, "second": b, **_vs_best_json(v, warm)} for (a, b), v in sorted(versus.items())]
    doc["geomean"] = {"factor_vs_best": gm_best, "pairs_vs_best": n_best,
                      "factor_vs_unmodified": gm_unmod, "pairs_vs_unmodified": n_unmod}
    if warm:
        doc["geomean"].update({"warm_factor_vs_best": gm_wbest, "warm_pairs_vs_best": n_wbest,
                               "warm_factor_vs_unmodified": gm_wunmod, "warm_pairs_vs_unmodified": n_wunmod})
    intro = (f"Per pair, the baseline with the highest Σspeedup among {', '.join(best_names)} (what a user "
             f"could pick without scaf; one that failed in the pair does not count), and the factors "
             f"Σspeedup({cand}) / Σspeedup(best) and Σspeedup({cand}) / Σspeedup(unmodified). BELOW marks "
             f"a factor under {LOSS}: {cand} more than {under}% below the best baseline. "
             f"The last row holds the geometric means over the pairs where each factor exists.")
    if warm:
        intro += (f" {warm} is the same pair with the daemon's memory warm: its daemon read from disk what a "
                  f"priming run of the pair left (docs/bench.md, \"Cold and warm\"); {cand} started from an "
                  f"empty memory. The targets: {warm} at least {LOSS} of the best baseline (WARM BELOW "
                  f"where it is not), {cand} at least unmodified (COLD < PLAIN where it is not).")
    title_md = f"{cand} and {warm}" if warm else cand
    return [f"## {title_md} against the best baseline of each pair", "", intro, "", _md_table(header, cells), ""]


def _render_paired(console: Any, directory: Path, doc: dict, runs: list[dict], serial: dict, cands: list[str],
                   best_names: list[str]) -> list[str]:
    """Each candidate's factor against the best baseline repeat by repeat (report.paired_factors): shown
    where some pair ran twice or more; returns its Markdown."""
    paired = paired_factors(runs, serial, cands, best_names)
    if not any(len(fs) >= 2 for by_cand in paired.values() for fs in by_cand.values()):
        return []
    rows = []
    for (a, b), by_cand in sorted(paired.items()):
        for c in cands:
            fs = sorted(by_cand.get(c, []))
            if fs:
                med = statistics.median(fs)
                rows.append({"first": a, "second": b, "config": c, "repeats": len(fs), "median": med,
                             "low": fs[0], "high": fs[-1], "factors": fs})
    header = ["pair", "config", "repeats", "median factor", "lowest", "highest", "flag"]
    cells = [[f"{r['first']}+{r['second']}", r["config"], str(r["repeats"]), _fmt(r["median"]), _fmt(r["low"]),
              _fmt(r["high"]), "BELOW" if r["median"] < LOSS else ""] for r in rows]
    title = (f"side by side, repeat by repeat: Σconfig / Σbest baseline within each repeat (best of "
             f"{', '.join(best_names)}); BELOW: median more than {round((1 - LOSS) * 100)}% under")
    _show(console, title, header, cells, ("pair", "config", "flag"))
    _write_csv(directory / "paired.csv", ["first", "second", "config", "repeats", "median_factor", "lowest",
               "highest"], [[r[k] for k in ("first", "second", "config", "repeats", "median", "low", "high")]
                            for r in rows])
    doc["paired"] = rows
    intro = ("The same factor as above, taken within each repeat: the configurations of one repeat run one "
             "after another, so a machine whose speed drifts over minutes moves a repeat's candidate and its "
             "baselines together, where the medians above may each come from a different minute. The median "
             "of these factors is the figure to quote from a noisy machine; lowest and highest show its "
             "spread.")
    return ["## Side by side, repeat by repeat", "", intro, "", _md_table(header, cells), ""]


def render(directory: Path | str, candidate_name: str | None = None, quiet: bool = False) -> int:
    """Writes every table and plot of a bench folder from results.json; prints the tables.

    Returns 0, or 1 when some measurement failed (the failures are listed, never averaged).
    """
    from rich.console import Console

    directory = Path(directory)
    console = Console(quiet=quiet)
    if not console.is_terminal:
        console.width = 160  # files and pipes: keep table rows whole
    data = store.load(directory)
    runs = data["runs"]
    for name in FILES:
        (directory / name).unlink(missing_ok=True)  # nothing stale survives a re-render
    serial = serial_times(runs)
    failures = collect_failures(runs, serial)
    md: list[str] = [f"# scaf bench results: {directory.name}", ""]
    # Every figure the tables show, for scripts (results.json holds the raw runs they come from).
    doc: dict[str, Any] = {"format": "scaf-bench-report", "version": 1, "directory": directory.name}
    params = data.get("params", {})
    md += ["## Machine", "", "```", *machine.summary_lines(data.get("machine", {})), "```", "",
           (f"Parameters: {', '.join(f'{k}={v}' for k, v in params.items())}; "
           f"{len(runs)} runs in {len(data.get('sessions', []))} session(s)."), ""]
    console.print(f"[bold]{directory}[/]: {len(runs)} runs; " +
                  ", ".join(f"{k}={v}" for k, v in params.items()))
    for line in machine.summary_lines(data.get("machine", {})):
        console.print("  " + line, highlight=False, soft_wrap=True)

    srows = solo_rows(runs, serial)
    if srows:
        header = ["workload", "threads", "time_s", "speedup", "efficiency", "ok", "failed"]
        cells = [[r["workload"], str(r["threads"]), _fmt(r["time_s"]), _fmt(r["speedup"], 2),
                  _fmt(r["efficiency"], 2), str(r["ok_runs"]), str(r["failed_runs"])] for r in srows]
        _show(console, "solo: median time and speedup over 1 thread", header, cells, ("workload",))
        _write_csv(directory / "solo.csv", header, [[r[k] for k in ("workload", "threads", "time_s",
                   "speedup", "efficiency", "ok_runs", "failed_runs")] for r in srows])
        md += ["## Solo", "", _md_table(header, cells), ""]
        doc["solo"] = srows
        if any(r["speedup"] for r in srows):
            plot_solo(srows, directory / "solo_speedup.png")

    entries = pair_entries(runs, serial)
    if entries:
        order = config_order(runs)
        header = ["pair", *order]
        cells = []
        for pair in sorted(entries):
            cells.append([f"{pair[0]}+{pair[1]}", *(_total_cell(entries[pair].get(c)) for c in order)])
        _show(console, "pairs: Σspeedup (serial time / time in the pair, summed over both programs)", header, cells,
              ("pair",))
        md += ["## Pairs: Σspeedup", "", _md_table(header, cells), ""]
        csv_rows = []
        doc["pairs"] = []
        for pair in sorted(entries):
            per_config = {}
            for c in order:
                e = entries[pair].get(c)
                if e:
                    csv_rows.append([pair[0], pair[1], c, e.times[0], e.speedups[0], e.times[1],
                                     e.speedups[1], e.total, e.ok_runs, e.failed_runs])
                    per_config[c] = {"time_first_s": e.times[0], "speedup_first": e.speedups[0],
                                     "time_second_s": e.times[1], "speedup_second": e.speedups[1],
                                     "sum_speedup": e.total, "ok_runs": e.ok_runs, "failed_runs": e.failed_runs}
            doc["pairs"].append({"first": pair[0], "second": pair[1], "configs": per_config})
        _write_csv(directory / "pairs.csv", ["first", "second", "config", "time_first_s",
                   "speedup_first", "time_second_s", "speedup_second", "sum_speedup",
                   "ok_runs", "failed_runs"], csv_rows)
        plot_pairs(entries, order, directory / "pairs_bars.png")
        cand = configs.candidate(order, candidate_name)
        if candidate_name and cand is None:
            console.print(f"[yellow]--candidate {candidate_name} has no runs here[/]")
        doc["candidate"] = cand
        # Its warm twin is no baseline: it has columns of its own against the best baseline.
        baselines = [c for c in order if c != cand and c != configs.warm_of(cand or "")]
        if cand and baselines:
            factors = {b: improvement(entries, cand, b) for b in baselines}
            best_names = best_of(order, cand)
            doc["best_of"] = best_names
            warm_curve = None
            if best_names:
                twin = configs.warm_of(cand)
                warm = twin if twin in order else None
                versus = vs_best(entries, cand, best_names, warm)
                factors[BEST] = {p: v.factor_best for p, v in versus.items() if v.factor_best is not None}
                if warm:
                    warm_curve = (warm, [v.warm_factor_best for v in versus.values() if v.warm_factor_best is not None])
                md += _render_vs_best(console, directory, doc, entries, cand, best_names, versus, warm)
                md += _render_paired(console, directory, doc, runs, serial, [cand, *([warm] if warm else [])],
                                     best_names)
            summary = summary_rows({b: list(f.values()) for b, f in factors.items()})
            header = ["baseline", "class", "pairs", "% of pairs", "mean factor"]
            cells = [[r.baseline, r.cls, str(r.pairs), f"{r.percent:.0f}%", _fmt(r.mean_factor)]
                     for r in summary]
            best_note = (f"; {BEST}: the best of {', '.join(best_names)} in each pair" if best_names else "")
            _show(console, f"improvement of {cand} over each baseline "
                  f"(win >= {WIN}X, loss < {LOSS}X; mean = geometric mean{best_note})", header, cells,
                  ("baseline", "class"))
            _write_csv(directory / "summary.csv",
                       ["candidate", "baseline", "class", "pairs", "percent", "mean_factor"],
                       [[cand, r.baseline, r.cls, r.pairs, round(r.percent, 2), r.mean_factor]
                        for r in summary])
            _write_csv(directory / "improvement.csv", ["first", "second", "candidate", "baseline", "factor"],
                       [[a, b, cand, base, f] for base in baselines
                        for (a, b), f in sorted(factors[base].items())])
            doc["summary"] = [{"candidate": cand, "baseline": r.baseline, "class": r.cls, "pairs": r.pairs,
                               "percent": r.percent, "mean_factor": r.mean_factor} for r in summary]
            doc["improvement"] = [{"first": a, "second": b, "candidate": cand, "baseline": base, "factor": f}
                                  for base in baselines for (a, b), f in sorted(factors[base].items())]
            md += [f"## Improvement of {cand} over each baseline", "",
                   (f"Factor = Σspeedup({cand}) / Σspeedup(baseline) per pair; win >= {WIN}, "
                   f"loss < {LOSS}, even otherwise; mean factor = geometric mean of the class"
                   f"{best_note}."), "",
                   _md_table(header, cells), ""]
            plot_improvement({b: list(f.values()) for b, f in factors.items()}, cand,
                             directory / "improvement_sorted.png", warm_curve)

    rrows = resource_rows(runs)
    if rrows:
        header = ["config", "runs", "CPU-s per run", "saved vs equipartition", "energy J per run"]
        cells = [[r.config, str(r.runs), _fmt(r.cpu_s, 1),
                  "-" if r.saved_s is None else f"{r.saved_s:+.2f} s ({r.saved_pct:+.0f}%)"
                  if r.saved_pct is not None else f"{r.saved_s:+.2f} s",
                  _fmt(r.energy_j, 1)] for r in rrows]
        _show(console, "resources: CPU-seconds of both programs of a pair (user + system, from wait4)", header,
              cells, ("config",))
        _write_csv(directory / "resources.csv", ["config", "runs", "cpu_s", "saved_s_vs_equipartition",
                   "saved_pct_vs_equipartition", "energy_j"],
                   [[r.config, r.runs, r.cpu_s, r.saved_s, r.saved_pct, r.energy_j] for r in rrows])
        md += ["## Resources: CPU-seconds per pair run", "", _md_table(header, cells), ""]
        doc["resources"] = [{"config": r.config, "runs": r.runs, "cpu_s": r.cpu_s,
                             "saved_s_vs_equipartition": r.saved_s, "saved_pct_vs_equipartition": r.saved_pct,
                             "energy_j": r.energy_j} for r in rrows]
        if all(r.energy_j is None for r in rrows):
            line = "energy: not readable here (no RAPL)"
            console.print(line, highlight=False)
            md += [line, ""]

    orows = overhead_rows(runs)
    if orows:
        header = ["variant", "rounds", "median time_s", "median ratio to plain", "failed"]
        cells = [[r["variant"], str(r["rounds"]), _fmt(r["median_time_s"], 4),
                  _fmt(r["median_ratio"], 4), str(r["failed"])] for r in orows]
        _show(console, "overhead: alternating rounds; ratio = time / plain time of the same round", header, cells,
              ("variant",))
        _write_csv(directory / "overhead.csv", ["variant", "rounds", "median_time_s", "median_ratio",
                   "failed"], [[r[k] for k in ("variant", "rounds", "median_time_s", "median_ratio",
                               "failed")] for r in orows])
        md += ["## Overhead", "", _md_table(header, cells), ""]
        doc["overhead"] = orows

    if failures:
        header = ["run", "workload", "reason"]
        _show(console, f"[red]{len(failures)} failed program run(s): excluded from every number above", header,
              [[f.what, f.workload, f.reason] for f in failures], tuple(header))
        md += ["## Failures (excluded from every number above)", "",
               _md_table(["run", "workload", "reason"],
                         [[f.what, f.workload, f.reason.replace("|", "/").replace("\n", " ")]
                          for f in failures]), ""]
    doc["failures"] = [{"run": f.what, "workload": f.workload, "reason": f.reason} for f in failures]
    (directory / "report.md").write_text("\n".join(md))
    (directory / "report.json").write_text(json.dumps(doc, indent=1, ensure_ascii=False) + "\n")
    written = [n for n in FILES if (directory / n).exists()]
    console.print(f"wrote {', '.join(written)} in {directory}", highlight=False, soft_wrap=True)
    return 1 if failures else 0
