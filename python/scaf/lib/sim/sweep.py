"""One scenario across machine sizes and noise levels: how far each configuration falls behind oracle-dynamic."""

from __future__ import annotations

import dataclasses
from typing import Any

from scaf.lib.sim import engine
from scaf.lib.sim.model import Scenario

SWEEP_CONFIGS = ("equipartition", "speedup", "consumption", "oracle-dynamic")
REFERENCE = "oracle-dynamic"
# The figure a sweep compares: Σspeedup over the multiprogrammed period, or, for a scenario where no two
# programs ever ran together in some run of the sweep, the serial work done over the time a program ran
# (with one program: its work / life), which every configuration has.
METRICS = {"sum_speedup": "Σspeedup", "lone_speedup": "speedup alone"}


def scaled(sc: Scenario, contexts: int, noise: float | None) -> Scenario:
    """The scenario on `contexts` contexts: default teams follow the machine, explicit ones are capped."""
    smt = sc.machine.smt if contexts % sc.machine.smt == 0 else 1
    chunk = sc.machine.chunk if sc.machine.chunk and sc.machine.chunk <= contexts else 0
    mach = dataclasses.replace(sc.machine, contexts=contexts, smt=smt, chunk=chunk)
    progs = []
    for p in sc.programs:
        threads = 0 if p.threads in (0, sc.machine.contexts) else min(p.threads, contexts)
        progs.append(dataclasses.replace(p, threads=threads, noise=p.noise if noise is None else noise))
    return dataclasses.replace(sc, machine=mach, programs=progs, name=f"{sc.name}@{contexts}")


def _gap(v: float | None, ref: float | None) -> float | None:
    return None if v is None or not ref else 1.0 - v / ref


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{round(x * 100, 1) + 0.0:+.1f}%"  # + 0.0: no "-0.0%"


def _ratio(x: float) -> str:
    return f"{x:.2f}" if x >= 0.01 else f"{x:.4f}"


def _mean(xs: list[float | None]) -> float | None:
    return None if any(x is None for x in xs) else sum(xs) / len(xs)  # type: ignore[arg-type]


def sweep(sc: Scenario, contexts: list[int], noises: list[float | None],
          configs: tuple[str, ...] = SWEEP_CONFIGS, min_gain: float = 0.0,
          seeds: int = 1) -> tuple[str, list[dict[str, Any]]]:
    """(metric, rows): rows of {contexts, noise, seeds, sum_speedup and lone_speedup: {config: x}, gap:
    {config: 1 - x / x_oracle-dynamic} on the metric, gap_worst: {config: the largest gap of one seed},
    cpu_s: {config: CPU-seconds}, and, when the sweep runs both, cpu_consumption_vs_equipartition}. metric:
    "sum_speedup", or "lone_speedup" where some run never had two programs together. seeds: how many noise
    seeds each point runs, the scenario's own and the ones after it; x, the gap and cpu_s are means over
    them (each seed's gap against its own oracle run), so that a rule is not judged on one lucky draw."""
    if REFERENCE not in configs:
        configs = (*configs, REFERENCE)
    if seeds < 1:
        raise ValueError(f"seeds must be 1 or more, got {seeds}")
    rows = []
    for n in contexts:
        for z in noises:
            runs = []
            for k in range(seeds):
                s = dataclasses.replace(scaled(sc, n, z), seed=sc.seed + k)
                runs.append({c: engine.run(s, c, record=False, min_gain=min_gain) for c in configs})
            row: dict[str, Any] = {"contexts": n, "noise": z, "seeds": [sc.seed + k for k in range(seeds)],
                                   "per_seed": [{"sum_speedup": {c: r.sum_speedup for c, r in res.items()},
                                                 "lone_speedup": {c: r.lone_speedup for c, r in res.items()}}
                                                for res in runs]}
            for m in METRICS:
                row[m] = {c: _mean([p[m][c] for p in row["per_seed"]]) for c in configs}
            row["cpu_s"] = {c: sum(res[c].cpu_s for res in runs) / seeds for c in configs}
            if "consumption" in configs and "equipartition" in configs and row["cpu_s"]["equipartition"] > 0:
                row["cpu_consumption_vs_equipartition"] = row["cpu_s"]["consumption"] / row["cpu_s"]["equipartition"]
            rows.append(row)
    metric = "sum_speedup" if all(v is not None for r in rows for p in r["per_seed"] for v in p["sum_speedup"].values()) \
        else "lone_speedup"
    for r in rows:
        per = [{c: _gap(v, p[metric][REFERENCE]) for c, v in p[metric].items() if c != REFERENCE} for p in r["per_seed"]]
        r["gap"] = {c: _mean([g[c] for g in per]) for c in per[0]}
        r["gap_worst"] = {c: None if any(g[c] is None for g in per) else max(g[c] for g in per) for c in per[0]}
        if seeds == 1:
            del r["per_seed"]
    return metric, rows


