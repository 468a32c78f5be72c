"""The daemon's memory of programs (docs/memory.md): real daemons, real sockets, real files.

Clients are raw (tests/support/wire.py): they say HELLO with a program's key, read
the memory the daemon wrote on their page, and write what a layer would have
learned (learned[], the verdict) before they leave. MEMORY requests go through
scaf's own client (scaf.lib.proto.memory). Every condition a test judges is made
by the test: a departure is waited for in the status, a file by stopping the
daemon, a killed write by the daemon's own death.
"""

from __future__ import annotations

import contextlib
import os
import signal
import stat
import struct
import subprocess
import sys
import threading
import time
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from conftest import ROOT, Daemon, daemon_binaries, short_tmpdir
from scaf.lib import proto
from support import wire

BINARIES = daemon_binaries()
IDS = ["plain" if i == 0 else "asan" for i in range(len(BINARIES))]

KEY_A, KEY_B, KEY_C = 0xA11CE, 0xB0B, 0xC0FFEE
SITES = [(0x5EED, 0x1230, wire.MEMO_CLEAN), (0x5EED, 0x4560, wire.MEMO_FIXES)]
HEADER = struct.Struct("=QIIIIII")  # struct scaf_memfile_header: magic, version, record_size, count, crc, uid, rsvd
RECORD_SIZE = 1352


def memfile(d: Daemon, uid: int | None = None) -> Path:
    return Path(d.state_dir) / f"memory-{os.getuid() if uid is None else uid}.bin"


def recall(d: Daemon, key: int, max_threads: int = 4) -> proto.MemoryReply:
    return proto.memory(d.socket, proto.MEMORY_RECALL, key, max_threads)


def wait_clients(d: Daemon, n: int) -> dict:
    """The status once exactly n clients are left: a departure the daemon has acted on (and learned)."""
    return d.wait_for(lambda st: len(st["clients"]) == n, what=f"{n} clients")


def one_run(d: Daemon, key: int, verdict: int = wire.VERDICT_FIXED, source: int = wire.SOURCE_EVIDENCE,
            sites: list[tuple[int, int, int]] | None = None, max_threads: int = 4) -> wire.Page:
    """A program of `key` that arrives, decides, learns `sites` and leaves; returns its page as it arrived."""
    before = len(d.status()["clients"])
    s, page, _ = wire.register(d.socket, max_threads, key=key)
    arrived = wire.Page(bytearray(page.buf[:wire.PAGE_SIZE]))  # type: ignore[arg-type]
    page.learn(SITES if sites is None else sites)
    page.decide(verdict, source, b"omp_set_num_threads(2) outside regions from prog+0x1230")
    s.close()
    wait_clients(d, before)
    return arrived


def test_a_program_is_remembered_when_it_leaves_and_recalled_when_it_returns(scafd: Daemon) -> None:
    first = one_run(scafd, KEY_A)
    # Nothing known at the first run: nothing remembered on the page, but its share at arrival.
    assert first.u32("memory_runs") == 0 and first.known() == [] and first.u32("start_team") == 4
    second = one_run(scafd, KEY_A)
    assert second.u32("memory_runs") == 1
    assert second.u32("memory_verdict") == wire.VERDICT_FIXED and second.u32("memory_source") == wire.SOURCE_EVIDENCE
    assert second.known() == SITES
    s, page, _ = wire.register(scafd.socket, 4, key=KEY_A)
    assert page.u32("memory_runs") == 2 and page.known() == SITES
    page.set_u32("started_with", 2)
    (c,) = scafd.status()["clients"]
    assert c["memory"] == {"runs": 2, "verdict": "fixed", "source": "evidence", "run_s": c["memory"]["run_s"]}, c
    assert c["memory"]["run_s"] > 0, c
    assert c["start_team"] == 4 and c["started_with"] == 2
    # Another program, and a client without a key, are not this one.
    s2, other, _ = wire.register(scafd.socket, 4, key=KEY_B)
    s3, nokey, _ = wire.register(scafd.socket, 4)
    assert other.u32("memory_runs") == 0 and nokey.u32("memory_runs") == 0
    st = scafd.status()
    assert [c["memory"] for c in sorted(st["clients"], key=lambda c: c["id"])][1:] == [None, None]
    for x in (s, s2, s3):
        x.close()
    wait_clients(scafd, 0)
    # The keyless client left nothing behind; the other program did.
    assert recall(scafd, KEY_B).runs == 1 and recall(scafd, KEY_A).runs == 3


