"""One scenario across machine sizes and noise levels: how far each configuration falls behind oracle-dynamic."""

from __future__ import annotations

import dataclasses
from typing import Any

from scaf.lib.sim import engine
from scaf.lib.sim.model import Scenario

SWEEP_CONFIGS = ("equipartition", "speedup", "oracle-dynamic")
REFERENCE = "oracle-dynamic"


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


def sweep(sc: Scenario, contexts: list[int], noises: list[float | None],
          configs: tuple[str, ...] = SWEEP_CONFIGS) -> list[dict[str, Any]]:
    """Rows of {contexts, noise, sums: {config: Σ}, gap: {config: 1 - Σ/Σ_oracle-dynamic}}."""
    if REFERENCE not in configs:
        configs = (*configs, REFERENCE)
    rows = []
    for n in contexts:
        for z in noises:
            s = scaled(sc, n, z)
            sums = {c: engine.run(s, c, record=False).sum_speedup for c in configs}
            ref = sums[REFERENCE]
            gap = {c: (None if v is None or not ref else 1.0 - v / ref) for c, v in sums.items() if c != REFERENCE}
            rows.append({"contexts": n, "noise": z, "sum_speedup": sums, "gap": gap})
    return rows


def table(name: str, rows: list[dict[str, Any]]) -> Any:
    from rich.table import Table

    configs = list(rows[0]["sum_speedup"]) if rows else []
    t = Table(title=f"sweep of {name}: Σspeedup, and the gap to {REFERENCE} (1 - Σ / Σ_{REFERENCE})",
              caption="a negative gap: the configuration beat the per-tick greedy oracle on the period average",
              caption_justify="left")
    t.add_column("contexts", justify="right")
    t.add_column("noise", justify="right")
    for c in configs:
        t.add_column(f"Σ {c}", justify="right")
    for c in configs:
        if c != REFERENCE:
            t.add_column(f"gap {c}", justify="right")
    for r in rows:
        z = "scenario" if r["noise"] is None else f"{r['noise']:g}"
        cells = [str(r["contexts"]), z]
        cells += ["n/a" if r["sum_speedup"][c] is None else f"{r['sum_speedup'][c]:.1f}" for c in configs]
        cells += ["n/a" if r["gap"][c] is None else f"{r['gap'][c] * 100:+.1f}%" for c in configs if c != REFERENCE]
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
            out.append(f"{c}, {zs}: gap {g0 * 100:+.1f}% at {lo['contexts']} contexts -> "
                       f"{g1 * 100:+.1f}% at {hi['contexts']}")
    return out
