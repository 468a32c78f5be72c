import sys, time
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parents[4] / "python/scaf/lib/bench"))
import poolprog
poolprog.hgb_task(0.2, 99)  # warm the imports
ts = []
for i in range(4):
    t = time.perf_counter(); r = poolprog.hgb_task(float(sys.argv[1]), i); ts.append(time.perf_counter() - t)
print(" ".join(f"{x:.3f}" for x in ts), r["digest"])
