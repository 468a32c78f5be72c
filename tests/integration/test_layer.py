"""The preload layer with real daemons and real OpenMP processes (tests/progs/omp_probe.c).

Every check reads what the program itself observed (omp_get_num_threads() inside its regions,
its affinity in /proc) next to what the daemon says in its status. No timing is asserted:
waits poll until a condition holds, with generous limits.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from conftest import Daemon, layer_env, parse_result, short_tmpdir
from scaf.lib import paths

PROGS = Path(__file__).resolve().parents[1] / "progs"
# Long enough never to end on its own during a test; tests end it through the stop file.
MAXSEC = "60"
# Passive waits; and no baseline while a program is alone (SCAF_ALONE_SHARE=0): these tests judge the teams the
# page gives, and an in-place baseline runs one instance on one thread (test_estimate.py tests those).
QUIET = {"OMP_WAIT_POLICY": "passive", "SCAF_ALONE_SHARE": "0"}
# The estimator's in-place baselines run single regions on one thread: tests that read team
# sizes turn it off so that every region shows the allocation itself.
NO_ESTIMATE = {"SCAF_ESTIMATE": "0", **QUIET}


def build_probe(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Compiles tests/progs/omp_probe.c with the system gcc and libgomp."""
    out = tmp_path_factory.mktemp("progs") / "omp_probe"
    subprocess.run(
        ["gcc", "-fopenmp", "-O2", "-Wall", "-Wextra", "-Werror", "-o", str(out), str(PROGS / "omp_probe.c")],
        check=True,
    )
    return out


@pytest.fixture(scope="module")
def probe(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_probe(tmp_path_factory)


class Probe:
    """One omp_probe process, its stdout in a file, stopped through a stop file."""

    def __init__(self, exe: Path, args: list[str], env: dict[str, str]):
        self.dir = short_tmpdir()
        self.stop_file = os.path.join(self.dir, "stop")
        self.out = os.path.join(self.dir, "out")
        self.err = os.path.join(self.dir, "err")
        argv = [str(exe)] + [self.stop_file if a == "STOP" else a for a in args]
        with open(self.out, "wb") as o, open(self.err, "wb") as e:
            self.proc = subprocess.Popen(argv, stdout=o, stderr=e, env=env)

    @property
    def pid(self) -> int:
        return self.proc.pid

    def text(self) -> str:
        with open(self.out, encoding="utf-8") as f:
            return f.read()

    def stderr(self) -> str:
        with open(self.err, encoding="utf-8") as f:
            return f.read()

    def teams(self) -> list[int]:
        return [int(ln[5:]) for ln in self.text().splitlines() if ln.startswith("team=")]

    def wait_output(self, pred: Callable[[str], bool], what: str, timeout: float = 15) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            text = self.text()
            if pred(text):
                return text
            if self.proc.poll() is not None:
                break
            time.sleep(0.05)
        pytest.fail(f"probe never showed {what}: stdout {self.text()!r} stderr {self.stderr()!r}")

    def finish(self, timeout: float = 30) -> tuple[int, str]:
        Path(self.stop_file).touch()
        rc = self.proc.wait(timeout=timeout)
        return rc, self.text()

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


@pytest.fixture
def probes() -> Iterator[Callable[..., Probe]]:
    started: list[Probe] = []

    def start(exe: Path, args: list[str], env: dict[str, str]) -> Probe:
        p = Probe(exe, args, env)
        started.append(p)
        return p

    yield start
    for p in started:
        p.kill()


def client(st: dict, pid: int) -> dict | None:
    return next((c for c in st["clients"] if c["pid"] == pid), None)


def kinds(text: str) -> dict[str, int]:
    line = next(ln for ln in text.splitlines() if ln.startswith("kinds "))
    return {k: int(v) for k, v in (kv.split("=") for kv in line.split()[1:])}


def last_team_is(p: Probe, n: int) -> Callable[[str], bool]:
    return lambda _text: bool(p.teams()) and p.teams()[-1] == n


def run(exe: Path | str, args: list[str], env: dict[str, str], timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(exe), *args], check=False, env=env, capture_output=True, text=True, timeout=timeout)


def plain_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD" and not k.startswith("SCAF_")}
    env.update(extra or {})
    return env


def affinity_lists(pid: int) -> dict[int, str]:
    """Cpus_allowed_list of every thread of pid."""
    out = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            status = (task / "status").read_text()
        except OSError:
            continue  # the thread exited meanwhile
        for ln in status.splitlines():
            if ln.startswith("Cpus_allowed_list:"):
                out[int(task.name)] = ln.split(":", 1)[1].strip()
    return out


