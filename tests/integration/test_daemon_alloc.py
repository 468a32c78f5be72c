"""scafd allocation end to end: real client connections and processes, pages, status, log, scoreboard, signals."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from conftest import ROOT, UNTIL_KILLED, Daemon, layer_env
from scaf.lib import paths
from support import wire

# A real client process: registers, says "ready ID", then holds its connection until stdin closes.
CLIENT_PY = r"""
import ctypes, sys
sys.path[:0] = [sys.argv[1] + "/python", sys.argv[1] + "/tests"]
from support import wire
name = sys.argv[4].encode()
if name:
    ctypes.CDLL(None).prctl(15, name, 0, 0, 0)  # PR_SET_NAME: what /proc/PID/comm shows
ballast = bytearray(int(sys.argv[5]) << 20)  # touched: its teardown at exit takes a while
sock, page, cid = wire.register(sys.argv[2], int(sys.argv[3]))
print("ready", cid, flush=True)
sys.stdin.read()
"""


class ClientProc:
    """A separate process that is a scafd client for as long as it lives."""

    def __init__(self, sock: str, max_threads: int = 8, name: bytes = b"", ballast_mb: int = 0,
                 process_group: int | None = None, new_session: bool = False):
        self.proc = subprocess.Popen(
            [sys.executable, "-c", CLIENT_PY, str(ROOT), sock, str(max_threads), name.decode(), str(ballast_mb)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, process_group=process_group,
            start_new_session=new_session,
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline().decode()
        assert line.startswith("ready"), f"client did not register: {line!r} {self.proc.stderr.read()!r}"
        self.id = int(line.split()[1])
        self.pid = self.proc.pid

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        for f in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            if f:
                f.close()


@pytest.fixture
def procs() -> Iterator[list[ClientProc]]:
    started: list[ClientProc] = []
    yield started
    for p in started:
        p.close()


def threads_by_id(st: dict) -> list[int]:
    return [c["threads"] for c in sorted(st["clients"], key=lambda c: c["id"])]


def log_lines(d: Daemon) -> list[dict]:
    with open(d.log) as f:
        return [json.loads(line) for line in f if line.strip()]


def test_arrival_and_departure_reallocate(scafd: Daemon) -> None:
    """--cpus 4, equipartition: 1 client -> 4; 2 -> 2+2; 3 -> 2+1+1; departures give the share back."""
    a, pa, _ = wire.register(scafd.socket, 8)
    # Allocation happens before WELCOME: the very first read of the page is the share.
    assert pa.threads == 4 and pa.control == wire.CONTROL_THREADS
    assert pa.u32("magic") == wire.PAGE_MAGIC and pa.u32("cpus") == 4 and pa.u32("nclients") == 1

    b, pb, _ = wire.register(scafd.socket, 8)
    assert (pa.threads, pb.threads) == (2, 2)
    c, pc, _ = wire.register(scafd.socket, 8)
    assert (pa.threads, pb.threads, pc.threads) == (2, 1, 1)
    assert pa.u32("nclients") == pb.u32("nclients") == pc.u32("nclients") == 3
    st = scafd.status()
    assert threads_by_id(st) == [2, 1, 1]
    # Pages and status agree, cpusets included (virtual contexts of --cpus 4 mapped onto real CPUs).
    for page, cl in zip((pa, pb, pc), sorted(st["clients"], key=lambda c: c["id"]), strict=True):
        assert page.cpuset() == cl["cpuset"] and cl["cpuset"]
        assert cl["pid"] == os.getpid()
    seq_before = pb.seq

    a.close()
    scafd.wait_for(lambda s: threads_by_id(s) == [2, 2], what="2+2 after the first client left")
    assert (pb.threads, pc.threads) == (2, 2)
    assert pb.seq > seq_before and pb.seq % 2 == 0, "seqlock: even after a write, and it moved"
    c.close()
    scafd.wait_for(lambda s: threads_by_id(s) == [4], what="4 for the last client")
    assert pb.threads == 4 and pb.u32("nclients") == 1
    b.close()
    scafd.wait_for(lambda s: s["clients"] == [], what="no clients")


def test_max_threads_caps_the_share(scafd: Daemon) -> None:
    s1, p1, _ = wire.register(scafd.socket, 1)
    s2, p2, _ = wire.register(scafd.socket, 8)
    assert p1.threads == 1, "never more threads than the program could have seen"
    assert 1 <= p2.threads <= 4
    s1.close()
    s2.close()


def test_wanted_caps_the_share_and_the_rest_goes_to_others(scafd: Daemon) -> None:
    """A client that says it can use fewer threads now (protocol 5's `wanted`: idle oneTBB permits) gets no
    more, and equipartition gives the rest to the other; 0 is no limit, and more than it may have changes nothing."""
    s1, p1, _ = wire.register(scafd.socket, 4)
    s2, p2, _ = wire.register(scafd.socket, 4)
    scafd.wait_for(lambda s: threads_by_id(s) == [2, 2], what="two equal shares")
    p1.set_u32("wanted", 1)
    st = scafd.wait_for(lambda s: threads_by_id(s) == [1, 3], what="the first client's contexts to the other")
    assert [c["wanted"] for c in sorted(st["clients"], key=lambda c: c["id"])] == [1, 0]
    assert p1.threads == 1 and p2.threads == 3
    p1.set_u32("wanted", 0)
    scafd.wait_for(lambda s: threads_by_id(s) == [2, 2], what="equal shares again without a limit")
    p1.set_u32("wanted", 99)
    st = scafd.wait_for(lambda s: [c["wanted"] for c in sorted(s["clients"], key=lambda c: c["id"])] == [99, 0],
                        what="a large wanted shown")
    assert threads_by_id(st) == [2, 2]
    s1.close()
    s2.close()


def test_nonmalleable_hello_gets_cpuset_control(scafd_factory: Callable[..., Daemon]) -> None:
    scafd = scafd_factory("--policy", "equipartition", "--cpus", "4", "--no-lookout", "--placement", "cpuset")
    s1, p1, _ = wire.register(scafd.socket, 3, flags=wire.HELLO_F_NONMALLEABLE)
    s2, p2, _ = wire.register(scafd.socket, 8)
    assert p1.control == wire.CONTROL_CPUSET
    assert p1.threads == 3, "a fixed team keeps its size; its share is a CPU set"
    # The fixed team is placed first, on as many contexts as it has threads (3 of 4); the
    # malleable client gets the rest.
    assert p2.control == wire.CONTROL_THREADS and p2.threads == 1
    st = scafd.status()
    fixed = next(c for c in st["clients"] if not c["malleable"])
    assert fixed["threads"] == 3 and fixed["cpuset"] == p1.cpuset() and fixed["cpuset"]
    assert fixed["share"] == 3 and len(set(fixed["cpuset"])) <= fixed["share"]
    other = next(c for c in st["clients"] if c["malleable"])
    assert other["share"] == other["threads"] == 1
    assert set(fixed["cpuset"]) <= set(range(os.cpu_count() or 1))
    s1.close()
    s2.close()


@pytest.mark.parametrize("placement", [["--placement", "kernel"], []], ids=["kernel", "default"])
def test_placement_kernel_leaves_a_fixed_team_that_fits_unconfined(scafd_factory, placement: list[str]) -> None:
    d = scafd_factory("--policy", "equipartition", "--cpus", "4", "--no-lookout", *placement)
    s1, p1, _ = wire.register(d.socket, 3, flags=wire.HELLO_F_NONMALLEABLE)
    s2, p2, _ = wire.register(d.socket, 8)
    try:
        # The same count as placed (3 of 4 for the team, the rest to the malleable client), but no CPU set:
        # where its threads run is the kernel's choice, as under OMP_NUM_THREADS=3 with nothing pinned.
        st = d.wait_for(lambda s: len(s["clients"]) == 2, what="both clients")
        fixed = next(c for c in st["clients"] if not c["malleable"])
        assert (fixed["threads"], fixed["share"], fixed["control"], fixed["cpuset"]) == (3, 3, "threads", []), fixed
        assert p1.control == wire.CONTROL_THREADS and p1.threads == 3 and p1.cpuset() == []
        assert p2.control == wire.CONTROL_THREADS and p2.threads == 1
        # No turns either: the teams fit.
        assert all(c["gang"] == 0 for c in st["clients"]), st["clients"]
    finally:
        s1.close()
        s2.close()


@pytest.mark.parametrize("bad", ["", "pinned", "CPUSET"])
def test_placement_takes_cpuset_or_kernel(bad: str) -> None:
    from scaf.lib import paths

    r = subprocess.run([str(paths.scafd()), "--placement", bad, "--socket", "/nonexistent/s"], capture_output=True,
                       text=True, timeout=10, check=False)
    assert r.returncode == 2 and "--placement" in r.stderr and "cpuset or kernel" in r.stderr, r.stderr


def test_page_flag_turns_client_nonmalleable(scafd_factory: Callable[..., Daemon]) -> None:
    """The layer marks a client non-malleable on its page at run time; the referee picks it up.
    A fixed team is never confined to fewer CPUs than it has threads: 6 on 4 contexts runs
    unconfined, 3 gets a CPU set of exactly 3 (--placement cpuset)."""
    scafd = scafd_factory("--policy", "equipartition", "--cpus", "4", "--no-lookout", "--placement", "cpuset")
    s, p, _ = wire.register(scafd.socket, 8)
    assert p.control == wire.CONTROL_THREADS and p.threads == 4
    p.set_u32("fixed_team", 6)
    p.set_u32("client_flags", wire.CLIENT_NONMALLEABLE)
    p.set_u64("regions", 1)  # the layer judges a team fixed at a region: one has opened
    st = scafd.wait_for(lambda s: s["clients"] and not s["clients"][0]["malleable"], what="non-malleable")
    scafd.wait_for(lambda s: p.threads == 6, what="the fixed team on the page")
    assert p.control == wire.CONTROL_THREADS and p.cpuset() == [], "a team of 6 on 4 contexts: unconfined"
    p.set_u32("fixed_team", 3)
    st = scafd.wait_for(lambda s: p.control == wire.CONTROL_CPUSET and s["clients"][0]["control"] == "cpuset",
                        what="the team of 3 placed")
    # 3 of the daemon's 4 contexts; --cpus 4 on a smaller machine lays them onto the real CPUs.
    assert p.threads == 3 and st["clients"][0]["share"] == 3, st["clients"][0]
    assert set(p.cpuset()) <= set(os.sched_getaffinity(0)) and len(p.cpuset()) == min(3, os.cpu_count() or 1)
    # A long region runs the team it started with (last_team) until it returns: placed like a fixed
    # team too. 3 + 2 do not fit 4 contexts, so the two take turns (gangs), each confined to no
    # fewer CPUs than its team.
    s2, p2, _ = wire.register(scafd.socket, 8)
    p2.set_u32("last_team", 2)
    p2.set_u32("client_flags", wire.CLIENT_LONG_REGION)
    st = scafd.wait_for(lambda s: any(c["long_region"] and c["rigid_team"] == 2 for c in s["clients"]),
                        what="the long region's team in status")
    st = scafd.wait_for(lambda s: sorted(c["gang"] for c in s["clients"]) == [1, 2], what="turns")
    assert p2.threads == 2 and p2.control == wire.CONTROL_THREADS, (p2.threads, p2.control)
    s.close()
    s2.close()


def test_client_fields_reach_status(scafd: Daemon) -> None:
    s, p, _ = wire.register(scafd.socket, 8)
    p.set_u32("last_team", 4)
    p.set_u32("eff_team", 4)
    p.set_u32("efficiency_ppm", 750000)
    p.set_u32("estimate", wire.ESTIMATE_MEASURED)
    p.set_u64("regions", 12345)
    p.set_u64("experiments", 7)
    st = scafd.status()
    (c,) = st["clients"]
    assert c["last_team"] == 4 and c["regions"] == 12345 and c["experiments"] == 7
    assert c["efficiency"] == pytest.approx(0.75) and c["estimate"] == "measured"
    # An estimate value the protocol does not know is treated as none, not trusted.
    p.set_u32("estimate", 99)
    c = scafd.status()["clients"][0]
    assert c["estimate"] == "none" and c["efficiency"] is None
    s.close()


TOP = {
    "version": int, "daemon_pid": int, "policy": str, "job": type(None), "cpus": int, "available": int,
    "foreign": float,
    "rate_hz": (int, float), "chunk": int, "time": float, "clients": list,
    "refused": int, "affinity": int, "limit": str, "cgroup": dict,
    "foreign_procs": list,
}
CLIENT = {
    "id": int, "pid": int, "uid": int, "program": int, "name": str, "threads": int, "share": int, "malleable": bool, "cpuset": list, "nlwp": int,
    "max_threads": int, "last_team": int, "regions": int, "efficiency": (float, type(None)), "coef": (int, float),
    "estimate": str, "long_region": bool, "experiments": int, "gang": int, "verdict": str, "verdict_source": str,
    "reason": str, "eff_threads": int, "probing": bool, "control": str, "rigid_team": int, "wanted": int,
    "memory": type(None), "start_team": int, "started_with": int, "idle": bool, "runtimes": list, "runtime_team": int,
}


def test_status_json_fields(scafd: Daemon, procs: list[ClientProc]) -> None:
    procs.append(ClientProc(scafd.socket, 5, b'we"ird\\na\x01me'))
    st = scafd.wait_for(lambda s: s["clients"] and s["clients"][0]["nlwp"] >= 1, what="nlwp sampled")
    assert set(st) == set(TOP)
    for k, t in TOP.items():
        assert isinstance(st[k], t), (k, st[k])
    assert st["version"] == wire.VERSION and st["daemon_pid"] == scafd.proc.pid
    assert st["cpus"] == 4 and st["available"] == 4 and st["foreign"] == 0.0
    assert st["policy"] == "equipartition" and st["rate_hz"] == 4 and st["chunk"] >= 1
    assert abs(st["time"] - time.time()) < 600
    (c,) = st["clients"]
    assert set(c) == set(CLIENT)
    for k, t in CLIENT.items():
        assert isinstance(c[k], t) and not (t is int and isinstance(c[k], bool)), (k, c[k])
    assert c["pid"] == procs[0].pid and c["id"] == procs[0].id and c["uid"] == os.getuid()
    assert st["refused"] == 0 and st["limit"] == "--cpus" and set(st["cgroup"]) == {"version", "quota", "quota_file"}
    # The kernel's name for the process (control bytes shown as '?'), escaped into valid JSON.
    assert c["name"] == 'we"ird\\na?me'
    assert c["max_threads"] == 5 and c["threads"] == 4 and c["malleable"] is True
    assert c["estimate"] == "none" and c["efficiency"] is None


def test_sigkilled_client_share_goes_to_the_others(scafd: Daemon, procs: list[ClientProc]) -> None:
    s, p, _ = wire.register(scafd.socket, 8)
    victim = ClientProc(scafd.socket)
    procs.append(victim)
    assert p.threads == 2
    assert {c["pid"] for c in scafd.status()["clients"]} == {os.getpid(), victim.pid}
    os.kill(victim.pid, signal.SIGKILL)
    victim.proc.wait()
    st = scafd.wait_for(lambda s: len(s["clients"]) == 1, what="the killed client gone")
    # Departure and reallocation happen in the same loop turn: no status ever shows the dead
    # client gone but its share not yet handed back.
    assert st["clients"][0]["threads"] == 4 and p.threads == 4
    last = log_lines(scafd)[-1]
    assert [c["pid"] for c in last["clients"]] == [os.getpid()] and last["clients"][0]["threads"] == 4
    s.close()


def test_clients_that_end_together_leave_in_one_turn(scafd: Daemon, procs: list[ClientProc]) -> None:
    """Two programs of one process group killed at once (a job cancelled, a pipeline stopped) leave the
    daemon in one referee turn: no log line shows one of them gone and the other still holding a share.
    One of them holds 512 MiB, so that the kernel closes its socket well after the other's."""
    s, p, _ = wire.register(scafd.socket, 8)
    small = ClientProc(scafd.socket, process_group=0)
    procs.append(small)
    big = ClientProc(scafd.socket, ballast_mb=512, process_group=small.pid)
    procs.append(big)
    pids = {small.pid, big.pid}
    scafd.wait_for(lambda st: {c["pid"] for c in st["clients"]} == pids | {os.getpid()}, what="three clients")
    os.killpg(small.pid, signal.SIGKILL)
    for c in (small, big):
        c.proc.wait()
    st = scafd.wait_for(lambda st: len(st["clients"]) == 1, what="both killed clients gone")
    assert st["clients"][0]["threads"] == 4 and p.threads == 4
    seen = [{c["pid"] for c in ln["clients"]} & pids for ln in log_lines(scafd)]
    last_both = max(i for i, x in enumerate(seen) if x == pids)
    assert seen[last_both + 1:] == [set()], f"the two left in separate turns: {seen}"
    s.close()


def test_programs_of_a_session_killed_one_at_a_time_leave_in_one_turn(
        scafd_factory: Callable[..., Daemon], procs: list[ClientProc]) -> None:
    """A job scheduler ends a job one kill() at a time (Slurm walks the job's processes), and on a busy
    machine the first program can be gone before the second is even signalled. A program of another
    session stays: the two killed ones still leave in one turn, and it gets their CPUs in one step."""
    d = scafd_factory("--policy", "equipartition", "--cpus", "4", "--no-lookout")
    other = ClientProc(d.socket, new_session=True)
    procs.append(other)
    first = ClientProc(d.socket)
    procs.append(first)
    second = ClientProc(d.socket)
    procs.append(second)
    pids = {first.pid, second.pid}
    d.wait_for(lambda st: {c["pid"] for c in st["clients"]} == pids | {other.pid}, what="three clients")
    os.kill(first.pid, signal.SIGKILL)
    first.proc.wait()
    time.sleep(0.05)  # the scheduler's kill loop, preempted between two kill()s
    os.kill(second.pid, signal.SIGKILL)
    second.proc.wait()
    st = d.wait_for(lambda st: len(st["clients"]) == 1, what="both killed clients gone")
    assert st["clients"][0]["pid"] == other.pid and st["clients"][0]["threads"] == 4
    seen = [{c["pid"] for c in ln["clients"]} & pids for ln in log_lines(d)]
    last_both = max(i for i, x in enumerate(seen) if x == pids)
    assert seen[last_both + 1:] == [set()], f"the two left in separate turns: {seen}"


def test_a_program_that_exits_is_not_waited_for_but_a_killed_one_is(
        scafd_factory: Callable[..., Daemon], procs: list[ClientProc], tmp_path: Path) -> None:
    """The layer marks its page when the program ends through exit(): the daemon then hands its share
    back at once, while a program of the same session runs on. A killed program's departure is held
    for the rest of its session ("departures settled" at -vv), here in vain: its sibling runs on."""
    d = scafd_factory("--policy", "equipartition", "--cpus", "4", "--no-lookout", "-vv")
    sibling = ClientProc(d.socket)
    procs.append(sibling)
    env = layer_env(d.socket)
    done = subprocess.run([str(paths.workload("ep")), "--size", "S"], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert any(c["pid"] != sibling.pid for ln in log_lines(d) for c in ln["clients"]), "ep never was a client"
    d.wait_for(lambda st: [c["pid"] for c in st["clients"]] == [sibling.pid], what="ep gone")
    assert "departures settled" not in d.stderr(), d.stderr()
    spin = subprocess.Popen([str(paths.workload("spin")), "--size", "A", *UNTIL_KILLED], env=env, cwd=tmp_path,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        d.wait_for(lambda st: spin.pid in {c["pid"] for c in st["clients"]}, what="spin a client")
    finally:
        spin.kill()
        spin.wait()
    d.wait_for(lambda st: [c["pid"] for c in st["clients"]] == [sibling.pid], what="spin gone")
    assert "departures settled" in d.stderr(), d.stderr()


def test_full_table_refused(scafd_factory: Callable[..., Daemon]) -> None:
    d = scafd_factory("--policy", "equipartition", "--cpus", "4", "--no-lookout", "--max-clients", "2")
    a, _, _ = wire.register(d.socket, 4)
    b, _, _ = wire.register(d.socket, 4)
    with pytest.raises(wire.Refused) as e:
        wire.register(d.socket, 4)
    assert e.value.reason == wire.REFUSE_FULL and "full" in e.value.text
    assert "refused" in d.stderr() and "full" in d.stderr()
    assert len(d.status()["clients"]) == 2, "status still answers with a full table"
    a.close()
    d.wait_for(lambda s: len(s["clients"]) == 1, what="a free slot")
    c, pc, _ = wire.register(d.socket, 4)
    assert pc.threads == 2
    b.close()
    c.close()


def test_log_one_line_per_change(scafd: Daemon) -> None:
    s1, _, _ = wire.register(scafd.socket, 8)
    s2, _, _ = wire.register(scafd.socket, 8)
    s1.close()
    scafd.wait_for(lambda s: len(s["clients"]) == 1, what="departure")
    lines = log_lines(scafd)
    assert [[c["threads"] for c in ln["clients"]] for ln in lines] == [[4], [2, 2], [4]]
    for ln in lines:
        assert {"time", "cpus", "available", "policy", "clients"} <= set(ln)
        for c in ln["clients"]:
            assert {"pid", "name", "threads", "malleable", "cpuset"} <= set(c)
    assert lines[0]["time"] <= lines[1]["time"] <= lines[2]["time"]
    # The referee keeps running at 4 Hz; with nothing changing it writes nothing.
    time.sleep(1.0)
    assert len(log_lines(scafd)) == 3
    s2.close()
    scafd.wait_for(lambda s: not s["clients"], what="empty")
    assert log_lines(scafd)[-1]["clients"] == []


def test_scoreboard(scafd_factory: Callable[..., Daemon], procs: list[ClientProc]) -> None:
    d = scafd_factory("--policy", "equipartition", "--cpus", "4", "--no-lookout", "-t", "0.2")
    procs.append(ClientProc(d.socket, 8, b"boardtest"))
    procs.append(ClientProc(d.socket, 8, b"other"))
    d.wait_for(lambda s: all(c["nlwp"] >= 1 for c in s["clients"]), what="nlwp")

    def board() -> list[list[str]] | None:
        # stdout and stderr share one file in the fixture: take the last complete table.
        text = d.stderr()
        tables = re.findall(r"^ +PID NAME +THREADS +NLWP\n((?:.+\n)*?) +all +\d+ +\d+\n", text, re.MULTILINE)
        return [row.split() for row in tables[-1].splitlines()] if tables else None

    deadline = time.monotonic() + 10
    rows = None
    while time.monotonic() < deadline:
        rows = board()
        if rows and len(rows) == 2 and all(int(r[3]) >= 1 for r in rows):
            break
        time.sleep(0.1)
    assert rows and len(rows) == 2, d.stderr()
    by_pid = {int(r[0]): r for r in rows}
    assert set(by_pid) == {p.pid for p in procs}
    assert by_pid[procs[0].pid][1] == "boardtest" and by_pid[procs[0].pid][2] == "2"
    all_row = re.findall(r"^ +all +(\d+) +(\d+)$", d.stderr(), re.MULTILINE)[-1]
    assert int(all_row[0]) == 4 and int(all_row[1]) >= 2


def known_policies() -> list[str]:
    r = subprocess.run(
        [str(paths.scafd()), "--policy", "no-such-policy"], capture_output=True, text=True, timeout=10, check=False
    )
    assert r.returncode == 2
    m = re.search(r"unknown policy 'no-such-policy' \(known: ([^)]*)\)", r.stderr)
    assert m, r.stderr
    return m.group(1).split()


def test_sigusr1_cycles_policies(scafd: Daemon) -> None:
    names = known_policies()
    assert "equipartition" in names
    start = names.index("equipartition")
    seen = []
    for k in range(1, len(names) + 1):
        os.kill(scafd.proc.pid, signal.SIGUSR1)
        want = names[(start + k) % len(names)]
        scafd.wait_for(lambda s, w=want: s["policy"] == w and f"policy is now {w}" in scafd.stderr(),
                       what=f"policy {want}")
        seen.append(want)
        assert scafd.alive()
    assert seen[-1] == "equipartition" and set(seen) == set(names)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_signal_exit_removes_socket(scafd: Daemon, sig: int) -> None:
    s, _, _ = wire.register(scafd.socket, 4)
    assert os.path.exists(scafd.socket)
    assert scafd.stop(sig) == 0
    assert not os.path.exists(scafd.socket)
    assert s.recv(1) == b"", "clients see the connection close"
    s.close()


def test_idle_exit(scafd_factory: Callable[..., Daemon]) -> None:
    d = scafd_factory("--policy", "equipartition", "--cpus", "4", "--no-lookout", "--idle-exit", "0.5")
    s, _, _ = wire.register(d.socket, 4)
    time.sleep(1.0)
    assert d.alive(), "a daemon with a client never idles out"
    s.close()
    assert d.proc.wait(timeout=10) == 0
    assert not os.path.exists(d.socket)
    assert "--idle-exit" in d.stderr()
