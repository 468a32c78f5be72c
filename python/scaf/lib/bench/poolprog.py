"""The pool program `scaf bench pools` and the pool tests run: N tasks of unequal length over a process pool of K workers, each task an OpenMP or BLAS job.

It is a user's program, not part of scaf: it imports nothing of scaf's, and runs under whatever Python has
scikit-learn, joblib and dask (`python poolprog.py --help`). It prints one line, `pool-result {JSON}`: the
makespan of the map (from the first submission to the last result), the whole run's wall time, and per task
its size, worker pid, start and end (seconds from the map's start, which is given as a Unix time) and a digest of what it computed.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import time
from collections.abc import Callable

T0 = time.time()

# Rows per unit of task size: a size-1 HistGradientBoosting fit takes about 0.8 s on one thread of the 2-core
# build VM; a size-1 matmul task about 0.4 s.
HGB_ROWS = 20000
MATMUL_REPS = 12


def hgb_task(size: float, seed: int) -> dict:
    """A HistGradientBoostingClassifier fit (OpenMP, scikit-learn's prange) on data made from `seed`."""
    import numpy as np
    from sklearn.ensemble import HistGradientBoostingClassifier

    t = time.time()
    rng = np.random.default_rng(seed)
    n = max(200, int(size * HGB_ROWS))
    x = rng.standard_normal((n, 30))
    y = (x[:, :5].sum(axis=1) + 0.5 * rng.standard_normal(n) > 0).astype(int)
    clf = HistGradientBoostingClassifier(max_iter=60, early_stopping=False, random_state=0).fit(x, y)
    digest = hashlib.sha256(clf.predict_proba(x[:2000]).tobytes()).hexdigest()[:16]
    return {"pid": os.getpid(), "start": t - T0, "end": time.time() - T0, "digest": digest}


def matmul_task(size: float, seed: int) -> dict:
    """Products of 800x800 matrices (numpy's BLAS pool; 800 gives the same bits at every thread count)."""
    import numpy as np

    t = time.time()
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((800, 800))
    b = rng.standard_normal((800, 800))
    for _ in range(max(1, int(size * MATMUL_REPS))):
        a = (a @ b) / 800.0
    digest = hashlib.sha256(a.tobytes()).hexdigest()[:16]
    return {"pid": os.getpid(), "start": t - T0, "end": time.time() - T0, "digest": digest}


TASKS: dict[str, Callable[[float, int], dict]] = {"hgb": hgb_task, "matmul": matmul_task}


def run_task(kind: str, size: float, seed: int) -> dict:
    return TASKS[kind](size, seed)


def map_loky(kind: str, sizes: list[float], workers: int, inner: int | None) -> list[dict]:
    from joblib import Parallel, delayed, parallel_config

    with parallel_config(backend="loky", inner_max_num_threads=inner):
        return Parallel(n_jobs=workers)(delayed(run_task)(kind, s, i) for i, s in enumerate(sizes))


def map_dask(kind: str, sizes: list[float], workers: int, inner: int | None) -> tuple[list[dict], float]:
    from dask.distributed import Client, LocalCluster

    with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \
            Client(cluster) as client:
        t = time.time()
        futures = client.map(run_task, [kind] * len(sizes), sizes, range(len(sizes)), pure=False)
        return client.gather(futures), t


def map_mp(kind: str, sizes: list[float], workers: int, inner: int | None) -> list[dict]:
    import multiprocessing

    with multiprocessing.Pool(workers) as pool:
        return pool.starmap(run_task, [(kind, s, i) for i, s in enumerate(sizes)], chunksize=1)


def map_cf(kind: str, sizes: list[float], workers: int, inner: int | None) -> list[dict]:
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(workers) as ex:
        return list(ex.map(run_task, [kind] * len(sizes), sizes, range(len(sizes))))


FRAMEWORKS = {"loky": map_loky, "dask": map_dask, "mp": map_mp, "cf": map_cf}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--framework", choices=sorted(FRAMEWORKS), default="loky")
    p.add_argument("--task", choices=sorted(TASKS), default="hgb")
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--sizes", default="1,1,1", help="task sizes, comma-separated (1 = a unit of work)")
    p.add_argument("--inner", type=int, help="loky: inner_max_num_threads (the framework's guard set by the user)")
    p.add_argument("--hold", help="after the map, wait until this file exists (tests sample meanwhile)")
    a = p.parse_args()
    sizes = [float(s) for s in a.sizes.split(",") if s.strip()]
    start = time.time()
    got = FRAMEWORKS[a.framework](a.task, sizes, a.workers, a.inner)
    if isinstance(got, tuple):
        results, start = got
    else:
        results = got
    end = time.time()
    tasks = [{"size": s, **r, "start": r["start"] - (start - T0), "end": r["end"] - (start - T0)}
             for s, r in zip(sizes, results)]
    out = {"framework": a.framework, "task": a.task, "workers": a.workers, "makespan_s": round(end - start, 4),
           "map_start_epoch": round(start, 6),
           "wall_s": round(end - T0, 4), "digest": hashlib.sha256("".join(r["digest"] for r in results).encode())
           .hexdigest()[:16], "tasks": tasks}
    print("pool-result " + json.dumps(out), flush=True)
    while a.hold and not os.path.exists(a.hold):
        time.sleep(0.05)
    return 0


if __name__ == "__main__":
    sys.exit(main())
