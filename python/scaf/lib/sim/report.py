"""Simulation results as JSON, a rich comparison table, a timeline CSV and a timeline PNG."""

from __future__ import annotations

import csv
import math
from pathlib import Path
from typing import Any

from scaf.lib.sim.engine import Result
from scaf.lib.sim.model import Program, Scenario


def _r(x: float | None, nd: int = 3) -> float | None:
    return None if x is None or (isinstance(x, float) and math.isnan(x)) else round(float(x), nd)


def to_json(sc: Scenario, results: list[Result]) -> dict[str, Any]:
    """Per configuration: sum_speedup, and per program speedup and finish_s (plus context)."""
    out: dict[str, Any] = {
        "scenario": sc.name,
        "contexts": sc.machine.contexts,
        "chunk": sc.machine.effective_chunk,
        "configs": {},
        "expect": sc.expect,
    }
    for r in results:
        out["configs"][r.config] = {
            "sum_speedup": _r(r.sum_speedup),
            "multiprogrammed_s": _r(r.multiprogrammed_s),
            "lone_speedup": _r(r.lone_speedup),
            "note": r.note,
            "partition": r.partition,
            "cpu_s": _r(r.cpu_s, 1),
            "end_s": _r(r.end_s, 1),
            "programs": {
                p.name: {
                    "speedup": _r(p.speedup),
                    "finish_s": _r(p.finish_s),
                    "period_speedup": _r(p.period_speedup),
                    "mean_threads": _r(p.mean_threads),
                }
                for p in r.programs
            },
        }
    if len(sc.programs) == 1 and sc.programs[0].workers:
        # A pool alone: the makespan no scheduler beats (pool_bound), to judge each configuration's saving by.
        out["achievable_s"] = _r(pool_bound(sc, sc.programs[0]))
    return out


def _cell(value: float | None, expect: float | None, suffix: str = "X") -> str:
    s = "n/a" if value is None else f"{value:.1f}{suffix}"
    if expect is not None:
        s += f" [dim]({expect:g})[/dim]"
    return s


def table(sc: Scenario, results: list[Result]) -> Any:
    """A rich Table: one row per configuration, the original's numbers in brackets beside."""
    from rich.table import Table

    t = Table(title=f"{sc.name}: {sc.machine.contexts} contexts, chunk {sc.machine.effective_chunk}",
              caption="Σ: time-average of the summed speedups while >= 2 programs ran (\"alone\": no two ever "
                      "ran together, so the serial work done over the time a program ran instead, with one "
                      "program its work / life); per program: its speedup "
                      "while it shared the machine; (n): the original's number; "
                      "s: finish time from the start; t: threads it ran, time-averaged (its speedup over its "
                      "whole life where it never shared the machine); CPU-s: thread-seconds used, at most "
                      "contexts x time",
              caption_justify="left")
    t.add_column("configuration", no_wrap=True)
    t.add_column("Σspeedup", justify="right", no_wrap=True)
    t.add_column("CPU-s", justify="right", no_wrap=True)
    for p in sc.programs:
        t.add_column(p.name, justify="right", no_wrap=True)
    for r in results:
        exp = sc.expect.get(r.config, {})
        sigma = _cell(r.sum_speedup, exp.get("sum_speedup"))
        if r.sum_speedup is None and r.lone_speedup is not None:
            sigma = f"{r.lone_speedup:.1f}X alone"
        row = [r.config, sigma, f"{r.cpu_s:.0f}" if r.programs else ""]
        byname = {p.name: p for p in r.programs}
        for p in sc.programs:
            pr = byname.get(p.name)
            if pr is None:
                row.append("")
                continue
            fin = "unfinished" if pr.finish_s is None else f"{pr.finish_s:.0f}s"
            sp = pr.period_speedup if pr.period_speedup is not None else pr.speedup
            row.append(f"{_cell(sp, exp.get(p.name))} {fin} {pr.mean_threads:.1f}t")
        t.add_row(*row)
    return t


def notes(results: list[Result]) -> list[str]:
    return [f"{r.config}: {r.note}" for r in results if r.note]


def pools(sc: Scenario, results: list[Result]) -> list[str]:
    """Per pool, with `framework` (else `static`) among the configurations: each configuration's makespan (the pool's
    finish less its arrival) against that one's: the pool's own rule (`rule`), else the static split."""
    base = next((r for r in results if r.config == "framework"), None) or next(
        (r for r in results if r.config == "static"), None)
    lines = []
    for j, prog in enumerate(sc.programs):
        if not prog.workers or base is None or base.programs[j].finish_s is None:
            continue
        ref = base.programs[j].finish_s - prog.arrival_s
        cells = []
        for r in results:
            end = r.programs[j].finish_s
            if r is not base and end is not None:
                cells.append(f"{r.config} {(end - prog.arrival_s) / ref:.3f}")
        what = f"framework ({prog.rule}'s rule)" if base.config == "framework" else "static"
        lines.append(f"pool {prog.name}: makespan {ref:.2f} s under {what}; "
                     f"÷ {base.config}: {', '.join(cells)}")
        if len(sc.programs) == 1:
            lines.append(_achievable(sc, prog, ref, base.config, results))
    return lines


