"""Calibrate the simulator's default oversubscription slowdown k against the original's unmodified Σspeedup.

Runs the `unmodified` configuration of cg-lu-36 and three-way-64 for k on a
grid and prints the k that minimises the squared log ratio to the original's
12.5X and 31.5X, plus the best k for each scenario alone. Not a test.

    build/venv/bin/python tools/experiments/fit_oversub_k.py
"""

from __future__ import annotations

import dataclasses
import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "python"))

from scaf.lib.sim import engine, scenario

SCENARIOS = ("cg-lu-36", "three-way-64")


def unmodified_sum(sc: scenario.Scenario, k: float) -> float:
    sc2 = dataclasses.replace(sc, machine=dataclasses.replace(sc.machine, oversub_slowdown=k))
    res = engine.simulate(sc2, "unmodified", record=False)
    return res.sum_speedup or float("nan")


def main() -> int:
    scs = [scenario.load(n) for n in SCENARIOS]
    target = {sc.name: sc.expect["unmodified"]["sum_speedup"] for sc in scs}
    table: dict[float, dict[str, float]] = {}

    def sums(k: float) -> dict[str, float]:
        k = round(k, 2)
        if k not in table:
            table[k] = {sc.name: unmodified_sum(sc, k) for sc in scs}
        return table[k]

    def err(k: float, names: tuple[str, ...]) -> float:
        return sum(math.log(sums(k)[n] / target[n]) ** 2 for n in names)

    print(f"{'fit on':<28} {'k':>5}  " + "  ".join(f"{n} (orig {target[n]:g})" for n in target))
    for names in (tuple(target), *((n,) for n in target)):
        # coarse grid over [0, 4], then the neighbourhood in steps of 0.01
        k = min((i / 10 for i in range(41)), key=lambda k: err(k, names))
        k = min((round(k + i / 100, 2) for i in range(-10, 11) if k + i / 100 >= 0), key=lambda k: err(k, names))
        k = round(k, 2)
        print(f"{'+'.join(names):<28} {k:5.2f}  " + "  ".join(f"{sums(k)[n]:>18.2f}" for n in target))
    return 0


if __name__ == "__main__":
    sys.exit(main())
