"""A numpy program for the BLAS-pool tests: deterministic matmuls, one line per product.

    blas_probe.py N ITERS [--stop FILE] [--limit K [--limit-at I]]

Each iteration multiplies two deterministic N x N float64 matrices (they depend on the
iteration number only) and prints `it=I threads=T after=U sha=HEX`: T and U are what the
BLAS pool reported (threadpoolctl) just before and just after the product, HEX the start of
the SHA-256 of the product's bytes. OpenBLAS reads its thread count once, when a call starts,
so when T == U the product ran with T threads.
With --stop it runs until FILE exists (ITERS is then a minimum); with --limit it sets the
pool to K threads itself (threadpoolctl) before iteration I (default 0), as a program that
manages its own pool does, and prints `limited` then.
The last line is `done iters=I`.
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


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("n", type=int)
    ap.add_argument("iters", type=int)
    ap.add_argument("--stop")
    ap.add_argument("--limit", type=int)
    ap.add_argument("--limit-at", type=int, default=0)
    args = ap.parse_args()

    ctl = ThreadpoolController()
    blas = ctl.select(user_api="blas")
    it = 0
    while it < args.iters or (args.stop and not os.path.exists(args.stop)):
        if args.limit and it == args.limit_at:
            blas.limit(limits=args.limit)
            print("limited", flush=True)
        a, b = matrices(args.n, it % 4)
        threads = pool_size(blas)
        c = a @ b
        after = pool_size(blas)
        print(f"it={it} threads={threads} after={after} sha={hashlib.sha256(c.tobytes()).hexdigest()[:16]}",
              flush=True)
        it += 1
    print(f"done iters={it}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
