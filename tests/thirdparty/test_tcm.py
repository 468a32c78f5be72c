"""oneTBB steered through the Thread Composability Manager interface: real oneTBB (pip's tbb wheel), real daemons.

The programs are tests/progs/tbb_for.cpp and tbb_reduce.cpp, built by `make` with g++ against the pinned
tbb-devel wheel. Each prints, for every round, how many distinct threads ran its chunks and the round's
exact result. Every check reads what the program itself saw next to what the daemon says in its status,
over a window of rounds (never one lucky moment); results are compared with plain runs. The daemon
believes the machine has 2 contexts, so one client alone gets 2 and two get 1 each. No timing is asserted.
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
from scaf.lib import paths, runtimes

TBB_DIR = paths.build_dir() / "tbb"
FOR = TBB_DIR / "tbb_for"
REDUCE = TBB_DIR / "tbb_reduce"
MIXED = TBB_DIR / "tbb_omp"
VENV_LIB = paths.build_dir() / "venv" / "lib"
N = "1000000"
QUIET = {"OMP_WAIT_POLICY": "passive", "SCAF_ESTIMATE": "0"}


def plain_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD" and not k.startswith(("SCAF_", "TCM_"))}
    env.update(extra or {})
    return env


def rounds(text: str) -> list[dict[str, str]]:
    """Each round's fields; tbb_omp prints its OpenMP team (`team=M`) on the line before its round."""
    out: list[dict[str, str]] = []
    team = None
    for ln in text.splitlines():
        if ln.startswith("team="):
            team = ln[5:]
        elif ln.startswith("round="):
            out.append(dict(kv.split("=", 1) for kv in ln.split()))
            if team is not None:
                out[-1]["team"] = team
            team = None
    return out


@pytest.fixture(scope="module", autouse=True)
def built() -> None:
    missing = [p for p in (FOR, REDUCE, MIXED) if not p.exists()]
    assert not missing, f"{missing} not built: run make (tools/deps build installs g++)"


