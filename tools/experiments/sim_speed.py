"""Time the simulator on a 256-context, 32-program, 10-minute scenario at 4 Hz (2400 referee ticks).

Not a test: prints seconds per configuration. The target is under
10 s for one configuration on the 2-core build machine.

    build/venv/bin/python tools/experiments/sim_speed.py [--repeat 3]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "python"))

from scaf.lib.sim import engine, scenario


def big_scenario() -> scenario.Scenario:
    """32 programs of mixed scaling arriving over the first 5 minutes; the run stops at 600 s."""
    progs = []
    for i in range(32):
        if i % 4 == 3:
            curve = f'{{ kind = "usl", sigma = {0.01 + 0.01 * (i % 5):.2f}, kappa = 0.0005 }}'
        else:
            curve = f'{{ kind = "amdahl", parallel_fraction = {0.95 + 0.0015 * i:.4f} }}'
        progs.append(f"""
[[program]]
name = "p{i:02d}"
work_s = {2000 + 250 * (i % 7)}
arrival_s = {i * 9.5:.1f}
region_s = 0.05
noise = 0.05
curve = {curve}
""")
    text = f"""
[scenario]
name = "speed-256x32"
description = "timing scenario for tools/experiments/sim_speed.py"
max_time_s = 600.0

[machine]
contexts = 256
rate_hz = 4
{''.join(progs)}
"""
    return scenario.parse(text, "<sim_speed>")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--configs", default="unmodified,equipartition,speedup,oracle-dynamic")
    args = ap.parse_args()
    sc = big_scenario()
    print(f"{sc.name}: {sc.machine.contexts} contexts, {len(sc.programs)} programs, "
          f"{sc.horizon():.0f} s at {sc.machine.rate_hz:g} Hz ({sc.horizon() * sc.machine.rate_hz:.0f} ticks)")
    print(f"{'configuration':<16} {'best s':>8} {'median s':>9} {'steps':>7} {'decisions':>9} {'Σspeedup':>9}")
    for cfg in args.configs.split(","):
        times = []
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            res = engine.run(sc, cfg, record=True)
            times.append(time.perf_counter() - t0)
        times.sort()
        s = "n/a" if res.sum_speedup is None else f"{res.sum_speedup:.1f}"
        print(f"{cfg:<16} {times[0]:8.2f} {times[len(times) // 2]:9.2f} {res.steps:7d} {res.decisions:9d} {s:>9}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
