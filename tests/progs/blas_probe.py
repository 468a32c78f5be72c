"""A numpy program for the BLAS-pool tests: deterministic matmuls, one line per product.

    blas_probe.py N ITERS [--stop FILE] [--limit K]

Each iteration multiplies two deterministic N x N float64 matrices (they depend on the
iteration number only) and prints `it=I threads=T sha=HEX`: T is what the BLAS pool
reported (threadpoolctl) just before the product, HEX the SHA-256 of the product's bytes.
With --stop it runs until FILE exists (ITERS is then a minimum); with --limit it holds the
pool at K threads itself (threadpoolctl), as a program that manages its own pool does.
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


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("n", type=int)
    ap.add_argument("iters", type=int)
    ap.add_argument("--stop")
    ap.add_argument("--limit", type=int)
    args = ap.parse_args()

    ctl = ThreadpoolController()
    blas = ctl.select(user_api="blas")
    if args.limit:
        blas.limit(limits=args.limit)
    it = 0
    while it < args.iters or (args.stop and not os.path.exists(args.stop)):
        a, b = matrices(args.n, it % 4)
        threads = blas.info()[0]["num_threads"] if blas.info() else 0
        c = a @ b
        print(f"it={it} threads={threads} sha={hashlib.sha256(c.tobytes()).hexdigest()[:16]}", flush=True)
        it += 1
    print(f"done iters={it}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
