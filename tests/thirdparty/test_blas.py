"""BLAS thread pools: numpy (its bundled OpenBLAS) under `scaf run`, with real daemons.

Each check reads what the program itself saw (the pool size threadpoolctl reports before each
product, and a hash of each product) next to what the daemon says in its status. The daemon
believes the machine has 2 contexts, the size numpy's OpenBLAS gives itself here, so one
process alone gets 2 and two get 1 each. No timing is asserted.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from conftest import SCAF, Daemon, short_tmpdir

PROGS = Path(__file__).resolve().parents[1] / "progs"
PROBE = PROGS / "blas_probe.py"
N = "400"
# The pool's size is the daemon's whole machine here: OpenBLAS sizes itself from the CPUs it sees.
POOL = {"OPENBLAS_NUM_THREADS": "2", "SCAF_VERBOSE": "1"}


def limit_at(p: Numpy) -> int | None:
    """The iteration before which the probe limited its own pool (`limited at=I`), or None."""
    for ln in p.text().splitlines():
        if ln.startswith("limited at="):
            return int(ln.split("=", 1)[1])
    return None


def lines(text: str) -> list[dict[str, str]]:
    return [dict(kv.split("=", 1) for kv in ln.split()) for ln in text.splitlines() if ln.startswith("it=")]


class Numpy:
    """One blas_probe.py process under `scaf run` (or plain), stopped through a stop file."""

    def __init__(self, socket: str | None, extra: list[str] | None = None, env: dict[str, str] | None = None,
                 iters: str = "4"):
        self.dir = short_tmpdir()
        self.stop_file = os.path.join(self.dir, "stop")
        self.out = os.path.join(self.dir, "out")
        self.err = os.path.join(self.dir, "err")
        argv = [sys.executable, str(PROBE), N, iters, "--stop", self.stop_file, *(extra or [])]
        if socket is not None:
            argv = [str(SCAF), "run", "--no-start", "--socket", socket, "--", *argv]
        with open(self.out, "wb") as o, open(self.err, "wb") as e:
            self.proc = subprocess.Popen(argv, stdout=o, stderr=e, env=dict(os.environ, **POOL, **(env or {})))

    def text(self) -> str:
        with open(self.out, encoding="utf-8") as f:
            return f.read()

    def stderr(self) -> str:
        with open(self.err, encoding="utf-8") as f:
            return f.read()

    def lines(self) -> list[dict[str, str]]:
        return lines(self.text())

    def wait_lines(self, pred: Callable[[list[dict[str, str]]], bool], what: str, timeout: float = 30) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if pred(self.lines()):
                return
            if self.proc.poll() is not None:
                break
            time.sleep(0.05)
        pytest.fail(f"{what}: exit {self.proc.poll()}, output {self.text()[-2000:]}\nstderr: {self.stderr()[-2000:]}")

    def stop(self) -> list[dict[str, str]]:
        with open(self.stop_file, "w"):
            pass
        try:
            rc = self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            pytest.fail(f"blas_probe did not stop: {self.stderr()[-2000:]}")
        assert rc == 0, self.stderr()
        assert "done iters=" in self.text()
        return self.lines()

    def kill(self) -> None:
        """SIGTERM to `scaf run`, which passes it on to the program (SIGKILL would orphan it)."""
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


@pytest.fixture
def procs() -> Iterator[list[Numpy]]:
    started: list[Numpy] = []
    yield started
    for p in started:
        p.kill()


Plain = dict[tuple[str, int], str]


@pytest.fixture(scope="module")
def plain_hashes() -> Plain:
    """The products of plain runs (no layer) with 1 and with 2 threads, by (threads, it % 4).

    OpenBLAS's dgemm gives different bits at different thread counts for some sizes (400 is
    one here: the blocking of the inner sum follows the thread count), each as valid as the
    other, as when a user sets OPENBLAS_NUM_THREADS. So a product steered to T threads is
    compared with a plain run at T threads (docs/layer.md, "BLAS thread pools").
    """
    got: Plain = {}
    for t in ("1", "2"):
        r = subprocess.run([sys.executable, str(PROBE), N, "4"], check=False, capture_output=True, text=True,
                           timeout=120, env=dict(os.environ, **{**POOL, "OPENBLAS_NUM_THREADS": t}))
        assert r.returncode == 0, r.stderr
        for ln in lines(r.stdout):
            assert ln["threads"] == ln["after"] == t
            got[(t, int(ln["it"]) % 4)] = ln["sha"]
    assert len(got) == 8
    return got


def client_of(st: dict, pid: int) -> dict | None:
    return next((c for c in st.get("clients", []) if c.get("pid") == pid), None)


def probe_pid(p: Numpy) -> int:
    """The python process that `scaf run` started (by its command line: scaf run may fork briefly too)."""
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{p.proc.pid}/task/{p.proc.pid}/children") as f:
                kids = [int(x) for x in f.read().split()]
        except OSError:
            kids = []
        for k in kids:
            try:
                # argv[1] is the probe: a passing fork of `scaf run` itself has "-m scaf run ..." there.
                with open(f"/proc/{k}/cmdline", "rb") as f:
                    argv = f.read().split(b"\0")
                if len(argv) > 1 and argv[1] == str(PROBE).encode():
                    return k
            except OSError:
                pass
        time.sleep(0.05)
    pytest.fail(f"scaf run started no blas_probe.py: {p.stderr()[-2000:]}")


def same_as_plain(got: list[dict[str, str]], plain: Plain) -> None:
    """Each product is the plain run's at the pool size it ran with (either one if it changed meanwhile)."""
    bad = [ln for ln in got
           if ln["sha"] not in {plain.get((ln["threads"], int(ln["it"]) % 4)), plain.get((ln["after"], int(ln["it"]) % 4))}]
    assert not bad, f"{len(bad)} of {len(got)} products differ from a plain run at their pool size, first {bad[0]}"