class Tbb:
    """One TBB test program, under `scaf run` on SOCKET (or plain when None), stopped through a stop file."""

    def __init__(self, exe: Path, socket: str | None, env: dict[str, str] | None = None,
                 argv: list[str] | None = None):
        self.exe = exe
        self.dir = short_tmpdir()
        self.stop_file = os.path.join(self.dir, "stop")
        self.idle_file = os.path.join(self.dir, "idle")  # no round starts while it exists
        self.out = os.path.join(self.dir, "out")
        self.err = os.path.join(self.dir, "err")
        self.script: str | None = None
        if argv is not None:  # another program with the same output (numba_tbb.py): ARGV, then --stop FILE
            self.script = argv[1]
            argv = [*argv, "--stop", self.stop_file]
        else:
            argv = [str(exe), "--n", N, "--rounds", "3", "--stop", self.stop_file, "--idle", self.idle_file]
        if socket is not None:
            argv = [str(SCAF), "run", "--no-start", "--socket", socket, "--", *argv]
        with open(self.out, "wb") as o, open(self.err, "wb") as e:
            self.proc = subprocess.Popen(argv, stdout=o, stderr=e, env=plain_env({**QUIET, **(env or {})}))

    def text(self) -> str:
        with open(self.out, encoding="utf-8") as f:
            return f.read()

    def stderr(self) -> str:
        with open(self.err, encoding="utf-8") as f:
            return f.read()

    def rounds(self) -> list[dict[str, str]]:
        return rounds(self.text())

    def wait_rounds(self, pred: Callable[[list[dict[str, str]]], bool], what: str, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if pred(self.rounds()):
                return
            if self.proc.poll() is not None:
                break
            time.sleep(0.05)
        pytest.fail(f"{what}: exit {self.proc.poll()}, output {self.text()[-2000:]}\nstderr: {self.stderr()[-2000:]}")

    def more(self, k: int, what: str) -> list[dict[str, str]]:
        """The next k rounds from now (the first one may have started before now: dropped)."""
        mark = len(self.rounds())
        self.wait_rounds(lambda rs: len(rs) >= mark + k + 1, what)
        return self.rounds()[mark + 1:]

    def pid(self) -> int:
        """The program's own pid: the child of `scaf run` that runs EXE."""
        if self.proc.args[0] == str(self.exe):
            return self.proc.pid
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                with open(f"/proc/{self.proc.pid}/task/{self.proc.pid}/children") as f:
                    kids = [int(x) for x in f.read().split()]
            except OSError:
                kids = []
            for k in kids:
                try:
                    if os.readlink(f"/proc/{k}/exe") != str(self.exe):
                        continue
                    # A python script: `scaf run` (python too) forks briefly for ldconfig; argv[1] tells them apart.
                    with open(f"/proc/{k}/cmdline", "rb") as f:
                        cmd = f.read().split(b"\0")
                    if self.script is None or (len(cmd) > 1 and cmd[1] == self.script.encode()):
                        return k
                except OSError:
                    pass
            time.sleep(0.05)
        pytest.fail(f"scaf run started no {self.exe.name}: {self.stderr()[-2000:]}")

    def stop(self) -> list[dict[str, str]]:
        Path(self.stop_file).touch()
        try:
            rc = self.proc.wait(timeout=120)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            pytest.fail(f"{self.exe.name} did not stop: {self.stderr()[-2000:]}")
        assert rc == 0, self.stderr()
        assert "done rounds=" in self.text(), self.text()[-500:]
        return self.rounds()

    def kill(self) -> None:
        """SIGTERM to `scaf run`, which passes it on (SIGKILL would orphan the program)."""
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


@pytest.fixture
def procs() -> Iterator[list[Tbb]]:
    started: list[Tbb] = []
    yield started
    for p in started:
        p.kill()


@pytest.fixture(scope="module")
def plain() -> dict[str, tuple[str, int]]:
    """Each program's result in a plain run (no scaf, Intel's TCM beside libtbb as pip installs it), and the
    most threads one of its rounds used."""
    got = {}
    for exe in (FOR, REDUCE, MIXED):
        r = subprocess.run([str(exe), "--n", N, "--rounds", "4"], capture_output=True, text=True, timeout=300,
                           env=plain_env(), check=False)
        assert r.returncode == 0, r.stderr
        rs = rounds(r.stdout)
        assert len(rs) == 4 and len({x["result"] for x in rs}) == 1, r.stdout
        got[exe.name] = (rs[0]["result"], max(int(x["threads"]) for x in rs))
    return got


def client_of(st: dict, pid: int) -> dict | None:
    return next((c for c in st.get("clients", []) if c.get("pid") == pid), None)


def at(d: Daemon, pids: list[int], n: int, what: str) -> dict:
    """Waits until every pid is a client given n threads and showing n as its team (1 + the permit's workers)."""
    return d.wait_for(lambda st: all((c := client_of(st, p)) is not None and c["threads"] == n and c["last_team"] == n
                                     for p in pids), timeout=60, what=what)


def mostly(rs: list[dict[str, str]], n: int, share: float = 0.9, key: str = "threads") -> None:
    seen = [int(x[key]) for x in rs]
    assert sum(t == n for t in seen) >= share * len(seen), f"threads per round {seen}, expected mostly {n}"


def same_results(rs: list[dict[str, str]], expect: str) -> None:
    bad = [x for x in rs if x["result"] != expect]
    assert not bad, f"{len(bad)} of {len(rs)} rounds differ from the plain run ({expect}): first {bad[0]}"


def test_run_chooses_the_provider_for_onetbb_with_tcm() -> None:
    """The pip wheel's oneTBB asks a TCM (2021.11 and later): scaf run preloads libscaf_tcm.so, and no warning."""
    choice = runtimes.choose(str(FOR))
    assert choice.tcm and choice.warning is None, choice
    assert "through libscaf_tcm.so" in choice.runtime, choice
    tbb = next(w for s, w in runtimes.dependencies(str(FOR)).found.items() if s.startswith("libtbb"))
    info = runtimes.tbb_info(tbb)
    assert info.tcm and info.version, info
    out = subprocess.run(["readelf", "-d", str(paths.tcm_provider())], capture_output=True, text=True,
                         check=True).stdout
    assert "Library soname: [libtcm.so.1]" in out, out


def test_scafs_provider_is_the_one_onetbb_gets(scafd_factory: Callable[..., Daemon], procs: list[Tbb]) -> None:
    """Intel's libtcm.so.1 sits beside libtbb.so.12 (tcmlib, a dependency of the tbb wheel). With that folder
    in LD_LIBRARY_PATH a plain oneTBB loads Intel's (disabled without TCM_ENABLE); under scaf run oneTBB gets
    libscaf_tcm.so all the same, and Intel's library is never even mapped."""
    assert (VENV_LIB / "libtcm.so.1").exists(), "tcmlib's libtcm.so.1 should be in the venv beside libtbb"
    intel = {"TBB_VERSION": "1", "LD_LIBRARY_PATH": str(VENV_LIB)}
    r = subprocess.run([str(FOR), "--n", "1000", "--rounds", "1"], capture_output=True, text=True, timeout=120,
                       env=plain_env(intel), check=False)
    assert r.returncode == 0 and "TCM: VERSION" in r.stderr, r.stderr
    d = scafd_factory("--policy", "equipartition", "--cpus", "2", "--no-lookout")
    a = Tbb(FOR, d.socket, intel)
    procs.append(a)
    pa = a.pid()
    at(d, [pa], 2, "the TBB program as a client at 2 threads")
    with open(f"/proc/{pa}/maps") as f:
        maps = f.read()
    assert "libscaf_tcm.so" in maps
    assert not [ln for ln in maps.splitlines() if "/libtcm" in ln], "Intel's TCM was loaded"
    a.stop()
    assert "TCM: scaf's provider" in a.stderr(), a.stderr()[-2000:]


def test_two_tbb_programs_share_the_cpus(scafd_factory: Callable[..., Daemon], procs: list[Tbb],
                                         plain: dict[str, tuple[str, int]]) -> None:
    """Each TBB program is a client; A's workers follow its share 1 -> 2 -> 1 as others come and go, in the
    daemon's status and in the threads its rounds used; every result is the plain run's."""
    d = scafd_factory("--policy", "equipartition", "--cpus", "2", "--no-lookout")
    b = Tbb(REDUCE, d.socket)
    procs.append(b)
    pb = b.pid()
    at(d, [pb], 2, "the first program alone at 2 threads")
    b.wait_rounds(lambda rs: len(rs) >= 2, "the first program's rounds")

    a = Tbb(FOR, d.socket)
    procs.append(a)
    pa = a.pid()
    st = at(d, [pa, pb], 1, "both programs at 1 thread")
    assert client_of(st, pa)["regions"] == 0, "no OpenMP region ran: the TCM permit alone made it a client"
    mostly(a.more(6, "A's rounds beside B"), 1)
    mostly(b.more(3, "B's rounds beside A"), 1)

    got_b = b.stop()
    at(d, [pa], 2, "A alone at 2 threads")
    mostly(a.more(6, "A's rounds alone"), 2, share=0.5)

    c = Tbb(FOR, d.socket)
    procs.append(c)
    pc = c.pid()
    at(d, [pa, pc], 1, "A and C at 1 thread")
    mostly(a.more(6, "A's rounds beside C"), 1)

    got_a = a.stop()
    got_c = c.stop()
    assert {x["threads"] for x in got_a} >= {"1", "2"}, [x["threads"] for x in got_a]
    same_results(got_a, plain["tbb_for"][0])
    same_results(got_c, plain["tbb_for"][0])
    same_results(got_b, plain["tbb_reduce"][0])


def test_tbb_beside_an_openmp_program(scafd_factory: Callable[..., Daemon], procs: list[Tbb],
                                      plain: dict[str, tuple[str, int]], tmp_path: Path) -> None:
    """A TBB program and an OpenMP workload are two clients of one daemon: the TBB workers follow the share
    2 -> 1 -> 2 while the OpenMP program's teams get the other context."""
    d = scafd_factory("--policy", "equipartition", "--cpus", "2", "--no-lookout")
    a = Tbb(FOR, d.socket)
    procs.append(a)
    pa = a.pid()
    at(d, [pa], 2, "the TBB program alone at 2 threads")
    mostly(a.more(4, "A's rounds alone"), 2, share=0.5)

    o, stop = start_omp(d, tmp_path)
    try:
        st = d.wait_for(lambda st: len(st.get("clients", [])) == 2 and all(c["threads"] == 1 for c in st["clients"]),
                        timeout=60, what="the TBB and the OpenMP program at 1 thread each")
        po = next(c["pid"] for c in st["clients"] if c["pid"] != pa)
        at(d, [pa], 1, "the TBB program showing 1 thread")
        mostly(a.more(6, "A's rounds beside the OpenMP program"), 1)
        d.wait_for(lambda st: (c := client_of(st, po)) is not None and c["last_team"] == 1 and c["regions"] > 0,
                   timeout=60, what="the OpenMP program's regions at 1 thread")
    finally:
        Path(stop).touch()
        rc = o.wait(timeout=60)
    assert rc == 0
    at(d, [pa], 2, "the TBB program alone again at 2 threads")
    mostly(a.more(6, "A's rounds alone again"), 2, share=0.5)
    same_results(a.stop(), plain["tbb_for"][0])


def test_no_daemon_is_plain_onetbb(procs: list[Tbb], plain: dict[str, tuple[str, int]]) -> None:
    """No daemon: scaf's TCM refuses the connection as a TCM that is not enabled does, and oneTBB runs its
    own market: the same threads per round and the same results as a plain run."""
    nowhere = os.path.join(short_tmpdir(), "none.sock")
    for exe in (FOR, REDUCE):
        a = Tbb(exe, nowhere, {"SCAF_VERBOSE": "1"})
        procs.append(a)
        got = a.stop()
        same_results(got, plain[exe.name][0])
        assert max(int(x["threads"]) for x in got) == plain[exe.name][1], [x["threads"] for x in got]
        assert "TCM connect: no daemon" in a.stderr(), a.stderr()[-2000:]


def test_a_process_with_tbb_and_openmp_is_one_client(scafd_factory: Callable[..., Daemon], procs: list[Tbb],
                                                     plain: dict[str, tuple[str, int]]) -> None:
    """tbb_omp runs a TBB parallel_for and then an OpenMP region each round: one client, whose share both
    runtimes follow in turn (2 alone, 1 beside another TBB program), with the plain run's results."""
    d = scafd_factory("--policy", "equipartition", "--cpus", "2", "--no-lookout")
    m = Tbb(MIXED, d.socket)
    procs.append(m)
    pm = m.pid()
    st = d.wait_for(lambda st: (c := client_of(st, pm)) is not None and c["threads"] == 2 and c["regions"] > 0,
                    timeout=60, what="the mixed program as one client at 2 threads, with OpenMP regions")
    assert [c["pid"] for c in st["clients"]] == [pm], st["clients"]
    alone = m.more(6, "the mixed program's rounds alone")
    mostly(alone, 2, share=0.5)
    mostly(alone, 2, share=0.5, key="team")

    a = Tbb(FOR, d.socket)
    procs.append(a)
    pa = a.pid()
    d.wait_for(lambda st: all((c := client_of(st, p)) is not None and c["threads"] == 1 for p in (pm, pa)),
               timeout=60, what="both programs at 1 thread")
    beside = m.more(6, "the mixed program's rounds beside another")
    mostly(beside, 1)
    mostly(beside, 1, key="team")
    a.stop()
    same_results(m.stop(), plain["tbb_omp"][0])


def start_omp(d: Daemon, tmp_path: Path, env: dict[str, str] | None = None) -> tuple[subprocess.Popen[bytes], str]:
    """tests/progs/omp_probe.c (gcc, libgomp) under scaf run, following the allocation until its stop file."""
    omp = tmp_path / "omp_probe"
    subprocess.run(["gcc", "-fopenmp", "-O2", "-o", str(omp), str(Path(__file__).parents[1] / "progs" / "omp_probe.c")],
                   check=True)
    stop = os.path.join(short_tmpdir(), "stop")
    with open(os.path.join(os.path.dirname(stop), "out"), "wb") as out:
        o = subprocess.Popen([str(SCAF), "run", "--no-start", "--socket", d.socket, "--", str(omp), "follow", stop,
                              "120"], stdout=out, stderr=subprocess.DEVNULL, env=plain_env({**QUIET, **(env or {})}))
    return o, stop


def test_an_idle_tbb_program_leaves_its_share_to_others(scafd_factory: Callable[..., Daemon], procs: list[Tbb],
                                                       plain: dict[str, tuple[str, int]], tmp_path: Path) -> None:
    """While a TBB program does no parallel work its permit does not work: after a second it says it wants
    1 thread (`wanted`), and the OpenMP program beside it gets that context too; when it works again it asks
    its share back. The daemon believes in 4 contexts and the OpenMP program may run 3 (every client keeps
    at least 1, so on 2 contexts an idle client would free nothing)."""
    d = scafd_factory("--policy", "equipartition", "--cpus", "4", "--no-lookout")
    a = Tbb(FOR, d.socket)
    procs.append(a)
    pa = a.pid()
    at(d, [pa], 2, "the TBB program alone at 2 threads (its bound)")
    o, stop = start_omp(d, tmp_path, {"OMP_NUM_THREADS": "3"})
    try:
        st = d.wait_for(lambda st: len(st.get("clients", [])) == 2 and all(c["threads"] == 2 for c in st["clients"]),
                        timeout=60, what="both programs at 2 threads")
        po = next(c["pid"] for c in st["clients"] if c["pid"] != pa)
        a.wait_rounds(lambda rs: len(rs) >= 2, "A's rounds")

        Path(a.idle_file).touch()
        d.wait_for(lambda st: (c := client_of(st, pa)) is not None and c["wanted"] == 1 and c["threads"] == 1
                   and (o_ := client_of(st, po)) is not None and o_["threads"] == 3 and o_["last_team"] == 3,
                   timeout=60, what="the idle TBB program wanting 1 thread, the OpenMP program at 3")
        idle_rounds = len(a.rounds())

        os.unlink(a.idle_file)
        d.wait_for(lambda st: (c := client_of(st, pa)) is not None and c["wanted"] >= 2 and c["threads"] == 2
                   and (o_ := client_of(st, po)) is not None and o_["threads"] == 2,
                   timeout=60, what="the TBB program working again, both at 2 threads")
        mostly(a.more(4, "A's rounds after its pause"), 2, share=0.5)
        assert len(a.rounds()) > idle_rounds
    finally:
        Path(stop).touch()
        rc = o.wait(timeout=60)
    assert rc == 0
    same_results(a.stop(), plain["tbb_for"][0])


NUMBA = Path(__file__).parents[1] / "progs" / "numba_tbb.py"
NUMBA_N = "4000000"  # rounds long enough for the worker to join on a busy 2-core machine


def test_numba_on_tbb_follows_the_share(scafd_factory: Callable[..., Daemon], procs: list[Tbb]) -> None:
    """numba's prange on its tbb threading layer (pip's numba and tbb): python under scaf run gets the TCM
    provider, numba's oneTBB becomes a client, and the threads its rounds ran on follow the share 2 -> 1 -> 2,
    with the plain run's results. numba's tbbpool extension has no RPATH and pip's tbb wheel installs
    libtbb.so.12 into the venv's lib/, off the loader's path: without LD_LIBRARY_PATH it would load the
    system's (Debian's 2021.8, which asks no TCM)."""
    env = {"NUMBA_THREADING_LAYER": "tbb", "LD_LIBRARY_PATH": str(VENV_LIB)}
    r = subprocess.run([sys.executable, str(NUMBA), NUMBA_N, "2"], capture_output=True, text=True, timeout=300,
                       env=plain_env(env), check=False)
    assert r.returncode == 0 and "layer=tbb" in r.stdout, r.stdout + r.stderr
    plain_result = rounds(r.stdout)[0]["result"]

    d = scafd_factory("--policy", "equipartition", "--cpus", "2", "--no-lookout")
    py = Path(os.path.realpath(sys.executable))
    m = Tbb(py, d.socket, env, argv=[sys.executable, str(NUMBA), NUMBA_N, "3"])
    procs.append(m)
    pm = m.pid()
    st = at(d, [pm], 2, "the numba process as a client at 2 threads")
    assert client_of(st, pm)["regions"] == 0, "numba's OpenMP layer is not in use: the TCM permit made it a client"
    mostly(m.more(4, "numba's rounds alone"), 2, share=0.5)

    a = Tbb(FOR, d.socket)
    procs.append(a)
    pa = a.pid()
    at(d, [pm, pa], 1, "numba and a TBB program at 1 thread each")
    mostly(m.more(4, "numba's rounds beside the TBB program"), 1)
    a.stop()
    at(d, [pm], 2, "numba alone again at 2 threads")
    mostly(m.more(4, "numba's rounds alone again"), 2, share=0.5)
    same_results(m.stop(), plain_result)


def test_numba_found_before_its_tbbpool_follows_once_it_loads(scafd_factory: Callable[..., Daemon],
                                                             procs: list[Tbb], tmp_path: Path) -> None:
    """The order the layer once missed: numba already found (its workqueue extension loaded), then another
    oneTBB user opens the TCM permit, and only then numba's tbbpool loads. The scan that finds tbbpool adds no
    runtime, yet it is what makes numba's pool run on a TCM-asking oneTBB: the page must say numba follows its
    share (before, it said so only when a scan added a runtime or when the first permit opened, and numba was
    planned as a fixed team until it reconnected)."""
    kick = tmp_path / "libtbb_kick.so"
    subprocess.run(["g++", "-std=c++17", "-O2", "-shared", "-fPIC", "-isystem", str(VENV_LIB.parent / "include"),
                    str(Path(__file__).parents[1] / "progs" / "tbb_kick.cpp"), "-o", str(kick),
                    f"-L{VENV_LIB}", "-l:libtbb.so.12", f"-Wl,-rpath,{VENV_LIB}", "-pthread"], check=True)
    go = tmp_path / "go"
    env = {"NUMBA_THREADING_LAYER": "tbb", "LD_LIBRARY_PATH": str(VENV_LIB), "NUMBA_TBB_KICK": str(kick),
           "NUMBA_TBB_GO": str(go)}
    d = scafd_factory("--policy", "equipartition", "--cpus", "2", "--no-lookout")
    py = Path(os.path.realpath(sys.executable))
    m = Tbb(py, d.socket, env, argv=[sys.executable, str(NUMBA), NUMBA_N, "3"])
    procs.append(m)
    pm = m.pid()

    def numba(st: dict) -> dict | None:
        c = client_of(st, pm)
        return next((r for r in (c or {}).get("runtimes") or [] if r.get("name") == "numba"), None)

    st = d.wait_for(lambda st: numba(st) is not None, timeout=60, what="numba found (its workqueue), no permit yet")
    assert not numba(st)["follows"], "numba's workqueue keeps the count it read"
    go.touch()
    m.wait_rounds(lambda rs: len(rs) >= 2, "numba's rounds on tbb after another oneTBB user's permit")
    assert "kicked" in Path(m.out).read_text()
    d.wait_for(lambda st: (r := numba(st)) is not None and r["follows"], timeout=60,
               what="numba following its share once its tbbpool loaded")
    m.stop()

