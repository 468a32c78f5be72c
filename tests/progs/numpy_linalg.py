"""numpy_linalg.py — Cholesky, solve and eigenvalues through whatever BLAS and LAPACK numpy was built with.

    python numpy_linalg.py N ROUNDS [UNTIL]

One line per round, `round=R chol=S solve=S eig=S` (sums, 10 significant digits: the BLAS's results differ
in their last bits between thread counts, as its own thread variable makes them differ), then `done`.
UNTIL: a path; after ROUNDS, go on until it exists. Debian's python3-numpy calls libblas.so.3 (here the
OpenMP build of OpenBLAS); pip's numpy its bundled pthread OpenBLAS.
"""

import os
import sys

import numpy as np


def main() -> int:
    n, rounds = int(sys.argv[1]), int(sys.argv[2])
    until = sys.argv[3] if len(sys.argv) > 3 else None
    rng = np.random.default_rng(1)
    a = rng.standard_normal((n, n))
    s = a @ a.T + n * np.eye(n)
    r = 0
    while r < rounds or (until and not os.path.exists(until)):
        c = np.linalg.cholesky(s)
        x = np.linalg.solve(s, a[:, r % n])
        w = np.linalg.eigvalsh(s[: n // 2, : n // 2])
        print(f"round={r} chol={c.sum():.9e} solve={x.sum():.9e} eig={w.sum():.9e}", flush=True)
        r += 1
    print("done", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
