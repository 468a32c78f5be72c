"""BLAS libraries whose work items wait for each other: real OpenBLAS (Debian's OpenMP build, and pip's pthread
build) under `scaf run` with a share below the team it asks for, with real daemons. None may hang.

OpenBLAS's exec_blas hands `num` items to a parallel loop, one a thread, and its level-3 drivers (syrk, gemm,
and the LAPACK routines built on them: potrf, getrf, syevd) make each item wait for flags other items set. A
region given fewer threads than items never returns (docs/layer.md, "BLAS libraries built with OpenMP"). The
layer keeps such regions whole and steers the library through the count it reads between calls.

Every run is bounded (RUN_S): a hang is a failure, never a wait. Answers are compared with a plain run's with a
relative tolerance: OpenBLAS's results differ in their last bits between thread counts, as OPENBLAS_NUM_THREADS
makes them differ. No timing is asserted.
"""

from __future__ import annotations

import glob
import math
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from conftest import SCAF, UNTIL_KILLED, Daemon, Hold, scaled, short_tmpdir

PROGS = Path(__file__).resolve().parents[1] / "progs"
REQUIRED = os.environ.get("SCAF_CORPUS_REQUIRED") == "1"
DEBIAN_PYTHON = "/usr/bin/python3"
# Large enough for every routine to go parallel in OpenBLAS (its level-3 drivers split past a few hundred rows).
N = "1000"
ROUNDS = str(scaled(2))
# A run of either program is a few seconds here; a hang is forever. The bound leaves a slow machine room.
RUN_S = 240


def missing(what: str) -> None:
    msg = f"{what} (tools/deps corpus installs it)"
    if REQUIRED:
        pytest.fail(msg + " (SCAF_CORPUS_REQUIRED=1)")
    pytest.skip(msg)


def numpy_libs() -> Path | None:
    """pip numpy's bundled OpenBLAS (a pthread build, every name as scipy_NAME_64_), in the venv's numpy."""
    import numpy

    found = glob.glob(str(Path(numpy.__file__).parent.parent / "numpy.libs" / "libscipy_openblas64_*.so"))
    return Path(found[0]) if found else None


@pytest.fixture(scope="module")
def progs() -> dict[str, str]:
    """lapack_paths built as a Debian program is (-llapack -lblas: the OpenMP OpenBLAS the corpus installs), and
    against pip numpy's OpenBLAS."""
    if not os.path.exists("/usr/lib/x86_64-linux-gnu/openblas-openmp/libblas.so.3"):
        missing("Debian's libopenblas0-openmp is not installed")
    out = Path(short_tmpdir())
    built = {"debian": str(out / "lapack_paths"), "pip": str(out / "lapack_paths64")}
    src = str(PROGS / "lapack_paths.c")
    subprocess.run(["gcc", "-O2", "-Wall", "-Wextra", "-Werror", "-o", built["debian"], src,
                    "-l:liblapack.so.3", "-l:libblas.so.3", "-lm"], check=True)
    lib = numpy_libs()
    if lib is not None:
        subprocess.run(["gcc", "-O2", "-Wall", "-Wextra", "-Werror", "-DSCIPY_OPENBLAS64", "-o", built["pip"], src,
                        f"-L{lib.parent}", f"-l:{lib.name}", f"-Wl,-rpath,{lib.parent}", "-lm"], check=True)
    else:
        del built["pip"]
    return built


def argv_of(kind: str, progs: dict[str, str], until: str | None = None) -> list[str]:
    """The program of `kind`: the C program on Debian's OpenBLAS (`debian`) or pip's (`pip`), or numpy on each."""
    tail = [until] if until else []
    if kind in ("debian", "pip"):
        if kind not in progs:
            missing("pip numpy's bundled OpenBLAS was not found")
        return [progs[kind], N, ROUNDS, *tail]
    if kind == "numpy-debian":
        if not os.path.exists(DEBIAN_PYTHON) or subprocess.run(
                [DEBIAN_PYTHON, "-c", "import numpy"], capture_output=True, check=False).returncode != 0:
            missing("Debian's python3-numpy is not installed")
        return [DEBIAN_PYTHON, str(PROGS / "numpy_linalg.py"), N, ROUNDS, *tail]
    return [sys.executable, str(PROGS / "numpy_linalg.py"), N, ROUNDS, *tail]


def results(out: str) -> dict[str, float]:
    """Each printed sum by (routine or field, round): `dgemm round=0 ok=1 sum=...` or `round=0 chol=... ...`."""
    got: dict[str, float] = {}
    for ln in out.splitlines():
        words = ln.split()
        if not words or "=" not in ln:
            continue
        kv = dict(w.split("=", 1) for w in words if "=" in w)
        if "sum" in kv:
            assert kv.get("ok") == "1", f"a residual out of bounds: {ln}"
            got[f"{words[0]}:{kv['round']}"] = float(kv["sum"])
        else:
            for k, v in kv.items():
                if k != "round":
                    got[f"{k}:{kv['round']}"] = float(v)
    return got


def same_answers(got: dict[str, float], plain: dict[str, float], what: str) -> None:
    """Every round the plain run printed is there, equal to 1e-9 of its size (the printed digits allow 1e-10)."""
    for k, v in plain.items():
        assert k in got, f"{what}: no {k} in {sorted(got)[:8]}..."
        assert math.isclose(got[k], v, rel_tol=1e-8, abs_tol=1e-9), f"{what}: {k} = {got[k]!r}, plain {v!r}"