def cpu_list(spec: str) -> list[int]:
    cpus: list[int] = []
    for part in spec.split(","):
        if "-" in part:
            lo, hi = part.split("-")
            cpus.extend(range(int(lo), int(hi) + 1))
        elif part:
            cpus.append(int(part))
    return cpus


# ---------------------------------------------------------------- allocations


def test_team_follows_arrivals_and_departures(probe: Path, scafd: Daemon, probes: Callable[..., Probe]) -> None:
    env = layer_env(scafd.socket, {"OMP_NUM_THREADS": "4", **NO_ESTIMATE})
    a = probes(probe, ["follow", "STOP", MAXSEC], env)
    scafd.wait_for(lambda st: (c := client(st, a.pid)) is not None and c["threads"] == 4, what="A alone: 4")
    a.wait_output(last_team_is(a, 4), "A running 4 threads alone")

    b = probes(probe, ["follow", "STOP", MAXSEC], env)
    scafd.wait_for(
        lambda st: [client(st, p)["threads"] if client(st, p) else 0 for p in (a.pid, b.pid)] == [2, 2],
        what="A and B: 2 each",
    )
    a.wait_output(last_team_is(a, 2), "A down to 2 threads")
    b.wait_output(last_team_is(b, 2), "B at 2 threads")
    st = scafd.status()
    assert client(st, a.pid)["malleable"] and client(st, b.pid)["malleable"], st
    assert client(st, a.pid)["max_threads"] == 4, st
    assert client(st, a.pid)["regions"] > 0, st

    b.proc.send_signal(signal.SIGKILL)
    b.proc.wait()
    scafd.wait_for(
        lambda st: client(st, b.pid) is None and (c := client(st, a.pid)) is not None and c["threads"] == 4,
        what="B gone, A back to 4",
    )
    a.wait_output(last_team_is(a, 4), "A back to 4 threads")
    rc, text = a.finish()
    assert rc == 0, text
    assert 4 in a.teams() and 2 in a.teams(), text
    # The teams went 4 -> 2 -> 4, and every kind of entry point followed the last allocation.
    teams = a.teams()
    i2 = teams.index(2)
    assert 4 in teams[:i2] and 4 in teams[i2:], teams
    assert set(kinds(text).values()) == {4}, text


def test_bound_is_initial_nthreads_var(probe: Path, scafd: Daemon, probes: Callable[..., Probe]) -> None:
    """OMP_NUM_THREADS=2 with --cpus 4: the daemon may offer 4, the program never sees more than 2."""
    env = layer_env(scafd.socket, {"OMP_NUM_THREADS": "2", **NO_ESTIMATE})
    p = probes(probe, ["follow", "STOP", MAXSEC], env)
    st = scafd.wait_for(lambda st: client(st, p.pid) is not None and client(st, p.pid)["regions"] > 20, what="probe")
    assert client(st, p.pid)["max_threads"] == 2, st
    rc, text = p.finish()
    assert rc == 0, text
    assert p.teams() and max(p.teams()) == 2, text
    assert max(kinds(text).values()) == 2, text


def test_explicit_counts_if_false_and_nested_untouched(probe: Path, scafd_factory: Callable[..., Daemon]) -> None:
    d = scafd_factory("--policy", "equipartition", "--cpus", "1", "--no-lookout")
    extra = {"OMP_NUM_THREADS": "4", "OMP_MAX_ACTIVE_LEVELS": "2", **NO_ESTIMATE}
    plain = run(probe, ["explicit"], plain_env(extra))
    under = run(probe, ["explicit"], layer_env(d.socket, extra))
    assert plain.returncode == under.returncode == 0, (plain.stderr, under.stderr)

    def fields(out: str) -> dict[str, str]:
        line = next(ln for ln in out.splitlines() if ln.startswith("explicit="))
        return dict(kv.split("=") for kv in line.split())

    p, u = fields(plain.stdout), fields(under.stdout)
    assert p == {"explicit": "3", "iffalse": "1", "default": "4", "nested_outer": "2", "nested_inner": "4",
                 "asdefault": "4"}, p
    # The default outermost region and num_threads(N) with N the program's own default follow the
    # allocation (1 context); any other count, an if(false) and nested regions are as plain.
    assert u == {**p, "default": "1", "asdefault": "1"}, (u, d.stderr())
    assert plain.stdout.splitlines()[-2:] == under.stdout.splitlines()[-2:]  # checksum, done


