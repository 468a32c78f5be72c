"""hgbfit.py — four HistGradientBoosting fits in one process (the pool benchmark's task), each fit's seconds and the last digest, for rounds.sh.

Usage: hgbfit.py SIZE   (SIZE as poolprog.hgb_task takes it: 1.0 is HGB_ROWS rows)
"""

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "python/scaf/lib/bench"))
import poolprog

poolprog.hgb_task(0.2, 99)  # warm the imports
ts = []
for i in range(4):
    t = time.perf_counter(); r = poolprog.hgb_task(float(sys.argv[1]), i); ts.append(time.perf_counter() - t)
print(" ".join(f"{x:.3f}" for x in ts), r["digest"])
