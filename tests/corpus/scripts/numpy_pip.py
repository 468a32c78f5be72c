"""Corpus programs numpy-pip and numpy-openblas: pip's numpy on the OpenBLAS its wheel bundles (a pthread pool),
and Debian's numpy on OpenBLAS built with OpenMP.

    numpy_pip.py [--dump FILE.npz]

Seeded 1500 x 1500 matmuls and a solve, run by OpenBLAS's own thread pool (no OpenMP), or by its
OpenMP regions, whose size scaf changes between calls (the pool's size, or the count the OpenMP
build reads at each call). OpenBLAS's float results depend on that size (docs/corpus.md
has the measured differences), so the data are chosen to make the printed results independent
of it:

- the matrices hold small integers, and every product and partial sum stays an integer below
  2**53: exact in float64 whatever the order of summation, so the products are hashed in full;
- the solve has a known integer solution, which LU with pivoting recovers to within about
  1e-13 (the matrix's diagonal is raised to keep it well conditioned); rounded to 6 decimal
  places it is that solution, and only an error of 5e-7 or more could change that.

Prints on stderr the BLAS and OpenMP objects mapped (OpenBLAS from numpy.libs and no OpenMP
runtime, or Debian's OpenMP build and libgomp), and on stdout a SHA-256 of each result. --dump also saves the unrounded arrays, to
compare runs with different pool sizes.
"""

from __future__ import annotations

import argparse
import sys

import numpy as np

from common import print_runtimes, sha

N = 1500
# Keeps each matmul's entries below 65521, so the next one's partial sums stay below
# N * 65521 * 8 < 2**53: every intermediate value is an exact integer.
MOD = 65521


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--dump", help="also save the unrounded result arrays to this .npz file")
    args = ap.parse_args()

    rng = np.random.default_rng(12345)
    a = rng.integers(-8, 9, (N, N)).astype(np.float64)
    b = rng.integers(-8, 9, (N, N)).astype(np.float64)
    c = a @ b
    for _ in range(4):
        c = np.fmod(c, MOD) @ b
    x_true = rng.integers(-100, 101, (N, 200)).astype(np.float64)
    # The eigenvalues of the integer matrix a lie within about sqrt(N * 24) ~ 190 of 0 (24: the
    # variance of its entries); raised by 400 it stays integer and is well conditioned (4.3).
    s = a + 400 * np.eye(N)
    x = np.linalg.solve(s, s @ x_true)
    print_runtimes()
    print("matmul", c.shape, sha(c))
    # + 0.0 turns a -0.0 into 0.0, so that the sign of a zero cannot differ.
    print("solve", x.shape, "rounded to 6 decimal places", sha(np.round(x, 6) + 0.0))
    if args.dump:
        np.savez(args.dump, matmul=c, solve=x)
    return 0


if __name__ == "__main__":
    sys.exit(main())
