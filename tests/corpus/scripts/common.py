"""What the corpus's Python programs share: hashing, and which parallel runtimes are mapped."""

from __future__ import annotations

import hashlib
import os
import sys

import numpy as np


def sha(a: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(a).tobytes()).hexdigest()


def mapped(*words: str) -> list[str]:
    """The mapped objects whose file name contains one of words, as 'folder/file'. Read from
    /proc/self/maps rather than threadpoolctl, whose OpenMP query would be a level-0
    omp_get_max_threads() of our own, evidence for the layer's verdict that the program never gave."""
    with open("/proc/self/maps") as f:
        paths = {ln.split()[-1] for ln in f if "/" in ln and any(w in ln.rsplit("/", 1)[-1] for w in words)}
    return sorted(os.path.join(os.path.basename(os.path.dirname(p)), os.path.basename(p)) for p in paths)


def print_runtimes() -> None:
    """The BLAS and OpenMP objects this process mapped, on stderr: they are not results (under
    `scaf run` the layer and the libgomp.so.1 it links are mapped too), and the corpus checks them
    in the plain run only."""
    print("blas", mapped("openblas"), file=sys.stderr)
    print("openmp", mapped("gomp", "libomp", "iomp5"), file=sys.stderr)