def test_two_numpy_processes_share_the_cpus(scafd_factory: Callable[..., Daemon], procs: list[Numpy],
                                            plain_hashes: Plain) -> None:
    """Each numpy process is a client; its pool follows the allocation as the other comes and goes."""
    d = scafd_factory("--policy", "equipartition", "--cpus", "2", "--no-lookout")
    a = Numpy(d.socket)
    procs.append(a)
    pa = probe_pid(a)
    # A process that never opens an OpenMP region is a client, at the whole machine, as soon as numpy loaded.
    d.wait_for(lambda st: (c := client_of(st, pa)) is not None and c["threads"] == 2 and c["last_team"] == 2,
               timeout=30, what="the first numpy process as a client at 2 threads")
    a.wait_lines(lambda ls: len(ls) >= 3, "first products")

    b = Numpy(d.socket)
    procs.append(b)
    pb = probe_pid(b)
    st = d.wait_for(lambda st: all((c := client_of(st, p)) is not None and c["threads"] == 1 and c["last_team"] == 1
                                   for p in (pa, pb)), timeout=30, what="both numpy processes at 1 thread")
    assert client_of(st, pa)["regions"] == 0, "no OpenMP region ran: the pool alone made it a client"
    # Over a window while both run, what the program itself saw: its pool at 1 thread.
    mark_a, mark_b = len(a.lines()), len(b.lines())
    b.wait_lines(lambda ls: len(ls) >= mark_b + 10, "the second process's products")
    a.wait_lines(lambda ls: len(ls) >= mark_a + 10, "the first process's products next to the second")
    window = a.lines()[mark_a + 2:]
    ones = sum(ln["threads"] == "1" for ln in window)
    assert ones >= 0.9 * len(window), f"pool sizes seen while sharing: {[ln['threads'] for ln in window]}"
    # The second process starts at the whole machine (its first products may run at 2 on a slow machine, until
    # its helper applies the share); from the moment both were seen at 1, it stays at 1.
    tail_b = b.lines()[mark_b + 2:]
    assert all(ln["threads"] == "1" for ln in tail_b), [ln["threads"] for ln in b.lines()]

    got_b = b.stop()
    d.wait_for(lambda st: (c := client_of(st, pa)) is not None and c["threads"] == 2 and client_of(st, pb) is None,
               timeout=30, what="the first process back at 2 threads")
    mark_a = len(a.lines())
    a.wait_lines(lambda ls: len(ls) >= mark_a + 10, "the first process's products alone again")
    window = a.lines()[mark_a + 2:]
    twos = sum(ln["threads"] == "2" for ln in window)
    assert twos >= 0.9 * len(window), f"pool sizes seen alone again: {[ln['threads'] for ln in window]}"

    got_a = a.stop()
    assert {ln["threads"] for ln in got_a} == {"1", "2"}
    same_as_plain(got_a, plain_hashes)
    same_as_plain(got_b, plain_hashes)
    assert "openblas thread pool found" in a.stderr()


