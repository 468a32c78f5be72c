"""A numpy program for the BLAS-pool tests: deterministic matmuls, one line per product.

    blas_probe.py N ITERS [--stop FILE] [--limit K [--limit-at I] [--limit-when FILE]] [--fork]

Each iteration multiplies two deterministic N x N float64 matrices (they depend on the
iteration number only) and prints `it=I threads=T after=U sha=HEX`: T and U are what the
BLAS pool reported (threadpoolctl) just before and just after the product, HEX the start of
the SHA-256 of the product's bytes. OpenBLAS reads its thread count once, when a call starts,
so when T == U the product ran with T threads.
With --stop it runs until FILE exists (ITERS is then a minimum); with --limit it sets the
pool to K threads itself (threadpoolctl) before iteration I (default 0), or before the first
iteration from I on at which FILE exists (--limit-when), as a program that manages its own
pool does, and prints `limited at=I` then.
With --fork each iteration also forks a child that computes the same product and exits
0 when its values equal the parent's (os.fork: the child inherits the pool and the layer's
state mid-flight); the parent prints `forked=ok` on that line. The last line is `done iters=I`.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import sys

import numpy as np
from threadpoolctl import ThreadpoolController


def matrices(n: int, it: int) -> tuple[np.ndarray, np.ndarray]:
    # Exact small integers scaled by powers of two: the same bits on every run, no RNG involved.
    idx = np.arange(n * n, dtype=np.float64).reshape(n, n)
    a = ((idx * 7 + it) % 13 - 6) / 8.0
    b = ((idx * 5 + 3 * it) % 11 - 5) / 4.0 + np.eye(n) * 0.3
    return a, b


def pool_size(blas: object) -> int:
    info = blas.info()  # type: ignore[attr-defined]
    return int(info[0]["num_threads"]) if info else 0


def fork_check(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> str:
    """A forked child computes a @ b again: "ok" when it finishes with c's values.

    Values, not bits: the child may run at another pool size, whose last bits differ.
    """
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            d = a @ b
            code = 0 if d.shape == c.shape and np.allclose(d, c, rtol=1e-12, atol=1e-9) else 2
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    return "ok" if os.waitstatus_to_exitcode(status) == 0 else f"exit{os.waitstatus_to_exitcode(status)}"


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("n", type=int)
    ap.add_argument("iters", type=int)
    ap.add_argument("--stop")
    ap.add_argument("--limit", type=int)
    ap.add_argument("--limit-at", type=int, default=0)
    ap.add_argument("--limit-when")
    ap.add_argument("--fork", action="store_true")
    args = ap.parse_args()

    ctl = ThreadpoolController()
    blas = ctl.select(user_api="blas")
    it = 0
    limited = False
    while it < args.iters or (args.stop and not os.path.exists(args.stop)):
        if args.limit and not limited and it >= args.limit_at and (
                args.limit_when is None or os.path.exists(args.limit_when)):
            blas.limit(limits=args.limit)
            limited = True
            print(f"limited at={it}", flush=True)
        a, b = matrices(args.n, it % 4)
        threads = pool_size(blas)
        c = a @ b
        after = pool_size(blas)
        sha = hashlib.sha256(c.tobytes()).hexdigest()[:16]
        forked = ""
        if args.fork:
            forked = f" forked={fork_check(a, b, c)}"
        print(f"it={it} threads={threads} after={after} sha={sha}{forked}", flush=True)
        it += 1
    print(f"done iters={it}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