def test_an_undecided_run_only_counts(scafd: Daemon) -> None:
    one_run(scafd, KEY_A, wire.VERDICT_FIXED)
    one_run(scafd, KEY_A, wire.VERDICT_UNDECIDED, wire.SOURCE_DEFAULT, sites=[(9, 9, wire.MEMO_CLEAN)])
    r = recall(scafd, KEY_A)
    assert (r.status, r.runs, r.verdict, r.source) == (proto.MEMORY_OK, 2, wire.VERDICT_FIXED, wire.SOURCE_EVIDENCE)
    assert one_run(scafd, KEY_A).known() == SITES  # the undecided run's site was not learned


def test_the_users_word_is_not_remembered_as_evidence(scafd: Daemon) -> None:
    one_run(scafd, KEY_A, wire.VERDICT_FIXED, wire.SOURCE_USER)
    r = recall(scafd, KEY_A)
    assert (r.runs, r.verdict, r.source) == (1, wire.VERDICT_UNDECIDED, wire.SOURCE_DEFAULT)


# A client in a process of its own: registers with a key, writes what its layer learned, says ready, waits.
CLIENT_PY = r"""
import sys
sys.path[:0] = [sys.argv[1] + "/python", sys.argv[1] + "/tests"]
from support import wire
sock, page, cid = wire.register(sys.argv[2], 4, key=int(sys.argv[3]))
page.learn([(0x5EED, 0x1230, wire.MEMO_CLEAN)])
page.decide(wire.VERDICT_MALLEABLE, wire.SOURCE_EVIDENCE, b"no team-size call")
print("ready", flush=True)
sys.stdin.read()
"""