def pool_bound(sc: Scenario, prog: Program) -> float:
    """The makespan no scheduler beats for a pool alone on the machine, from its tasks' own solo times (as `scaf bench
    pools` bounds the task span): its longest task on the whole machine, or its one-thread seconds over the
    contexts, whichever is longer."""
    import numpy as np

    from scaf.lib.bench.pools import bound_span

    one = prog.task_work()
    full = float(prog.curve.speedup(np.array([float(min(sc.machine.contexts, sc.team(prog)))]))[0])
    return bound_span(one, [w / full for w in one], sc.machine.contexts)


def _achievable(sc: Scenario, prog: Program, ref: float, base: str, results: list[Result]) -> str:
    """The bound, and each configuration's share of the saving over the base that the bound leaves to win."""
    bound = pool_bound(sc, prog)
    room = ref - bound
    cells = []
    for r in results:
        end = r.programs[0].finish_s
        if r.config != base and end is not None and room > 1e-9:
            cells.append(f"{r.config} {(ref - (end - prog.arrival_s)) / room:.2f}")
    if room <= 1e-9:
        return f"pool {prog.name}: achievable {bound:.2f} s: {base} already reaches it, nothing is left to win"
    return (f"pool {prog.name}: achievable {bound:.2f} s (its longest task on the whole machine, or its one-thread "
            f"seconds over the contexts); share of that saving over {base}: {', '.join(cells)}")


def closeness(sc: Scenario, results: list[Result]) -> list[str]:
    """One line per configuration with an original Σ: how close the simulation comes."""
    lines = []
    for r in results:
        e = sc.expect.get(r.config, {}).get("sum_speedup")
        if e is None or r.sum_speedup is None:
            continue
        lines.append(f"{r.config}: simulated Σ {r.sum_speedup:.1f}X vs original {e:g}X "
                     f"({(r.sum_speedup / e - 1) * 100:+.0f}%)")
    return lines


def write_csv(sc: Scenario, results: list[Result], path: Path) -> None:
    """Long format: one row per configuration, step and present program."""
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["config", "time_s", "program", "threads", "allocation", "efficiency_report", "speedup_now",
                    "phase"])
        for r in results:
            tl = r.timeline
            if tl is None:
                continue
            for i, t in enumerate(tl.time):
                for j, p in enumerate(sc.programs):
                    if tl.team[i, j] == 0 and tl.speedup[i, j] == 0:
                        continue
                    e = tl.efficiency[i, j]
                    ph = int(tl.phase[i, j]) + 1 if tl.phase is not None else 1
                    w.writerow([r.config, f"{t:.4f}", p.name, int(tl.team[i, j]), int(tl.share[i, j]),
                                "" if math.isnan(e) else f"{e:.4f}", f"{tl.speedup[i, j]:.4f}", ph])


def write_png(sc: Scenario, results: list[Result], path: Path) -> None:
    """Threads per program over time, stacked, one panel per configuration."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    shown = [r for r in results if r.timeline is not None and len(r.timeline.time)]
    fig, axes = plt.subplots(max(len(shown), 1), 1, figsize=(10, 2.2 * max(len(shown), 1) + 0.6),
                             sharex=True, squeeze=False)
    colors = plt.get_cmap("tab20")(np.linspace(0, 1, 20))
    end = max((r.timeline.end for r in shown), default=1.0)  # type: ignore[union-attr]
    for ax, r in zip(axes[:, 0], shown, strict=False):
        tl = r.timeline
        assert tl is not None
        t = np.append(tl.time, tl.end)
        base = np.zeros(len(t))
        for j, p in enumerate(sc.programs):
            y = np.append(tl.team[:, j], tl.team[-1, j]).astype(float)
            ax.fill_between(t, base, base + y, step="post", color=colors[j % 20], linewidth=0,
                            label=p.name if ax is axes[0, 0] else None)
            base = base + y
        ax.axhline(sc.machine.contexts, color="black", linewidth=0.8, linestyle="--")
        s = "n/a" if r.sum_speedup is None else f"{r.sum_speedup:.1f}X"
        ax.set_title(f"{r.config}: Σspeedup {s}", fontsize=9, loc="left")
        ax.set_ylabel("threads")
        ax.set_xlim(0, end)
    axes[-1, 0].set_xlabel("time (s)")
    if shown:
        fig.legend(loc="upper right", fontsize=8, ncol=min(len(sc.programs), 6))
    fig.suptitle(f"{sc.name}: threads per program ({sc.machine.contexts} contexts, dashed)", fontsize=10)
    fig.tight_layout(rect=(0, 0, 1, 0.95))
    fig.savefig(path, dpi=100)
    plt.close(fig)
