"""numba's prange on its tbb threading layer (NUMBA_THREADING_LAYER=tbb): rounds until a stop file, printing
the distinct threads each round ran on and an exact result, like tests/progs/tbb_probe.h does in C++.

    numba_tbb.py N ROUNDS [--stop FILE]

With NUMBA_TBB_KICK=LIB and NUMBA_TBB_GO=FILE it first loads numba's workqueue extension (so that the layer
finds numba before its tbbpool), prints `found`, waits for FILE, runs LIB's tbb_kick (tests/progs/tbb_kick.cpp:
another oneTBB user opens the TCM permit first), prints `kicked`, and only then compiles and runs the rounds.
"""

from __future__ import annotations

import os
import sys

import numpy as np
from numba import get_thread_id, njit, prange, threading_layer


@njit(parallel=True, cache=False)
def one_round(n: int) -> tuple[np.uint64, np.ndarray]:
    out = np.empty(n, dtype=np.uint64)
    tid = np.empty(n, dtype=np.int64)
    for i in prange(n):
        x = np.uint64(i) + np.uint64(0x9E3779B97F4A7C15)
        for _ in range(40):
            x ^= x >> np.uint64(30)
            x *= np.uint64(0xBF58476D1CE4E5B9)
            x ^= x >> np.uint64(27)
        out[i] = x
        tid[i] = get_thread_id()
    # Wrapping integer sum: the same for any split of the loop.
    return out.sum(), tid


def kick_first(lib: str, go: str) -> None:
    import ctypes
    import time

    from numba.np.ufunc import workqueue  # noqa: F401  (its object names numba to the layer)

    print("found", flush=True)
    while not os.path.exists(go):
        time.sleep(0.05)
    kick = ctypes.CDLL(lib).tbb_kick
    kick.restype = ctypes.c_ulong
    kick.argtypes = [ctypes.c_ulong]
    n = 1 << 22
    assert kick(n) == n * (n - 1) // 2
    print("kicked", flush=True)


def main() -> int:
    n, rounds = int(sys.argv[1]), int(sys.argv[2])
    stop = sys.argv[4] if len(sys.argv) > 4 and sys.argv[3] == "--stop" else None
    if os.environ.get("NUMBA_TBB_KICK"):
        kick_first(os.environ["NUMBA_TBB_KICK"], os.environ["NUMBA_TBB_GO"])
    one_round(1000)  # compile before the first counted round
    print(f"numba_tbb layer={threading_layer()}", flush=True)
    done = 0
    first = None
    while done < rounds or (stop is not None and not os.path.exists(stop)):
        s, tid = one_round(n)
        first = s if first is None else first
        print(f"round={done} threads={len(np.unique(tid))} result={int(s):016x}", flush=True)
        done += 1
    print(f"done rounds={done} result={int(first):016x}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