def test_no_daemon_leaves_numpy_alone(procs: list[Numpy], plain_hashes: Plain) -> None:
    """No daemon: no helper thread is even started, the pool keeps its size, the products are the plain run's."""
    nowhere = os.path.join(short_tmpdir(), "none.sock")
    a = Numpy(nowhere, iters="6")
    procs.append(a)
    pa = probe_pid(a)
    a.wait_lines(lambda ls: len(ls) >= 6, "products")
    names = []
    for t in os.listdir(f"/proc/{pa}/task"):
        try:
            with open(f"/proc/{pa}/task/{t}/comm") as f:
                names.append(f.read().strip())
        except OSError:
            pass
    assert "scaf-helper" not in names, names
    got = a.stop()
    assert {ln["threads"] for ln in got} == {"2"}
    same_as_plain(got, plain_hashes)
    assert "connected" not in a.stderr()


def test_a_program_that_sets_its_pool_is_left_alone(scafd_factory: Callable[..., Daemon], procs: list[Numpy],
                                                     plain_hashes: Plain) -> None:
    """threadpoolctl in the program: its word stands through later allocation changes."""
    d = scafd_factory("--policy", "equipartition", "--cpus", "2", "--no-lookout")
    go = os.path.join(short_tmpdir(), "limit-now")
    a = Numpy(d.socket, ["--limit", "1", "--limit-at", "8", "--limit-when", go])
    procs.append(a)
    pa = probe_pid(a)
    d.wait_for(lambda st: (c := client_of(st, pa)) is not None and c["threads"] == 2, timeout=30,
               what="the process as a client at 2 threads")
    # Only once the layer has the pool (it is a client) does the program limit it: on a slow machine the
    # program could otherwise limit its pool before the layer's first look, which then sees 1 as its bound.
    Path(go).touch()
    a.wait_lines(lambda ls: len(ls) >= 12 and limit_at(a) is not None and int(ls[-1]["it"]) >= limit_at(a) + 4,
                 "products after the program's own limit")
    # Another client comes and goes: the allocation goes to 1 and back to 2; the pool must stay at 1.
    b = Numpy(d.socket)
    procs.append(b)
    pb = probe_pid(b)
    d.wait_for(lambda st: (c := client_of(st, pa)) is not None and c["threads"] == 1 and client_of(st, pb),
               timeout=30, what="the allocation lowered")
    b.wait_lines(lambda ls: len(ls) >= 3, "the second process's products")
    b.stop()
    d.wait_for(lambda st: (c := client_of(st, pa)) is not None and c["threads"] == 2, timeout=30,
               what="the allocation raised again")
    mark = len(a.lines())
    a.wait_lines(lambda ls: len(ls) >= mark + 10, "products after the allocation went back up")
    got = a.stop()
    at = limit_at(a)
    assert at is not None
    after = [ln["threads"] for ln in got if int(ln["it"]) >= at]
    assert set(after) == {"1"}, f"the program's limit was overridden: {after}"
    assert "by the program" in a.stderr()
    same_as_plain(got, plain_hashes)


def test_scaf_blas_0_leaves_pools_alone(scafd_factory: Callable[..., Daemon], procs: list[Numpy],
                                        plain_hashes: Plain) -> None:
    """SCAF_BLAS=0 with a daemon and a client that shares the machine: the numpy process stays outside."""
    d = scafd_factory("--policy", "equipartition", "--cpus", "2", "--no-lookout")
    other = Numpy(d.socket)
    procs.append(other)
    po = probe_pid(other)
    a = Numpy(d.socket, env={"SCAF_BLAS": "0"}, iters="8")
    procs.append(a)
    pa = probe_pid(a)
    d.wait_for(lambda st: client_of(st, po) is not None, timeout=30, what="the other process as a client")
    a.wait_lines(lambda ls: len(ls) >= 8, "products")
    for _ in range(3):
        assert client_of(d.status(), pa) is None, "SCAF_BLAS=0 and still a client"
        time.sleep(0.3)
    got = a.stop()
    assert {ln["threads"] for ln in got} == {"2"}
    same_as_plain(got, plain_hashes)
    other.stop()


