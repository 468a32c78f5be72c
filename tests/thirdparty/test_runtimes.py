"""Every parallel runtime gets its share (docs/runtimes.md): real pip packages (polars, DuckDB, onnxruntime,
pyarrow, numba, numexpr), a Go program built by Debian's golang-go and a Java one by default-jdk-headless, under
`scaf run` with real daemons.

The daemon believes in 2 contexts. A held OpenMP workload is its first client, so a program started beside it has a
share of 1: each runtime must then report a pool of 1 (its own answer), give plain's results, and be a client
whose status names its runtime. Alone, it runs as plain does. No timing is asserted.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from conftest import SCAF, UNTIL_KILLED, Daemon, Hold, short_tmpdir
from scaf.lib import paths

PROGS = Path(__file__).resolve().parents[1] / "progs"
WORK = PROGS / "runtime_work.py"
REQUIRED = os.environ.get("SCAF_CORPUS_REQUIRED") == "1"
PYTHON_RUNTIMES = ["polars", "duckdb", "onnxruntime", "arrow", "numba", "numexpr"]
# The variable each runtime's share reaches it by (None: the layer gives it, docs/runtimes.md).
VARIABLE = {"polars": "POLARS_MAX_THREADS", "onnxruntime": "ORT_INTRA_OP_NUM_THREADS", "numba": "NUMBA_NUM_THREADS",
            "numexpr": "NUMEXPR_NUM_THREADS", "duckdb": None, "arrow": None, "go": "GOMAXPROCS",
            "jvm": "JAVA_TOOL_OPTIONS"}
RUN_S = 240


def missing(what: str) -> None:
    if REQUIRED:
        pytest.fail(what + " (SCAF_CORPUS_REQUIRED=1)")
    pytest.skip(what)


@pytest.fixture(scope="module")
def native() -> dict[str, list[str]]:
    """The Go program (cgo: dynamic; and static) and the Java program, built once."""
    out = Path(short_tmpdir())
    built: dict[str, list[str]] = {}
    go = shutil.which("go", path="/usr/bin") or shutil.which("go")
    if go:
        env = dict(os.environ, GOCACHE=str(out / "gocache"), GOPATH=str(out / "gopath"), GOFLAGS="-mod=mod",
                   GOTOOLCHAIN="local")
        for name, cgo in (("go", "1"), ("go-static", "0")):
            subprocess.run([go, "build", "-o", str(out / name), "."], cwd=PROGS / "gowork", check=True,
                           env=dict(env, CGO_ENABLED=cgo))
            built[name] = [str(out / name)]
    javac, java = shutil.which("javac"), shutil.which("java")
    if javac and java:
        subprocess.run([javac, "-d", str(out), str(PROGS / "JavaWork.java")], check=True)
        built["jvm"] = [java, "-cp", str(out), "JavaWork"]
    return built


def argv_of(kind: str, native: dict[str, list[str]], rounds: str, until: str | None = None) -> list[str]:
    tail = [until] if until else []
    if kind in PYTHON_RUNTIMES:
        return [sys.executable, str(WORK), kind, rounds, *tail]
    if kind not in native:
        missing(f"{kind}: {'golang-go' if kind.startswith('go') else 'default-jdk-headless'} is not installed "
                "(tools/deps test installs it)")
    return [*native[kind], rounds, *tail]


def rounds_of(out: str) -> list[dict[str, str]]:
    """Each round's result and pool (`round=R result=X`, then `pool=P round=R`)."""
    got: dict[str, dict[str, str]] = {}
    for ln in out.splitlines():
        if ln.startswith(("round=", "pool=")):
            kv = dict(w.split("=", 1) for w in ln.split())
            got.setdefault(kv["round"], {}).update(kv)
    return [got[r] for r in sorted(got, key=int)]


class Run:
    def __init__(self, socket: str, argv: list[str], env: dict[str, str] | None = None, scaf_args: list[str] | None = None):
        d = short_tmpdir()
        self.out, self.err = os.path.join(d, "out"), os.path.join(d, "err")
        with open(self.out, "wb") as o, open(self.err, "wb") as e:
            self.proc = subprocess.Popen([str(SCAF), "run", "--no-start", "--socket", socket, *(scaf_args or []), "--",
                                          *argv], stdout=o, stderr=e, env=dict(os.environ, **(env or {})))

    def stdout(self) -> str:
        return Path(self.out).read_text()

    def stderr(self) -> str:
        return Path(self.err).read_text()

    def finish(self) -> str:
        try:
            rc = self.proc.wait(timeout=RUN_S)
        except subprocess.TimeoutExpired:
            self.kill()
            pytest.fail(f"still running after {RUN_S} s: {self.stderr()[-3000:]}")
        assert rc == 0 and "done" in self.stdout(), f"exit {rc}: {self.stderr()[-3000:]}"
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


_plain: dict[str, list[str]] = {}


def plain_results(kind: str, native: dict[str, list[str]]) -> list[str]:
    if kind not in _plain:
        r = subprocess.run(argv_of(kind, native, "2"), capture_output=True, text=True, timeout=RUN_S, check=False)
        assert r.returncode == 0, r.stderr
        _plain[kind] = [ln["result"] for ln in rounds_of(r.stdout)]
    return _plain[kind]


def beside_a_held_client(d: Daemon, runs: list[Run]) -> None:
    """An OpenMP workload that runs until the test ends, as the daemon's first client."""
    wl = Run(d.socket, [str(paths.workload("ep")), *UNTIL_KILLED])
    runs.append(wl)
    d.wait_for(lambda st: len(st.get("clients", [])) == 1, timeout=60, what="the held workload as a client")