def table(name: str, metric: str, rows: list[dict[str, Any]]) -> Any:
    from rich.table import Table

    configs = list(rows[0][metric]) if rows else []
    label = "Σ" if metric == "sum_speedup" else "speedup"
    cpu = bool(rows) and "cpu_consumption_vs_equipartition" in rows[0]
    caption = "a negative gap: the configuration beat the per-tick greedy oracle on the period average"
    if metric == "lone_speedup":
        caption = ("no two programs ran together (in some run): speedup is the serial work done over the time a "
                   "program ran (one program: its work / life), not Σspeedup; " + caption.replace("period", "run's"))
    if cpu:
        caption += "; cpu consumption/equip: consumption's CPU-seconds over equipartition's"
    if rows and len(rows[0].get("seeds", [])) > 1:
        sd = rows[0]["seeds"]
        caption = f"means over seeds {sd[0]}-{sd[-1]}, each seed's gap against its own {REFERENCE} run; " + caption
    t = Table(title=f"sweep of {name}: {METRICS[metric]}, and the gap to {REFERENCE} "
                    f"(1 - {label} / {label}_{REFERENCE})",
              caption=caption, caption_justify="left")
    t.add_column("contexts", justify="right")
    t.add_column("noise", justify="right")
    for c in configs:
        t.add_column(f"{label} {c}", justify="right")
    several = bool(rows) and len(rows[0].get("seeds", [])) > 1
    for c in configs:
        if c != REFERENCE:
            t.add_column(f"gap {c}", justify="right")
    if several:
        for c in configs:
            if c != REFERENCE:
                t.add_column(f"worst gap {c}", justify="right")
    if cpu:
        t.add_column("cpu consumption/equip", justify="right")
    for r in rows:
        z = "scenario" if r["noise"] is None else f"{r['noise']:g}"
        cells = [str(r["contexts"]), z]
        cells += ["n/a" if r[metric][c] is None else f"{r[metric][c]:.1f}" for c in configs]
        cells += [_pct(r["gap"][c]) for c in configs if c != REFERENCE]
        if several:
            cells += [_pct(r["gap_worst"][c]) for c in configs if c != REFERENCE]
        if cpu:
            cells.append(_ratio(r["cpu_consumption_vs_equipartition"]))
        t.add_row(*cells)
    return t


def trend(rows: list[dict[str, Any]]) -> list[str]:
    """How each configuration's gap moves from the smallest to the largest machine, per noise level."""
    out = []
    noises = list(dict.fromkeys(r["noise"] for r in rows))
    for z in noises:
        sel = [r for r in rows if r["noise"] == z]
        if len(sel) < 2:
            continue
        lo, hi = sel[0], sel[-1]
        for c, g0 in lo["gap"].items():
            g1 = hi["gap"].get(c)
            if g0 is None or g1 is None:
                continue
            zs = "scenario noise" if z is None else f"noise {z:g}"
            out.append(f"{c}, {zs}: gap {_pct(g0)} at {lo['contexts']} contexts -> {_pct(g1)} at {hi['contexts']}")
    return out


def summary(name: str, metric: str, rows: list[dict[str, Any]]) -> list[str]:
    """One line per machine size (and noise level): the speedup policy's gap, and whether it fell below
    equipartition."""
    out = []
    several = len({r["noise"] for r in rows}) > 1
    for r in rows:
        vals = r[metric]
        sp, eq = vals.get("speedup"), vals.get("equipartition")
        if sp is None:
            continue
        where = f"{name}, {r['contexts']} contexts"
        if several:
            where += ", scenario noise" if r["noise"] is None else f", noise {r['noise']:g}"
        gap = r["gap"].get("speedup")
        line = f"{where}: speedup gap {_pct(gap)}"
        if len(r.get("seeds", [])) > 1:
            line += f" (mean of {len(r['seeds'])} seeds, worst {_pct(r['gap_worst'].get('speedup'))})"
        if eq:
            # Judged on the printed difference: a shortfall that rounds to 0.0% is not one.
            d = round((sp / eq - 1.0) * 100, 1) + 0.0
            verdict = "BELOW" if d < 0 else "not below"
            line += f", {verdict} equipartition ({d:+.1f}%: {sp:.2f} vs {eq:.2f})"
        out.append(line)
    return out