def test_split_entry_points_follow_allocation(probe: Path, scafd_factory: Callable[..., Daemon]) -> None:
    """GOMP_parallel_start / _loop_*_start / _sections_start ... GOMP_parallel_end (old binaries)."""
    d = scafd_factory("--policy", "equipartition", "--cpus", "1", "--no-lookout")
    extra = {"OMP_NUM_THREADS": "3", **NO_ESTIMATE}
    plain = run(probe, ["split"], plain_env(extra))
    under = run(probe, ["split"], layer_env(d.socket, extra))
    assert plain.returncode == under.returncode == 0, (plain.stderr, under.stderr)
    split_plain = next(ln for ln in plain.stdout.splitlines() if ln.startswith("split "))
    split_under = next(ln for ln in under.stdout.splitlines() if ln.startswith("split "))
    assert {kv.split("=")[1] for kv in split_plain.split()[1:]} == {"3"}, split_plain
    assert {kv.split("=")[1] for kv in split_under.split()[1:]} == {"1"}, split_under
    assert plain.stdout.splitlines()[-2:] == under.stdout.splitlines()[-2:]


# ---------------------------------------------------------------- non-malleable programs


@pytest.mark.parametrize(
    "args,team",
    [
        (["setnum", "1", "STOP", MAXSEC], 1),  # omp_set_num_threads(1)
        (["fsetnum", "1", "STOP", MAXSEC], 1),  # Fortran omp_set_num_threads_
        (["fsetnum8", "1", "STOP", MAXSEC], 1),  # Fortran omp_set_num_threads_8_
    ],
    ids=["set_num_threads", "set_num_threads_", "set_num_threads_8_"],
)
def test_nonmalleable_fixed_team_under_cpuset(
    probe: Path, scafd_factory: Callable[..., Daemon], probes: Callable[..., Probe], args: list[str], team: int
) -> None:
    """The probe sets its count and numbers its threads (gcc's static loops): fixed, kept, and
    confined by affinity to a CPU set of exactly its team (never fewer CPUs than threads), here
    one of the daemon's 2 contexts (--placement cpuset)."""
    d = scafd_factory("--policy", "equipartition", "--cpus", "2", "--no-lookout", "--placement", "cpuset")
    p = probes(probe, args, layer_env(d.socket, {"OMP_NUM_THREADS": "3", **QUIET}))
    st = d.wait_for(
        lambda st: (c := client(st, p.pid)) is not None and not c["malleable"] and c["cpuset"],
        what="non-malleable client with a cpuset",
    )
    st = d.wait_for(lambda st: client(st, p.pid)["verdict_source"] == "evidence", what="the page's verdict")
    c = client(st, p.pid)
    assert c["verdict"] == "fixed", c
    assert f"omp_set_num_threads({team}) outside regions from " in c["reason"], c
    cpuset = sorted(client(st, p.pid)["cpuset"])
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        lists = affinity_lists(p.pid)
        # The team's threads plus the helper: the pool may not exist yet when the set first lands.
        if len(lists) > team and all(sorted(cpu_list(v)) == cpuset for v in lists.values()):
            break
        time.sleep(0.05)
    else:
        pytest.fail(f"threads' affinity {affinity_lists(p.pid)} never matched cpuset {cpuset}")
    if len(os.sched_getaffinity(0)) > 1:
        assert len(cpuset) < len(os.sched_getaffinity(0)), cpuset  # really confined, not the default mask
    rc, text = p.finish()
    assert rc == 0, text
    assert set(p.teams()) == {team}, text
    assert set(kinds(text).values()) == {team}, text


@pytest.mark.parametrize("mode", ["fixed", "fmax"], ids=["get_max_threads", "get_max_threads_"])
def test_count_query_alone_stays_malleable(
    probe: Path, scafd_factory: Callable[..., Daemon], probes: Callable[..., Probe], mode: str
) -> None:
    """A banner's omp_get_max_threads() is evidence, not a verdict: the probe's regions read
    their own team size (or none), so after one look at each region it is steered again."""
    d = scafd_factory("--policy", "equipartition", "--cpus", "1", "--no-lookout")
    p = probes(probe, [mode, "STOP", MAXSEC], layer_env(d.socket, {"OMP_NUM_THREADS": "3", **QUIET}))
    st = d.wait_for(
        lambda st: (c := client(st, p.pid)) is not None and c["verdict"] == "malleable" and c["regions"] > 50,
        what="the probe judged malleable",
    )
    c = client(st, p.pid)
    assert c["malleable"] and c["verdict_source"] == "evidence", c
    assert "omp_get_max_threads() outside regions from omp_probe" in c["reason"], c
    rc, text = p.finish()
    assert rc == 0, text
    # What the program saw is what plain libgomp says; its regions then follow the allocation
    # (1), after at most one full-team look at each region.
    assert "max=3" in text.splitlines(), text
    teams = p.teams()
    assert set(teams) <= {1, 3} and teams[-1] == 1, teams


