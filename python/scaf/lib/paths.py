"""Where scaf's built artefacts are: the build tree, or where `make install` put them (the daemon's socket: sockpath.py)."""

from __future__ import annotations

import os
from pathlib import Path

try:
    # Written by `make install` into the installed copy only (tools/install.sh); never in the source tree.
    from scaf.lib import installed as _installed
except ImportError:
    _installed = None

ROOT = Path(__file__).resolve().parents[3]


def build_dir() -> Path:
    """The build output root: $SCAF_BUILD, else <repo>/build."""
    env = os.environ.get("SCAF_BUILD")
    return Path(env) if env else ROOT / "build"


def is_installed() -> bool:
    """True when this is an installed copy and $SCAF_BUILD does not point it at a build tree."""
    return _installed is not None and not os.environ.get("SCAF_BUILD")


def scafd() -> Path:
    if is_installed():
        return Path(_installed.SBINDIR) / "scafd"
    return build_dir() / "bin" / "scafd"


def lib_dir() -> Path:
    """The layer libraries (libscaf_*.so): build/lib, or <libdir>/scaf when installed."""
    if is_installed():
        return Path(_installed.PKGLIBDIR)
    return build_dir() / "lib"


def layer(kind: str = "gomp") -> Path:
    """The preload layer: "gomp" (GNU libgomp, the default) or "omp" (LLVM libomp, Intel libiomp5)."""
    return lib_dir() / ("libscaf_omp.so" if kind == "omp" else "libscaf_gomp.so")


def tcm_provider() -> Path:
    """libscaf_tcm.so (soname libtcm.so.1): the Thread Composability Manager oneTBB loads under scaf run."""
    return lib_dir() / "libscaf_tcm.so"


def policy_lib() -> Path:
    return lib_dir() / "libscaf_policy.so"


def decide_lib() -> Path:
    """libscaf_decide.so: the daemon's decide stage (src/daemon/decide/), the policies and the start rule, for the
    simulator (python/scaf/lib/decide.py)."""
    return lib_dir() / "libscaf_decide.so"


def launch_lib() -> Path:
    """libscaf_launch.so: the program key the layer sends in its HELLO (include/scaf/progkey.h), the start rule
    (include/scaf/startrule.h) and the runtimes' start environment (include/scaf/startenv.h)."""
    return lib_dir() / "libscaf_launch.so"


# A workload's build: "spin" is gcc's (libgomp); "spin@clang", "spin@iomp5-clang" and
# "spin@iomp5-gcc" are the same source built by clang (libomp) and against Intel's libiomp5.
WORKLOAD_BUILDS = ("clang", "iomp5-clang", "iomp5-gcc")


def workload(name: str) -> Path:
    base, _, build = name.partition("@")
    return workloads_dir(build) / base


def workloads_dir(build: str = "") -> Path:
    folder = f"workloads-{build}" if build else "workloads"
    if is_installed():
        return Path(_installed.PKGLIBDIR) / folder
    return build_dir() / folder


def workload_layer(name: str) -> str:
    """The layer kind a workload's build needs: "omp" for the LLVM/Intel builds, else "gomp"."""
    return "omp" if "@" in name else "gomp"


# libgomp's idle threads spin this many times before they sleep (its own default is 300000,
# milliseconds of spinning). Under scaf a team often waits while another program has the
# CPUs: parked for another gang's turn, or between regions on a shared machine. A short spin
# gives those CPUs back within microseconds. It changes how threads wait, never what they
# compute; a value the user set (or OMP_WAIT_POLICY) is kept.
SPINCOUNT = "10000"


# The same for libomp and libiomp5, whose idle threads spin KMP_BLOCKTIME milliseconds (200 by
# default) before they sleep: 1 ms.
BLOCKTIME = "1"


# OpenBLAS's pthread server: each idle thread spins 2^n TSC cycles before it sleeps, n = 28 unless
# OPENBLAS_THREAD_TIMEOUT (or the older GOTO_THREAD_TIMEOUT) says otherwise (driver/others/blas_server.c,
# blas_thread_init: clamped to 4..30). 2^28 is about 0.1 s, spun after every call and when the pool starts:
# a Python process pool whose workers import numpy and scipy under scaf run (two pools each) spun 0.24
# CPU-s per run, beside the other workers' fits. 2^18 is about 0.1 ms, the order of GOMP_SPINCOUNT above.
THREAD_TIMEOUT = "18"


def wait_defaults(env: dict[str, str], kind: str = "gomp") -> dict[str, str]:
    """The runtimes' waiting settings scaf runs programs with, unless the user chose their own."""
    out: dict[str, str] = {}
    if not any(v in env for v in ("OPENBLAS_THREAD_TIMEOUT", "GOTO_THREAD_TIMEOUT")):
        out["OPENBLAS_THREAD_TIMEOUT"] = THREAD_TIMEOUT
    if "OMP_WAIT_POLICY" in env:
        return out
    if kind == "omp":
        if "KMP_BLOCKTIME" not in env:
            out["KMP_BLOCKTIME"] = BLOCKTIME
    elif "GOMP_SPINCOUNT" not in env:
        out["GOMP_SPINCOUNT"] = SPINCOUNT
    return out

