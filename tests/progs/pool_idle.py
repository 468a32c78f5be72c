"""A process pool whose workers the tests make busy or idle at will: each phase is a file the test creates.

    python pool_idle.py --framework loky|mp DIR

Two workers. Phase 1: worker A runs small HistGradientBoosting fits (OpenMP) until DIR/phase2 exists, while
worker B runs one quick task and then waits, idle, like the parent waiting for A. Phase 2 (DIR/phase2): a
second busy task goes to B, the only free worker, so that B works again next to A; both stop when DIR/stop
exists. Lines on stdout: `busy PID` when a busy task starts (from the worker), `quick PID` when B's quick
task is done, `parent PID`, `done`.
"""

from __future__ import annotations

import os
import sys
import time


def fits_until(path: str) -> int:
    import numpy as np
    from sklearn.ensemble import HistGradientBoostingClassifier

    print(f"busy {os.getpid()}", flush=True)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((3000, 10))
    y = (x[:, 0] > 0).astype(int)
    while not os.path.exists(path):
        HistGradientBoostingClassifier(max_iter=5, early_stopping=False).fit(x, y)
    return os.getpid()


def quick() -> int:
    return os.getpid()


def wait_for(path: str) -> None:
    while not os.path.exists(path):
        time.sleep(0.02)


def main() -> int:
    import numpy  # noqa: F401  (a parent with numpy loaded has a BLAS pool: it becomes a client, as in real use)

    framework, d = sys.argv[2], sys.argv[3]
    print(f"parent {os.getpid()}", flush=True)
    stop, phase2 = os.path.join(d, "stop"), os.path.join(d, "phase2")
    if framework == "loky":
        from joblib.externals.loky import get_reusable_executor

        ex = get_reusable_executor(max_workers=2)
        a = ex.submit(fits_until, phase2)
        # Both workers must exist before the quick task goes: the second is started on demand.
        q = ex.submit(quick)
        print(f"quick {q.result()}", flush=True)
        wait_for(phase2)
        b = ex.submit(fits_until, stop)
        a.result()
        wait_for(stop)
        b.result()
    else:
        import multiprocessing

        with multiprocessing.Pool(2) as pool:
            a = pool.apply_async(fits_until, (phase2,))
            q = pool.apply_async(quick)
            print(f"quick {q.get()}", flush=True)
            wait_for(phase2)
            b = pool.apply_async(fits_until, (stop,))
            a.get()
            wait_for(stop)
            b.get()
    print("done", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