def test_get_max_threads_before_first_region_same_as_plain(probe: Path, scafd: Daemon) -> None:
    for threads in ("1", "3"):
        extra = {"OMP_NUM_THREADS": threads, **QUIET}
        plain = run(probe, ["fixed", "/nonexistent", "0.05"], plain_env(extra))
        under = run(probe, ["fixed", "/nonexistent", "0.05"], layer_env(scafd.socket, extra))
        assert plain.stdout.splitlines()[0] == under.stdout.splitlines()[0] == f"max={threads}"
    plain = run(probe, ["fixed", "/nonexistent", "0.05"], plain_env(QUIET))
    under = run(probe, ["fixed", "/nonexistent", "0.05"], layer_env(scafd.socket, QUIET))
    assert plain.stdout.splitlines()[0] == under.stdout.splitlines()[0] == f"max={len(os.sched_getaffinity(0))}"


# ---------------------------------------------------------------- inert layer


@pytest.mark.parametrize("mode", [["sum"], ["explicit"], ["split"], ["fixed", "/nonexistent", "0.05"]])
def test_no_daemon_same_output_and_exit_code(probe: Path, mode: list[str]) -> None:
    extra = {"OMP_NUM_THREADS": "3", **QUIET}
    plain = run(probe, mode, plain_env(extra))
    under = run(probe, mode, layer_env(None, extra))
    assert (plain.returncode, plain.stdout, plain.stderr) == (under.returncode, under.stdout, under.stderr)
    bad = run(probe, ["no-such-mode"], layer_env(None, extra))
    assert bad.returncode == run(probe, ["no-such-mode"], plain_env(extra)).returncode == 2


def test_disabled_and_refused_are_inert(
    probe: Path, scafd_factory: Callable[..., Daemon], probes: Callable[..., Probe]
) -> None:
    d = scafd_factory("--policy", "equipartition", "--cpus", "4", "--no-lookout", "--max-clients", "1")
    extra = {"OMP_NUM_THREADS": "3", **NO_ESTIMATE}
    plain = run(probe, ["explicit"], plain_env(extra))

    disabled = run(probe, ["explicit"], layer_env(d.socket, {**extra, "SCAF_DISABLE": "1"}))
    assert (disabled.returncode, disabled.stdout, disabled.stderr) == (plain.returncode, plain.stdout, plain.stderr)

    holder = probes(probe, ["follow", "STOP", MAXSEC], layer_env(d.socket, extra))
    d.wait_for(lambda st: client(st, holder.pid) is not None, what="the one allowed client")
    refused = run(probe, ["explicit"], layer_env(d.socket, extra))
    assert (refused.returncode, refused.stdout, refused.stderr) == (plain.returncode, plain.stdout, plain.stderr)
    verbose = run(probe, ["explicit"], layer_env(d.socket, {**extra, "SCAF_VERBOSE": "1"}))
    assert verbose.stdout == plain.stdout
    assert "refused" in verbose.stderr, verbose.stderr
    assert [c["pid"] for c in d.status()["clients"]] == [holder.pid]
    assert holder.finish()[0] == 0


def test_processes_without_openmp_never_connect(scafd: Daemon) -> None:
    env = layer_env(scafd.socket)
    proc = subprocess.Popen(["/bin/sh", "-c", "sleep 1; true"], env=env)
    seen = set()
    while proc.poll() is None:
        seen |= {c["pid"] for c in scafd.status()["clients"]}
        time.sleep(0.05)
    assert proc.returncode == 0
    assert seen == set(), seen


# ---------------------------------------------------------------- daemon restart, fork


def test_daemon_restart_clients_reconnect(probe: Path, scafd: Daemon, probes: Callable[..., Probe]) -> None:
    env = layer_env(scafd.socket, {"OMP_NUM_THREADS": "4", **NO_ESTIMATE})
    a = probes(probe, ["follow", "STOP", MAXSEC], env)
    b = probes(probe, ["follow", "STOP", MAXSEC], env)
    scafd.wait_for(lambda st: {a.pid, b.pid} <= {c["pid"] for c in st["clients"]}, what="both clients")
    old_pid = scafd.status()["daemon_pid"]
    assert scafd.stop() == 0
    time.sleep(0.5)  # the clients run on their last allocation meanwhile
    assert a.proc.poll() is None and b.proc.poll() is None
    scafd.start()
    st = scafd.wait_for(
        lambda st: {a.pid, b.pid} <= {c["pid"] for c in st["clients"]}, timeout=20, what="clients reconnected"
    )
    assert st["daemon_pid"] != old_pid
    b.finish()
    scafd.wait_for(lambda st: (c := client(st, a.pid)) is not None and c["threads"] == 4, what="A alone again")
    a.wait_output(last_team_is(a, 4), "A at 4 threads under the new daemon")
    for p in (a, b):
        rc, text = p.finish()
        assert rc == 0 and text.splitlines()[-1] == "done", text