_plain: dict[str, dict[str, float]] = {}


def plain(kind: str, progs: dict[str, str]) -> dict[str, float]:
    if kind not in _plain:
        r = subprocess.run(argv_of(kind, progs), capture_output=True, text=True, timeout=RUN_S, check=False)
        assert r.returncode == 0 and "done" in r.stdout, r.stderr
        _plain[kind] = results(r.stdout)
    return _plain[kind]


class Run:
    """One program under `scaf run` (no daemon of its own), its output in files; bounded in time by finish()."""

    def __init__(self, socket: str, argv: list[str], env: dict[str, str] | None = None):
        d = short_tmpdir()
        self.out, self.err = os.path.join(d, "out"), os.path.join(d, "err")
        with open(self.out, "wb") as o, open(self.err, "wb") as e:
            self.proc = subprocess.Popen([str(SCAF), "run", "--no-start", "--socket", socket, "--", *argv],
                                         stdout=o, stderr=e, env=dict(os.environ, SCAF_VERBOSE="1", **(env or {})))

    def stdout(self) -> str:
        return Path(self.out).read_text()

    def stderr(self) -> str:
        return Path(self.err).read_text()

    def finish(self, what: str) -> str:
        """Waits at most RUN_S: a run still going then has hung, and the test fails with its stderr."""
        try:
            rc = self.proc.wait(timeout=RUN_S)
        except subprocess.TimeoutExpired:
            self.kill()
            pytest.fail(f"{what}: still running after {RUN_S} s (hung?); stderr: {self.stderr()[-3000:]}")
        assert rc == 0 and "done" in self.stdout(), f"{what}: exit {rc}; stderr: {self.stderr()[-3000:]}"
        return self.stdout()

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


@pytest.fixture
def runs() -> Iterator[list[Run]]:
    started: list[Run] = []
    yield started
    for r in started:
        r.kill()


def client_pids(st: dict) -> list[int]:
    return [c["pid"] for c in st.get("clients", [])]


def counts_read(r: Run) -> list[int]:
    """The counts the layer answered the program's BLAS library (SCAF_VERBOSE: `a BLAS library reads its count`)."""
    return [int(ln.split("reads its count: ", 1)[1].split()[0]) for ln in r.stderr().splitlines()
            if "a BLAS library reads its count: " in ln]


KINDS = ["debian", "pip", "numpy-debian", "numpy-pip"]


@pytest.mark.parametrize("kind", KINDS)
def test_two_copies_finish_at_a_share_below_their_team(scafd_factory: Callable[..., Daemon], runs: list[Run],
                                                      progs: dict[str, str], kind: str) -> None:
    """Two copies at once on a machine of 2 contexts (a share of 1 each, a team of 2 asked): both finish with
    plain's answers. The first runs until the second is done, so that the second runs its whole life beside it."""
    want = plain(kind, progs)
    d = scafd_factory("--cpus", "2", "--no-lookout")
    hold = Hold()
    first = Run(d.socket, argv_of(kind, progs, str(hold.path)))
    runs.append(first)
    d.wait_for(lambda st: len(client_pids(st)) == 1, timeout=60, what="the first copy as a client")
    second = Run(d.socket, argv_of(kind, progs))
    runs.append(second)
    try:
        out2 = second.finish("the second copy")
    finally:
        hold.release()
    out1 = first.finish("the first copy")
    same_answers(results(out1), want, "the first copy")
    same_answers(results(out2), want, "the second copy")
    if kind in ("debian", "numpy-debian"):
        # The OpenMP build is steered through the count it reads at each call: beside the first copy, 1.
        assert 1 in counts_read(second), second.stderr()[-3000:]


@pytest.mark.parametrize("kind", ["debian", "numpy-debian"])
def test_alone_with_a_team_above_the_machine(scafd_factory: Callable[..., Daemon], runs: list[Run],
                                             progs: dict[str, str], kind: str) -> None:
    """OMP_NUM_THREADS=4 on a daemon of 2 contexts: the library reads 2 and its regions keep the team it asks
    for (the estimator's in-place baselines and experiments never touch them); plain's answers."""
    want = plain(kind, progs)
    d = scafd_factory("--cpus", "2", "--no-lookout")
    r = Run(d.socket, argv_of(kind, progs), env={"OMP_NUM_THREADS": "4", "SCAF_LAZY": "0"})
    runs.append(r)
    same_answers(results(r.finish("alone")), want, "alone")
    assert 2 in counts_read(r), r.stderr()[-3000:]
    assert "OpenBLAS's: it keeps the team it asks for" in r.stderr(), r.stderr()[-3000:]


def test_beside_an_openmp_program(scafd_factory: Callable[..., Daemon], runs: list[Run],
                                  progs: dict[str, str]) -> None:
    """Beside an OpenMP workload that runs until the test ends it: the BLAS program finishes, plain's answers."""
    want = plain("debian", progs)
    d = scafd_factory("--cpus", "2", "--no-lookout")
    wl = Run(d.socket, [str(Path(str(SCAF)).parents[1] / "workloads" / "ep"), *UNTIL_KILLED])
    runs.append(wl)
    d.wait_for(lambda st: len(client_pids(st)) == 1, timeout=60, what="the OpenMP workload as a client")
    r = Run(d.socket, argv_of("debian", progs))
    runs.append(r)
    same_answers(results(r.finish("beside ep")), want, "beside ep")
    assert 1 in counts_read(r), r.stderr()[-3000:]