def test_numpy_forking_while_the_allocation_changes(scafd_factory: Callable[..., Daemon], procs: list[Numpy],
                                                    plain_hashes: Plain) -> None:
    """os.fork at every product while the pool is being resized: no child hangs or fails, the parent goes on."""
    d = scafd_factory("--policy", "equipartition", "--cpus", "2", "--no-lookout")
    a = Numpy(d.socket, ["--fork"])
    procs.append(a)
    pa = probe_pid(a)
    d.wait_for(lambda st: client_of(st, pa) is not None, timeout=30, what="the forking process as a client")
    for _ in range(2):
        b = Numpy(d.socket)
        procs.append(b)
        pb = probe_pid(b)
        d.wait_for(lambda st, pb=pb: (c := client_of(st, pa)) is not None and c["threads"] == 1
                   and client_of(st, pb) is not None, timeout=30, what="the allocation lowered")
        b.wait_lines(lambda ls: len(ls) >= 3, "the second process's products")
        b.stop()
        d.wait_for(lambda st: (c := client_of(st, pa)) is not None and c["threads"] == 2, timeout=30,
                   what="the allocation raised again")
    mark = len(a.lines())
    a.wait_lines(lambda ls: len(ls) >= mark + 5, "products after the changes")
    got = a.stop()
    assert all(ln.get("forked") == "ok" for ln in got), [ln.get("forked") for ln in got]
    same_as_plain(got, plain_hashes)


def test_a_program_that_is_not_an_interpreter_gets_no_thread_at_start(scafd_factory: Callable[..., Daemon]) -> None:
    """With a daemon running, a program that changes credentials (setpriv) before its first region must not find a
    layer thread alive: glibc aborts setresgid when the change fails on one of its threads. Only interpreters, which
    load BLAS late, are watched from start."""
    d = scafd_factory("--cpus", "2", "--no-lookout")
    ep = Path(SCAF).resolve().parents[1] / "workloads" / "ep"
    env = {"PATH": os.environ["PATH"], "LD_PRELOAD": str(Path(SCAF).resolve().parents[1] / "lib" / "libscaf_gomp.so"),
           "SCAF_SOCKET": d.socket, "SCAF_VERBOSE": "1", "OMP_NUM_THREADS": "2"}
    cmd = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--", str(ep), "--size", "S"]
    if os.geteuid() != 0:
        pytest.skip("setpriv --reuid needs root")
    got = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120, check=False)
    # The layer is loaded into setpriv itself, as root, with the daemon's socket in sight: that is where a thread
    # started at load broke setresgid (SIGABRT). ep, as nobody, then may or may not reach the daemon.
    assert got.returncode == 0 and "verified=yes" in got.stdout, got.stdout + got.stderr


IDLE_SPIN = """
import os, sys, time
import numpy as np
a = np.random.default_rng(0).standard_normal((400, 400))
idle = 0.0
for _ in range(3):
    a = (a @ a) / 400.0
    t = time.process_time()
    time.sleep(0.3)
    idle += time.process_time() - t
print(f"idle_cpu={idle:.4f} timeout={os.environ.get('OPENBLAS_THREAD_TIMEOUT', 'unset')}")
"""


@pytest.mark.parametrize(("user", "want"), [(None, "18"), ("25", "25")])
def test_scaf_run_keeps_openblas_idle_threads_from_spinning(user: str | None, want: str) -> None:
    """OpenBLAS's idle threads spin about 0.1 s after every call before they sleep, on CPUs the daemon may have given
    to another program; scaf run shortens that as it does libgomp's. The process's own CPU time while it sleeps after
    each product is what the spare thread spun (no daemon here: the pool keeps its 2 threads). A user's setting
    stays."""
    env = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_THREAD_TIMEOUT", "GOTO_THREAD_TIMEOUT")}
    env.update(OPENBLAS_NUM_THREADS="2", SCAF_SOCKET=os.path.join(short_tmpdir(), "none.sock"))
    if user is not None:
        env["OPENBLAS_THREAD_TIMEOUT"] = user
    r = subprocess.run([str(SCAF), "run", "--no-start", "--", sys.executable, "-c", IDLE_SPIN], env=env,
                       capture_output=True, text=True, timeout=120, check=False)
    assert r.returncode == 0, r.stderr
    got = dict(kv.split("=", 1) for kv in r.stdout.split())
    assert got["timeout"] == want
    if user is None:
        # 2^18 cycles is a tenth of a millisecond after each of the 3 products; the library's 2^28 is ~0.1 s each.
        assert float(got["idle_cpu"]) < 0.03, r.stdout