def client_named(st: dict, runtime: str) -> dict | None:
    return next((c for c in st.get("clients", []) if any(r.get("name") == runtime for r in c.get("runtimes", []))),
                None)


@pytest.mark.parametrize("kind", [*PYTHON_RUNTIMES, "go", "jvm"])
def test_a_runtime_beside_another_program_starts_with_its_share(
        scafd_factory: Callable[..., Daemon], runs: list[Run], native: dict[str, list[str]], kind: str) -> None:
    want = plain_results(kind, native)
    d = scafd_factory("--cpus", "2", "--no-lookout")
    beside_a_held_client(d, runs)
    hold = Hold()
    r = Run(d.socket, argv_of(kind, native, "2", str(hold.path)), scaf_args=["--verbose"])
    runs.append(r)
    name = "jvm" if kind == "jvm" else kind
    try:
        st = d.wait_for(lambda st: client_named(st, name) is not None, timeout=120,
                        what=f"the {kind} program as a client with its runtime")
        c = client_named(st, name)
        rt = next(x for x in c["runtimes"] if x["name"] == name)
        follows, spins = rt["follows"], rt["spins"]
        assert c["runtime_team"] == (0 if follows else 1 if spins else 2), c
        text = subprocess.run([str(SCAF), "status", "--socket", d.socket], capture_output=True, text=True,
                              timeout=60, check=False).stdout
        words = ("follows its share" if follows else f"{name} pool: started with 1 of 2" if spins
                 else f"{name} pool: its own count (2 of 2): its threads sleep when idle")
        assert words in text, text
    finally:
        hold.release()
    out = r.finish()
    got = rounds_of(out)
    # Its pool, as the runtime itself reports it: its share where it spins (from its start) or follows (Arrow, from
    # the layer's first resize on, in the rounds after the process became a client); its own count where it sleeps.
    assert got[-1]["pool"] == ("1" if follows or spins else "2"), got
    assert [g["result"] for g in got[:len(want)]] == want and {g["result"] for g in got} <= set(want), (got, want)
    if VARIABLE[kind] and spins:
        assert f"{VARIABLE[kind]}=" in r.stderr(), r.stderr()  # scaf run --verbose says what it set


@pytest.mark.parametrize("kind", ["polars", "duckdb", "go"])
def test_alone_a_runtime_runs_as_plain(scafd_factory: Callable[..., Daemon], runs: list[Run],
                                       native: dict[str, list[str]], kind: str) -> None:
    want = plain_results(kind, native)
    d = scafd_factory("--cpus", "2", "--no-lookout")
    r = Run(d.socket, argv_of(kind, native, "2"))
    runs.append(r)
    got = rounds_of(r.finish())
    assert [g["pool"] for g in got] == ["2", "2"] and [g["result"] for g in got] == want, got


def test_the_users_count_stands(scafd_factory: Callable[..., Daemon], runs: list[Run],
                                native: dict[str, list[str]]) -> None:
    d = scafd_factory("--cpus", "2", "--no-lookout")
    beside_a_held_client(d, runs)
    r = Run(d.socket, argv_of("onnxruntime", native, "1"), env={"ORT_INTRA_OP_NUM_THREADS": "2"})
    runs.append(r)
    assert [g["pool"] for g in rounds_of(r.finish())] == ["2"]


def test_a_static_go_program_is_said(scafd_factory: Callable[..., Daemon], runs: list[Run],
                                     native: dict[str, list[str]]) -> None:
    d = scafd_factory("--cpus", "2", "--no-lookout")
    beside_a_held_client(d, runs)
    r = Run(d.socket, argv_of("go-static", native, "1"))
    runs.append(r)
    got = rounds_of(r.finish())
    assert got[0]["result"] == plain_results("go", native)[0], got
    assert "is statically linked: scaf cannot preload its layer into it" in r.stderr(), r.stderr()


def test_numba_on_openmp_follows_the_share(scafd_factory: Callable[..., Daemon], runs: list[Run],
                                           native: dict[str, list[str]]) -> None:
    """numba's prange rounds on its OpenMP layer are regions the OpenMP layer judges and sizes: its pool is not a
    fixed team of its own (runtime_team 0, `follows`), and its results are plain's."""
    env = {"NUMBA_THREADING_LAYER": "omp"}
    r = subprocess.run(argv_of("numba", native, "2"), capture_output=True, text=True, timeout=RUN_S, check=False,
                       env=dict(os.environ, **env))
    assert r.returncode == 0, r.stderr
    want = [g["result"] for g in rounds_of(r.stdout)]
    d = scafd_factory("--cpus", "2", "--no-lookout")
    beside_a_held_client(d, runs)
    hold = Hold()
    run = Run(d.socket, argv_of("numba", native, "2", str(hold.path)), env=env)
    runs.append(run)
    try:
        # Its regions are the OpenMP layer's to judge: the share where the evidence finds them malleable, the team
        # they ask where it finds them numbering their threads (numba's omppool does).
        st = d.wait_for(lambda st: (c := client_named(st, "numba")) is not None and c["regions"] > 0
                        and c["runtimes"][0]["follows"] and (c["verdict"] == "fixed" or c["last_team"] == 1),
                        timeout=120, what="the numba program as a client whose pool follows, its rounds judged")
        c = client_named(st, "numba")
        assert c["runtime_team"] == 0, str(c)
    finally:
        hold.release()
    got = rounds_of(run.finish())
    assert [g["result"] for g in got[:len(want)]] == want and {g["result"] for g in got} <= set(want), (got, want)