def test_forked_child_is_its_own_client(probe: Path, scafd: Daemon) -> None:
    d = short_tmpdir()
    stop, out = os.path.join(d, "stop"), os.path.join(d, "out")
    env = layer_env(scafd.socket, {"OMP_NUM_THREADS": "2", **QUIET})
    with open(out, "wb") as o:
        parent = subprocess.run([str(probe), "fork", stop, MAXSEC], check=False, stdout=o, env=env, timeout=60)
    assert parent.returncode == 0
    deadline = time.monotonic() + 15
    child = 0
    while time.monotonic() < deadline and not child:
        for ln in Path(out).read_text().splitlines():
            if ln.startswith("child="):
                child = int(ln.split()[0].split("=")[1])
        time.sleep(0.05)
    assert child, Path(out).read_text()
    try:
        # The parent's slot went with the parent (the child dropped the inherited connection);
        # the child connected anew, under its own pid.
        scafd.wait_for(
            lambda st: [c["pid"] for c in st["clients"]] == [child], what="only the child as a client"
        )
    finally:
        Path(stop).touch()
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline and "child_checksum=" not in Path(out).read_text():
        time.sleep(0.05)
    text = Path(out).read_text()
    assert "child_team=1" in text and "child_checksum=" in text, text
    # The plain child finds the stop file already there; capture_output waits for it too.
    plain = subprocess.run(
        [str(probe), "fork", stop, MAXSEC],
        check=False,
        env=plain_env({"OMP_NUM_THREADS": "2"}),
        capture_output=True,
        text=True,
    )
    assert plain.returncode == 0

    def sums(out: str) -> list[str]:
        return sorted(ln for ln in out.splitlines() if "checksum=" in ln)

    assert sums(text) == sums(plain.stdout), (text, plain.stdout)


# ---------------------------------------------------------------- identical results


def test_probe_checksum_identical_under_estimator_experiments(probe: Path, scafd: Daemon, probes: Callable[..., Probe]) -> None:
    """With another client present and SCAF_LAZY=0, the estimator runs baselines; results stay bit-identical."""
    other = probes(probe, ["follow", "STOP", MAXSEC], layer_env(scafd.socket, {"OMP_NUM_THREADS": "4", **NO_ESTIMATE}))
    scafd.wait_for(lambda st: client(st, other.pid) is not None, what="the other client")
    extra = {"OMP_NUM_THREADS": "4", **QUIET}
    plain = run(probe, ["sum"], plain_env(extra))
    for _ in range(2):
        under = run(probe, ["sum"], layer_env(scafd.socket, {**extra, "SCAF_LAZY": "0"}))
        assert (under.returncode, under.stdout) == (plain.returncode, plain.stdout)
    assert other.finish()[0] == 0


@pytest.mark.parametrize("name", ["cg", "ep", "fixed", "regions", "spin"])
def test_workload_checksum_identical_with_layer(name: str, scafd: Daemon, probes: Callable[..., Probe], probe: Path) -> None:
    exe = paths.workload(name)
    if not exe.exists():
        pytest.skip(f"{exe} not built")
    other = probes(probe, ["follow", "STOP", MAXSEC], layer_env(scafd.socket, {"OMP_NUM_THREADS": "2", **NO_ESTIMATE}))
    scafd.wait_for(lambda st: client(st, other.pid) is not None, what="the other client")
    extra = {"OMP_NUM_THREADS": "2", **QUIET}
    plain = run(exe, ["--size", "S"], plain_env(extra), timeout=120)
    under = run(exe, ["--size", "S"], layer_env(scafd.socket, {**extra, "SCAF_LAZY": "0"}), timeout=120)
    assert plain.returncode == under.returncode == 0, (plain.stdout, under.stdout, under.stderr)
    assert parse_result(under.stdout)["verified"] == "yes"

    def checksum(out: str) -> str:
        return next(ln for ln in out.splitlines() if ln.startswith("checksum="))

    assert checksum(plain.stdout) == checksum(under.stdout)
    assert other.finish()[0] == 0
