"""Programs `scaf bench pairs --program NAME` knows by name: the corpus's xgboost-hist and datatable, a LAPACK program on Debian's OpenMP OpenBLAS, a program on each other runtime (polars, DuckDB, onnxruntime, Arrow, numba, numexpr, Go, Java), the oneTBB test programs; each where it is installed."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from scaf.lib import paths

SCRIPTS = paths.ROOT / "tests" / "corpus" / "scripts"
PROGS = paths.ROOT / "tests" / "progs"


@dataclass(frozen=True)
class Known:
    """A program the bench can run by its name alone: its command (None and why, where it is not installed),
    the stdout lines that differ between correct runs, what it is, and the variable it reads its own count from
    for a runtime that has none (the static split and the serial run set it)."""

    name: str
    what: str
    ignore: str | None
    command: Callable[[], tuple[list[str] | None, str]]
    count_var: str | None = None


def _venv_python() -> Path:
    return paths.build_dir() / "venv" / "bin" / "python"


def _script(name: str) -> Path | None:
    path = SCRIPTS / name
    return path if path.is_file() else None


def _xgboost() -> tuple[list[str] | None, str]:
    python, script = _venv_python(), _script("xgboost_hist.py")
    if script is None:
        return None, f"{SCRIPTS / 'xgboost_hist.py'} is not here (it comes with scaf's source tree)"
    if not os.access(python, os.X_OK):
        return None, f"{python} is not built (run make: it installs xgboost-cpu into build/venv)"
    r = subprocess.run([str(python), "-c", "import importlib.metadata as m; m.version('xgboost-cpu')"],
                       capture_output=True, timeout=60, check=False)
    if r.returncode != 0:
        return None, f"xgboost-cpu is not installed in {python} (run make)"
    return [str(python), str(script)], ""


def _datatable() -> tuple[list[str] | None, str]:
    script, rscript = _script("datatable_group.R"), shutil.which("Rscript")
    if script is None:
        return None, f"{SCRIPTS / 'datatable_group.R'} is not here (it comes with scaf's source tree)"
    if rscript is None:
        return None, "Rscript is not in PATH (tools/deps corpus installs r-cran-data.table and R)"
    r = subprocess.run([rscript, "-e", "suppressPackageStartupMessages(library(data.table))"], capture_output=True,
                       timeout=60, check=False)
    if r.returncode != 0:
        return None, "R's data.table is not installed (tools/deps corpus installs r-cran-data.table)"
    return [rscript, str(script)], ""


def _lapack() -> tuple[list[str] | None, str]:
    """tests/progs/lapack_paths.c linked as a Debian program is (-llapack -lblas), built into build/progs on first
    use: a run of its level-3 and LAPACK paths on the system's libblas.so.3, which must be OpenBLAS built for
    OpenMP (the shape whose regions must keep their team)."""
    src = PROGS / "lapack_paths.c"
    if not src.is_file():
        return None, f"{src} is not here (it comes with scaf's source tree)"
    blas = os.path.realpath("/usr/lib/x86_64-linux-gnu/libblas.so.3")
    if "openblas-openmp" not in blas:
        return None, (f"libblas.so.3 is {blas}, not Debian's OpenBLAS built for OpenMP (tools/deps corpus installs "
                      "libopenblas0-openmp)")
    gcc = shutil.which("gcc")
    if gcc is None:
        return None, "gcc is not in PATH"
    out = paths.build_dir() / "progs" / "lapack_paths"
    if not out.exists() or out.stat().st_mtime < src.stat().st_mtime:
        out.parent.mkdir(parents=True, exist_ok=True)
        r = subprocess.run([gcc, "-O2", "-o", str(out), str(src), "-l:liblapack.so.3", "-l:libblas.so.3", "-lm"],
                           capture_output=True, text=True, timeout=120, check=False)
        if r.returncode != 0:
            return None, f"{src} does not build: {r.stderr.strip()[-300:]}"
    return [str(out), "1200", "8"], ""


def _tbb(binary: str) -> Callable[[], tuple[list[str] | None, str]]:
    def command() -> tuple[list[str] | None, str]:
        path = paths.build_dir() / "tbb" / binary
        if not os.access(path, os.X_OK):
            return None, f"{path} is not built (run make: it builds the oneTBB test programs on pip's tbb)"
        return [str(path), "--n", "2000000", "--rounds", "20"], ""

    return command


def _runtime(kind: str, rounds: int) -> Callable[[], tuple[list[str] | None, str]]:
    """tests/progs/runtime_work.py on KIND, run by build/venv's python (its wheels are pinned in
    requirements.txt)."""

    def command() -> tuple[list[str] | None, str]:
        python, script = _venv_python(), PROGS / "runtime_work.py"
        if not script.is_file():
            return None, f"{script} is not here (it comes with scaf's source tree)"
        if not os.access(python, os.X_OK):
            return None, f"{python} is not built (run make)"
        module = {"arrow": "pyarrow"}.get(kind, kind)
        r = subprocess.run([str(python), "-c", f"import {module}"], capture_output=True, timeout=60, check=False)
        if r.returncode != 0:
            return None, f"{module} is not installed in {python} (run make)"
        return [str(python), str(script), kind, str(rounds)], ""

    return command


def _built(what: str, build: Callable[[Path], list[str]], needs: str) -> Callable[[], tuple[list[str] | None, str]]:
    """A program built on first use into build/progs by BUILD (its argv), when the tool NEEDS is installed."""

    def command() -> tuple[list[str] | None, str]:
        if shutil.which(needs) is None:
            return None, f"{needs} is not in PATH (tools/deps test installs it)"
        out = paths.build_dir() / "progs" / what
        out.mkdir(parents=True, exist_ok=True)
        try:
            return build(out), ""
        except (OSError, subprocess.SubprocessError) as e:
            return None, f"{what} does not build: {e}"

    return command


def _go(out: Path) -> list[str]:
    exe = out / "gowork"
    env = dict(os.environ, GOCACHE=str(out / "cache"), GOPATH=str(out / "gopath"), GOFLAGS="-mod=mod",
               GOTOOLCHAIN="local", CGO_ENABLED="1")
    subprocess.run([shutil.which("go") or "go", "build", "-o", str(exe), "."], cwd=PROGS / "gowork", env=env,
                   check=True, capture_output=True, timeout=300)
    return [str(exe), "12"]


def _java(out: Path) -> list[str]:
    src = PROGS / "JavaWork.java"
    if not (out / "JavaWork.class").exists() or (out / "JavaWork.class").stat().st_mtime < src.stat().st_mtime:
        subprocess.run([shutil.which("javac") or "javac", "-d", str(out), str(src)], check=True, capture_output=True,
                       timeout=300)
    return [shutil.which("java") or "java", "-cp", str(out), "JavaWork", "12"]


# The runtimes' programs print their pool size on a line of its own, which the static split and scaf change; the
# results do not.
POOL = r"^pool="

KNOWN: dict[str, Known] = {k.name: k for k in (
    Known("xgboost-hist", "the corpus's XGBoost (xgboost-cpu wheel), tree_method hist, 30 rounds on 20,000 x 24 "
          "seeded samples: fixed by evidence (docs/corpus.md)", None, _xgboost),
    # data.table prints the count it chose, which its CPU set (partition) changes; the results do not.
    Known("datatable", "the corpus's R data.table script: group-by, order and join of a seeded 1,000,000-row "
          "table with setDTthreads(0) (every CPU, whatever OMP_NUM_THREADS says)", r"^threads ", _datatable),
    # Sums to 10 digits (OpenBLAS's last bits follow the count it reads, as OPENBLAS_NUM_THREADS makes them, ~1e-15
    # of a sum apart) and each routine's residual check: compared in full.
    Known("lapack", "dgemv, dgemm, dsyrk, dtrsm, dpotrf, dgetrf and dsyevd of 1200x1200 matrices, 8 rounds, through "
          "Debian's OpenBLAS built for OpenMP (a C program linked with -llapack -lblas): pieces of work that wait "
          "for each other", None, _lapack),
    Known("polars", "polars 2.1 (rayon): group-by and sort of 3,000,000 generated rows, 12 rounds", POOL,
          _runtime("polars", 12)),
    Known("duckdb", "DuckDB 2.0: group-by and sort of 4,000,000 generated rows, 60 rounds (its threads: the layer's "
          "count of CPUs under scaf, WORK_THREADS in the script otherwise)", POOL, _runtime("duckdb", 60),
          "WORK_THREADS"),
    Known("onnxruntime", "onnxruntime 1.31: an MLP's inference loop, 2048 x 256 inputs, 60 rounds of 8 runs", POOL,
          _runtime("onnxruntime", 60), "WORK_THREADS"),
    Known("arrow", "pyarrow 26: group-by and sums over 64 batches of 125,000 integers, 40 rounds", POOL, _runtime("arrow", 40),
          "WORK_THREADS"),
    Known("numba", "numba 0.68 prange over 3,000,000 hashes, 12 rounds", POOL, _runtime("numba", 12)),
    Known("numexpr", "numexpr 2.14: an expression over 4,000,000 doubles, 60 rounds", POOL, _runtime("numexpr", 60)),
    Known("go", "a Go program (golang-go, cgo): goroutines over a worker pool as large as the runtime runs, 12 rounds", POOL,
          _built("go", _go, "go")),
    Known("java", "a Java program (default-jdk-headless): a parallel stream and a ForkJoin sum, 12 rounds", POOL,
          _built("java", _java, "javac")),
    Known("tbb-for", "oneTBB parallel_for (tests/progs/tbb_for.cpp), through TCM under scaf",
          r"^round=|max_concurrency=", _tbb("tbb_for")),
    Known("tbb-reduce", "oneTBB parallel_reduce (tests/progs/tbb_reduce.cpp), through TCM under scaf",
          r"^round=|max_concurrency=", _tbb("tbb_reduce")),
)}