def test_a_killed_program_is_remembered_too(scafd: Daemon) -> None:
    p = subprocess.Popen([sys.executable, "-c", CLIENT_PY, str(ROOT), scafd.socket, str(KEY_C)],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        assert p.stdout is not None and p.stdout.readline() == b"ready\n"
        wait_clients(scafd, 1)
        os.kill(p.pid, signal.SIGKILL)
        p.wait()
    finally:
        if p.poll() is None:
            p.kill()
        p.wait()
        for f in (p.stdin, p.stdout):
            if f:
                f.close()
    wait_clients(scafd, 0)
    r = recall(scafd, KEY_C)
    assert (r.status, r.runs, r.verdict) == (proto.MEMORY_OK, 1, wire.VERDICT_MALLEABLE)


def test_start_team_is_the_share_at_arrival(scafd: Daemon) -> None:
    held = []
    for want in (4, 2, 1, 1):  # --cpus 4: alone, one other, two others (4 // 3), three others
        s, page, _ = wire.register(scafd.socket, 8)
        held.append(s)
        assert page.u32("start_team") == want
    for s in held:
        s.close()
    wait_clients(scafd, 0)
    # Bounded by what the program could see.
    s, page, _ = wire.register(scafd.socket, 3)
    assert page.u32("start_team") == 3
    s.close()


def test_start_team_counts_the_programs_it_usually_runs_beside(scafd: Daemon) -> None:
    # A runs its whole life beside B: one peer, exactly, whatever the durations.
    sb, _, _ = wire.register(scafd.socket, 4, key=KEY_B)
    sa, pa, _ = wire.register(scafd.socket, 4, key=KEY_A)
    assert pa.u32("start_team") == 2
    pa.decide(wire.VERDICT_FIXED, wire.SOURCE_EVIDENCE)
    sa.close()
    wait_clients(scafd, 1)
    sb.close()
    wait_clients(scafd, 0)
    # Alone now, A starts with the share it would have beside its usual peer; a new program gets all.
    sa, pa, _ = wire.register(scafd.socket, 4, key=KEY_A)
    assert pa.u32("memory_runs") == 1 and pa.u32("start_team") == 2
    # A RECALL counts every client now (the asker is not one): A itself here, as many as its usual peers.
    assert recall(scafd, KEY_A).start_team == 2
    sa.close()
    wait_clients(scafd, 0)
    assert recall(scafd, KEY_A).start_team == 2 and recall(scafd, 0xDEAD).start_team == 4


RUN_MS = 44  # offsetof(struct scaf_memo_record, run_ms)


def set_run_times(f: Path, run_ms: dict[int, int]) -> None:
    """Rewrites the remembered run time of some programs in a stopped daemon's file, its CRC made again."""
    data = bytearray(f.read_bytes())
    magic, version, size, count, _, uid, rsvd = HEADER.unpack_from(data)
    for i in range(count):
        at = HEADER.size + i * size
        (key,) = struct.unpack_from("=Q", data, at)
        if key in run_ms:
            struct.pack_into("=I", data, at + RUN_MS, run_ms[key])
    crc = zlib.crc32(bytes(data[HEADER.size:]))
    HEADER.pack_into(data, 0, magic, version, size, count, crc, uid, rsvd)
    f.write_bytes(bytes(data))


@contextlib.contextmanager
def running(page: wire.Page) -> Iterator[None]:
    """Keeps a raw client running, as a program between its regions is: its page's region count moves."""
    stop = threading.Event()

    def regions() -> None:
        n = page.u32("regions")
        while not stop.wait(0.02):
            n += 1
            page.set_u64("regions", n)

    t = threading.Thread(target=regions, daemon=True)
    t.start()
    try:
        yield
    finally:
        stop.set()
        t.join()


def test_a_program_about_to_end_does_not_halve_a_newcomers_start_team(scafd: Daemon) -> None:
    """A program that starts with its share keeps it for its whole run: beside one that ends a moment later, it would
    then run alone on half the machine. A running client whose remembered run ends early in the newcomer's (within
    half of it when its fixed team holds every context, a quarter when it leaves room) is not counted; one with no
    remembered time, or running past half again its usual time, is."""
    one_run(scafd, KEY_A)
    one_run(scafd, KEY_B)
    one_run(scafd, KEY_C)
    scafd.stop()
    # A's runs take 1000 s, B's 3000 s, C's 100 s. The test's own steps take far less than the margins below.
    set_run_times(memfile(scafd), {KEY_A: 1_000_000, KEY_B: 3_000_000, KEY_C: 100_000})
    scafd.start()
    sa, pa, _ = wire.register(scafd.socket, 4, key=KEY_A)
    with contextlib.closing(sa), running(pa):
        st = scafd.wait_for(lambda st: len(st["clients"]) == 1, what="A")
        assert st["clients"][0]["memory"]["run_s"] == 1000.0, st["clients"][0]
        # A is remembered fixed with all 4 contexts. About 1000 s are left of it, under half B's 3000: B starts with
        # the machine and takes turns with A until A ends.
        assert recall(scafd, KEY_B).start_team == 4
        # C's run is short against it: A runs through all of it.
        assert recall(scafd, KEY_C).start_team == 2
        # Nothing remembered of the newcomer: A counts.
        assert recall(scafd, 0xDEAD).start_team == 2
        # At its HELLO too, on its page.
        sb, pb, _ = wire.register(scafd.socket, 4, key=KEY_B)
        assert pb.u32("start_team") == 4
        sb.close()
        wait_clients(scafd, 1)
        # A started with 2 of the 4 leaves B its share: B's whole machine would cost A turns, so A counts unless it
        # ends within a quarter of B's run (750 s).
        pa.set_u32("started_with", 2)
        scafd.wait_for(lambda st: st["clients"][0]["started_with"] == 2, what="A started with 2")
        assert recall(scafd, KEY_B).start_team == 2
    wait_clients(scafd, 0)
    # A client that has run past half again its usual time is not ending as its runs did: it counts.
    scafd.stop()
    set_run_times(memfile(scafd), {KEY_A: 1})
    scafd.start()
    sa, pa, _ = wire.register(scafd.socket, 4, key=KEY_A)
    with contextlib.closing(sa), running(pa):
        scafd.wait_for(lambda st: len(st["clients"]) == 1, what="A")
        time.sleep(0.01)  # past 1.5 ms for certain
        assert recall(scafd, KEY_B).start_team == 2


def test_a_run_time_is_learned_from_arrival_to_departure(scafd: Daemon) -> None:
    s, _, _ = wire.register(scafd.socket, 4, key=KEY_A)
    time.sleep(0.3)  # a run of at least 0.3 s
    s.close()
    wait_clients(scafd, 0)
    s, page, _ = wire.register(scafd.socket, 4, key=KEY_A)
    page.decide(wire.VERDICT_FIXED, wire.SOURCE_EVIDENCE)
    (c,) = scafd.wait_for(lambda st: len(st["clients"]) == 1, what="A")["clients"]
    # The first run left undecided: counted, nothing else learned.
    assert c["memory"]["runs"] == 1 and c["memory"]["run_s"] == 0, c
    time.sleep(0.3)
    s.close()
    wait_clients(scafd, 0)
    s, _, _ = wire.register(scafd.socket, 4, key=KEY_A)
    (c,) = scafd.wait_for(lambda st: len(st["clients"]) == 1, what="A")["clients"]
    assert c["memory"]["runs"] == 2 and c["memory"]["run_s"] >= 0.3, c
    s.close()
    # The file of the last version (1) kept no run time: its programs are believed, with runs of unknown length.
    wait_clients(scafd, 0)
    scafd.stop()
    f = memfile(scafd)
    set_run_times(f, {KEY_A: 0})
    data = bytearray(f.read_bytes())
    struct.pack_into("=I", data, 8, 1)  # the header's version
    f.write_bytes(bytes(data))
    scafd.start()
    r = recall(scafd, KEY_A)
    assert (r.status, r.runs) == (proto.MEMORY_OK, 3), r
    s, _, _ = wire.register(scafd.socket, 4, key=KEY_A)
    (c,) = scafd.wait_for(lambda st: len(st["clients"]) == 1, what="A")["clients"]
    assert c["memory"]["run_s"] == 0, c
    s.close()
    wait_clients(scafd, 0)
    scafd.stop()
    assert HEADER.unpack_from(f.read_bytes())[1] == 2  # written back in this version


def test_remembered_across_a_daemon_restart(scafd: Daemon) -> None:
    one_run(scafd, KEY_A)
    scafd.stop()  # SIGTERM: what the last departure taught is written before it exits
    f = memfile(scafd)
    assert stat.S_IMODE(f.stat().st_mode) == 0o600 and stat.S_IMODE(f.parent.stat().st_mode) == 0o700
    assert f.stat().st_size == HEADER.size + RECORD_SIZE
    scafd.start()
    r = recall(scafd, KEY_A)
    assert (r.status, r.runs, r.verdict, r.source) == (proto.MEMORY_OK, 1, wire.VERDICT_FIXED, wire.SOURCE_EVIDENCE)
    assert one_run(scafd, KEY_A).known() == SITES


def test_written_within_a_second_of_a_departure(scafd: Daemon) -> None:
    one_run(scafd, KEY_A)
    f = memfile(scafd)
    scafd.wait_for(lambda _: f.exists(), what="the memory file written by the loop")
    assert f.stat().st_size == HEADER.size + RECORD_SIZE


def test_a_daemon_killed_while_writing_leaves_the_old_file_whole(
    scafd_factory: Callable[..., Daemon], tmp_path: Path
) -> None:
    state = str(tmp_path / "state")
    d1 = scafd_factory("--cpus", "4", "--no-lookout", "--state-dir", state)
    one_run(d1, KEY_A)
    d1.stop()
    old = (Path(state) / f"memory-{os.getuid()}.bin").read_bytes()
    # The next daemon dies 100 bytes into writing the file of A and B.
    d2 = scafd_factory("--cpus", "4", "--no-lookout", "--state-dir", state, env={"SCAFD_TEST_MEMORY_KILL_AT": "100"})
    s, _, _ = wire.register(d2.socket, 4, key=KEY_B)
    s.close()
    assert d2.proc is not None
    assert d2.proc.wait(timeout=30) == -signal.SIGKILL, d2.stderr()
    assert (Path(state) / f"memory-{os.getuid()}.bin").read_bytes() == old
    assert (Path(state) / f"memory-{os.getuid()}.bin.tmp").stat().st_size == 100
    d3 = scafd_factory("--cpus", "4", "--no-lookout", "--state-dir", state)
    assert recall(d3, KEY_A).runs == 1 and recall(d3, KEY_B).status == proto.MEMORY_UNKNOWN
    # The next write goes over the half-written temporary file.
    one_run(d3, KEY_B)
    d3.stop()
    d4 = scafd_factory("--cpus", "4", "--no-lookout", "--state-dir", state)
    assert recall(d4, KEY_A).runs == 1 and recall(d4, KEY_B).runs == 1
    assert not (Path(state) / f"memory-{os.getuid()}.bin.tmp").exists()


def test_a_disk_that_stalls_never_stalls_the_daemon(scafd_factory: Callable[..., Daemon], tmp_path: Path) -> None:
    """A write that does not return (a slow disk; an NFS server away, for a state directory in an NFS home) holds the
    child that writes it, never the daemon's loop: it goes on serving, and writes what it learned meanwhile once
    the disk answers."""
    hold = tmp_path / "hold"
    hold.write_text("")
    d = scafd_factory("--cpus", "4", "--no-lookout", env={"SCAFD_TEST_MEMORY_HOLD": str(hold)})
    f = memfile(d)
    tmp = f.with_name(f.name + ".tmp")
    one_run(d, KEY_A)
    # The write is under way and held before its fsync: its temporary file is whole, the file not there yet.
    d.wait_for(lambda _: tmp.exists() and tmp.stat().st_size == HEADER.size + RECORD_SIZE,
               what="the held write's temporary file")
    # The child that writes holds the standard descriptors, the state directory and the file it writes, nothing
    # else of the daemon's (its listening socket or its lock would outlive a daemon that died meanwhile).
    children = Path(f"/proc/{d.pid}/task/{d.pid}/children").read_text().split()
    assert len(children) == 1, children
    fds = {int(n): os.readlink(f"/proc/{children[0]}/fd/{n}") for n in os.listdir(f"/proc/{children[0]}/fd")}
    assert set(fds) <= {0, 1, 2, 3, 4} and fds[3] == str(f.parent) and fds[4] == str(tmp), fds
    # Meanwhile the daemon serves: statuses, a program's arrival, its decision and departure, recalls.
    assert d.status()["daemon_pid"] == d.pid
    one_run(d, KEY_B)
    assert recall(d, KEY_A).runs == 1 and recall(d, KEY_B).runs == 1
    assert not f.exists()
    hold.unlink()
    # Once the disk answers: A's write ends, and the next one adds B (learned while A's was held).
    d.wait_for(lambda _: f.exists() and f.stat().st_size == HEADER.size + 2 * RECORD_SIZE,
               what="the memory file with both programs")
    d.stop()
    d.start()
    assert recall(d, KEY_A).runs == 1 and recall(d, KEY_B).runs == 1


def test_a_write_that_fails_is_said_once_and_tried_again_until_it_succeeds(scafd: Daemon) -> None:
    """The child that writes reports a failure once (not at each retry), and the daemon says when a write succeeds
    again; nothing learned meanwhile is lost."""
    f = memfile(scafd)
    f.parent.mkdir(parents=True, exist_ok=True)
    blocker = f.with_name(f.name + ".tmp")
    blocker.mkdir()  # the temporary file cannot be opened: the write fails, for root too
    one_run(scafd, KEY_A)
    scafd.wait_for(lambda _: "cannot write it in" in scafd.stderr(), what="the failed write said")
    one_run(scafd, KEY_B)  # changed again while failing: retried each second, said no more
    time.sleep(2.5)  # two retries at least, on a quiet machine; fewer on a loaded one prove less, never fail
    assert not f.exists()
    blocker.rmdir()
    scafd.wait_for(lambda _: "written again in" in scafd.stderr(), what="the write that succeeded said")
    log = scafd.stderr()
    assert log.count("cannot write it in") == 1 and log.count("written again in") == 1, log
    assert f.stat().st_size == HEADER.size + 2 * RECORD_SIZE


def damage(kind: str, data: bytes) -> bytes:
    magic, version, size, count, crc, uid, rsvd = HEADER.unpack_from(data)
    if kind == "foreign":
        return b"this is not a memory file at all\n" * 3
    if kind == "cut":
        return data[:-7]
    if kind == "crc":
        return data[:HEADER.size + 60] + bytes([data[HEADER.size + 60] ^ 0x40]) + data[HEADER.size + 61:]
    if kind == "version":
        return HEADER.pack(magic, version + 1, size, count, crc, uid, rsvd) + data[HEADER.size:]
    if kind == "record-size":
        return HEADER.pack(magic, version, size + 8, count, crc, uid, rsvd) + data[HEADER.size:]
    if kind == "empty":
        return b""
    raise AssertionError(kind)


@pytest.mark.parametrize("kind", ["foreign", "cut", "crc", "version", "record-size", "empty"])
def test_a_damaged_file_is_set_aside_and_the_user_starts_empty(
    scafd_factory: Callable[..., Daemon], tmp_path: Path, kind: str
) -> None:
    state = tmp_path / "state"
    d1 = scafd_factory("--cpus", "4", "--no-lookout", "--state-dir", str(state))
    one_run(d1, KEY_A)
    d1.stop()
    f = state / f"memory-{os.getuid()}.bin"
    bad = damage(kind, f.read_bytes())
    f.write_bytes(bad)
    d2 = scafd_factory("--cpus", "4", "--no-lookout", "--state-dir", str(state))
    assert recall(d2, KEY_A).status == proto.MEMORY_UNKNOWN
    aside = list(state.glob(f"memory-{os.getuid()}.bin.bad-*"))
    assert len(aside) == 1 and aside[0].read_bytes() == bad and not f.exists()
    lines = [ln for ln in d2.stderr().splitlines() if " is damaged " in ln]
    assert len(lines) == 1 and str(f) in lines[0] and aside[0].name in lines[0], d2.stderr()
    # The user goes on with an empty memory, written whole again.
    one_run(d2, KEY_B)
    d2.stop()
    d3 = scafd_factory("--cpus", "4", "--no-lookout", "--state-dir", str(state))
    assert recall(d3, KEY_B).runs == 1 and recall(d3, KEY_A).status == proto.MEMORY_UNKNOWN


def test_forget_one_or_all(scafd: Daemon) -> None:
    for key in (KEY_A, KEY_B, KEY_C):
        one_run(scafd, key)
    r = proto.memory(scafd.socket, proto.MEMORY_FORGET, KEY_A)
    assert (r.status, r.forgotten) == (proto.MEMORY_OK, 1)
    assert recall(scafd, KEY_A).status == proto.MEMORY_UNKNOWN and recall(scafd, KEY_B).runs == 1
    r = proto.memory(scafd.socket, proto.MEMORY_FORGET, KEY_A)
    assert (r.status, r.forgotten) == (proto.MEMORY_UNKNOWN, 0)
    r = proto.memory(scafd.socket, proto.MEMORY_FORGET, 0)
    assert (r.status, r.forgotten) == (proto.MEMORY_OK, 2)
    assert all(recall(scafd, k).status == proto.MEMORY_UNKNOWN for k in (KEY_A, KEY_B, KEY_C))
    # Forgotten in the file too.
    scafd.stop()
    assert memfile(scafd).stat().st_size == HEADER.size
    scafd.start()
    assert recall(scafd, KEY_B).status == proto.MEMORY_UNKNOWN


def test_remember_records_scaf_checks_verdict(scafd: Daemon) -> None:
    r = proto.memory(scafd.socket, proto.MEMORY_REMEMBER, KEY_A, verdict=wire.VERDICT_FIXED, name=b"xgb train.py")
    assert r.status == proto.MEMORY_OK
    r = recall(scafd, KEY_A)
    assert (r.status, r.runs, r.verdict, r.source) == (proto.MEMORY_OK, 1, wire.VERDICT_FIXED, wire.SOURCE_CHECK)
    s, page, _ = wire.register(scafd.socket, 4, key=KEY_A)
    assert (page.u32("memory_verdict"), page.u32("memory_source")) == (wire.VERDICT_FIXED, wire.SOURCE_CHECK)
    assert scafd.status()["clients"][0]["memory"] == {"runs": 1, "verdict": "fixed", "source": "check", "run_s": 0}
    # A run that says malleable by evidence does not undo what scaf check found.
    page.decide(wire.VERDICT_MALLEABLE, wire.SOURCE_EVIDENCE)
    s.close()
    wait_clients(scafd, 0)
    r = recall(scafd, KEY_A)
    assert (r.runs, r.verdict, r.source) == (2, wire.VERDICT_FIXED, wire.SOURCE_CHECK)


def test_no_memory(scafd_factory: Callable[..., Daemon]) -> None:
    d = scafd_factory("--cpus", "4", "--no-lookout", "--no-memory")
    first = one_run(d, KEY_A)
    second = one_run(d, KEY_A)
    # No memory, but every program still gets its share at arrival.
    assert second.u32("memory_runs") == 0 and second.u32("start_team") == 4 == first.u32("start_team")
    for op, key in ((proto.MEMORY_RECALL, KEY_A), (proto.MEMORY_FORGET, 0)):
        assert proto.memory(d.socket, op, key, 4 if op == proto.MEMORY_RECALL else 0).status == proto.MEMORY_OFF
    assert proto.memory(d.socket, proto.MEMORY_REMEMBER, KEY_A, verdict=1).status == proto.MEMORY_OFF
    d.stop()
    assert not Path(d.state_dir).exists()
    assert "memory off" in d.stderr()


def test_a_full_memory_forgets_the_least_recently_seen(scafd_factory: Callable[..., Daemon]) -> None:
    d = scafd_factory("--cpus", "4", "--no-lookout", "--memory-programs", "2")
    one_run(d, KEY_A)
    one_run(d, KEY_B)
    assert one_run(d, KEY_A).u32("memory_runs") == 1  # A seen again: B is now the least recently seen
    one_run(d, KEY_C)
    assert recall(d, KEY_B).status == proto.MEMORY_UNKNOWN
    assert recall(d, KEY_A).runs == 2 and recall(d, KEY_C).runs == 1
    # A smaller --memory-programs at the next start keeps the most recently seen.
    d.stop()
    d2 = scafd_factory("--cpus", "4", "--no-lookout", "--memory-programs", "1", "--state-dir", d.state_dir)
    assert recall(d2, KEY_A).status == proto.MEMORY_UNKNOWN and recall(d2, KEY_C).runs == 1


@pytest.mark.parametrize("binary", BINARIES, ids=IDS)
def test_a_lying_page_never_crashes_the_daemon_and_is_clamped(
    scafd_factory: Callable[..., Daemon], binary: Path
) -> None:
    d = scafd_factory("--cpus", "4", "--no-lookout", binary=binary)
    garbage = [((i * 0x9E3779B97F4A7C15) & (2**64 - 1), i * 0x1111, 0xFFFFFFFF - i) for i in range(wire.MEMORY_SITES)]
    garbage[3] = (0, 0x10, wire.MEMO_CLEAN)  # no object
    garbage[4] = (5, 0x10, 0xFFFFFFFF & ~wire.MEMO_ALL)  # only bits nobody knows
    s, page, _ = wire.register(d.socket, 4, key=KEY_A)
    page.learn(garbage, count=0xFFFFFFFF)
    page.set_u32("started_with", 0xFFFFFFFF)
    page.set_u32("verdict", 77)
    page.set_u32("verdict_source", 99)
    (c,) = d.status()["clients"]
    assert c["started_with"] == 4  # never more than the program could have seen
    page.decide(wire.VERDICT_FIXED, wire.SOURCE_EVIDENCE)
    s.close()
    wait_clients(d, 0)
    s, page, _ = wire.register(d.socket, 4, key=KEY_A)
    known = page.known()
    assert page.u32("memory_runs") == 1 and 0 < len(known) <= wire.MEMORY_SITES - 2
    assert all(obj != 0 and bits and not bits & ~wire.MEMO_ALL for obj, _, bits in known), known
    s.close()
    wait_clients(d, 0)
    d.stop()
    for marker in ("AddressSanitizer", "LeakSanitizer", "runtime error:"):
        assert marker not in d.stderr()


def report(page: wire.Page, team: int, e: float) -> None:
    """A measured report from TEAM threads at efficiency E, as the layer publishes it (client_seq odd meanwhile)."""
    page.set_u32("client_seq", page.u32("client_seq") + 1)
    page.set_u32("eff_team", team)
    page.set_u32("efficiency_ppm", int(e * 1e6))
    page.set_u32("estimate", wire.ESTIMATE_MEASURED)
    page.set_u32("client_seq", page.u32("client_seq") + 1)


def test_a_remembered_curve_gives_a_program_that_scales_badly_its_small_share_at_once(
    scafd_factory: Callable[..., Daemon],
) -> None:
    d = scafd_factory("--policy", "speedup", "--cpus", "8", "--no-lookout", "--probe-interval", "0")

    # A's first run measures no speedup at all: 8 threads at 1/8 efficiency (a dominant critical section).
    s, page, _ = wire.register(d.socket, 8, key=KEY_A)
    page.decide(wire.VERDICT_MALLEABLE, wire.SOURCE_EVIDENCE)
    report(page, 8, 0.125)
    s.close()
    wait_clients(d, 0)
    r = recall(d, KEY_A, 8)
    assert r.runs == 1
    # Its next run, beside a program nothing is known of: before A reports anything, its curve is known.
    sa, pa, _ = wire.register(d.socket, 8, key=KEY_A)
    sb, pb, _ = wire.register(d.socket, 8, key=KEY_B)
    st = d.wait_for(lambda st: len(st["clients"]) == 2, what="both")
    a = next(c for c in st["clients"] if c["memory"])
    assert a["estimate"] == "remembered" and a["eff_threads"] == 8 and a["efficiency"] == 0.125, a
    assert pa.threads < pb.threads, (pa.threads, pb.threads)
    # Its first measured report ends the stand-in.
    report(pa, pa.threads, 0.9)
    d.wait_for(lambda st: next(c for c in st["clients"] if c["memory"])["estimate"] == "measured",
               what="the measured report")
    sa.close()
    sb.close()


def test_a_remembered_curve_that_holds_a_program_at_one_thread_is_checked_in_every_run(
    scafd_factory: Callable[..., Daemon],
) -> None:
    """Memory never overrides evidence: a program remembered as not scaling, held at one thread by that curve, is
    probed within a second or two of each run, not after the probe interval (an hour here, so that only the
    remembered curve's own probe can come). A run shorter than the interval would otherwise measure nothing wider,
    the memory would keep the curve, and a program that scales would run on one thread at every run."""
    d = scafd_factory("--policy", "speedup", "--cpus", "8", "--no-lookout", "--probe-interval", "3600")

    def a_of(st: dict) -> dict:
        return next(c for c in st["clients"] if c["memory"])

    # A's first run measured no speedup: 8 threads at 1/8 efficiency.
    s, page, _ = wire.register(d.socket, 8, key=KEY_A)
    page.decide(wire.VERDICT_MALLEABLE, wire.SOURCE_EVIDENCE)
    report(page, 8, 0.125)
    s.close()
    wait_clients(d, 0)
    # Its next run, beside a program nothing is known of: the curve holds it at one thread, and it reports from
    # there, as the layer does (a measured estimate at one thread, which says nothing about scaling).
    sa, pa, _ = wire.register(d.socket, 8, key=KEY_A)
    sb, _, _ = wire.register(d.socket, 8, key=KEY_B)
    try:
        d.wait_for(lambda st: len(st["clients"]) == 2 and a_of(st)["threads"] == 1, what="A held at one thread")
        pa.decide(wire.VERDICT_MALLEABLE, wire.SOURCE_EVIDENCE)
        report(pa, 1, 1.0)
        # Probed: an equal share, to be measured at.
        st = d.wait_for(lambda st: a_of(st)["probing"] and a_of(st)["threads"] > 1, timeout=60,
                        what="A probed although the probe interval is an hour")
        # Measured from the probe's team, it scales: steered by what this run measured, not by the memory.
        report(pa, a_of(st)["threads"], 0.95)
        d.wait_for(lambda st: not a_of(st)["probing"] and a_of(st)["threads"] > 1, what="A kept above one thread")
    finally:
        sa.close()
        sb.close()
    wait_clients(d, 0)
    # The memory keeps what this run measured, not the point it seeded and this run never measured again: the
    # next run's curve is the wider one.
    sa, pa, _ = wire.register(d.socket, 8, key=KEY_A)
    try:
        st = d.wait_for(lambda st: len(st["clients"]) == 1, what="A again")
        assert a_of(st)["estimate"] == "remembered" and a_of(st)["efficiency"] >= 0.9, a_of(st)
    finally:
        sa.close()


def test_an_unusable_state_dir(scafd_factory: Callable[..., Daemon], tmp_path: Path) -> None:
    a_file = tmp_path / "not-a-dir"
    a_file.write_text("a file")
    # Given with --state-dir: an error, the daemon does not start.
    with pytest.raises(RuntimeError, match="cannot use --state-dir"):
        scafd_factory("--cpus", "4", "--state-dir", str(a_file))
    # A default one that cannot be used: the daemon serves without memory and says why, once.
    sock = os.path.join(short_tmpdir(), "s.sock")
    run = subprocess.run([str(daemon_binaries()[0]), "--socket", sock, "--idle-exit", "0.001"],
                         env=dict(os.environ, XDG_STATE_HOME=str(a_file)), capture_output=True, text=True, timeout=30,
                         check=False)
    assert run.returncode == 0, run.stderr
    assert run.stderr.count("cannot keep a memory of programs in") == 1 and "memory off" in run.stderr, run.stderr


@pytest.mark.parametrize("where", ["systemd", "xdg", "home"])
def test_the_default_state_directory(scafd_factory: Callable[..., Daemon], tmp_path: Path, where: str) -> None:
    uid = os.getuid()
    if where == "systemd":
        # Under DynamicUser=yes, $STATE_DIRECTORY is /var/lib/scaf, a link to /var/lib/private/scaf.
        real = tmp_path / "private" / "scaf"
        real.mkdir(parents=True, mode=0o700)
        (tmp_path / "scaf").symlink_to(real)
        env = {"STATE_DIRECTORY": str(tmp_path / "scaf"), "XDG_STATE_HOME": str(tmp_path / "not-this")}
    elif where == "xdg":
        real = tmp_path / "xdg" / "scaf"  # $XDG_STATE_HOME itself is missing too
        env = {"XDG_STATE_HOME": str(tmp_path / "xdg")}
    else:
        real = tmp_path / "home" / ".local" / "state" / "scaf"
        (tmp_path / "home").mkdir()
        env = {"XDG_STATE_HOME": "", "HOME": str(tmp_path / "home")}
    d = scafd_factory("--cpus", "4", "--no-lookout", env=env)
    one_run(d, KEY_A)
    d.stop()
    said = tmp_path / "scaf" if where == "systemd" else real  # the path systemd gave, as it gave it
    assert f"memory in {said}\n" in d.stderr(), d.stderr()
    assert (real / f"memory-{uid}.bin").is_file()
    for p in (real, *([real.parent] if where == "xdg" else [real.parent, real.parent.parent] if where == "home" else [])):
        assert stat.S_IMODE(p.stat().st_mode) == 0o700, p
    assert not (tmp_path / "not-this").exists()


def test_the_daemon_closes_after_a_memory_reply(scafd: Daemon) -> None:
    sock = wire.connect(scafd.socket, 5)
    try:
        sock.sendall(proto.memory_request(proto.MEMORY_RECALL, KEY_A, 4))
        reply = wire.recv_exact(sock, wire.MEMORY_REPLY.size)
        assert wire.MEMORY_REPLY.unpack(reply)[6] == proto.MEMORY_UNKNOWN
        assert sock.recv(16) == b""  # closed: the answer was its last message
    finally:
        sock.close()
