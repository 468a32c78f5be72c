"""The layer against a scripted peer on a real socket: what it sends, and what it does with
answers that scafd never gives (bad WELCOMEs, no descriptor, a page of another version, a
silent peer, an allocation above the program's bound, a control that goes back to THREADS).

The peer is this test process: a real Unix socket, a real memfd passed with SCM_RIGHTS, a
real shared mapping that the probe's layer reads. scafd itself is exercised in test_layer.py.
"""

from __future__ import annotations

import mmap
import os
import shutil
import socket
import struct
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from conftest import layer_env, short_tmpdir
from support import wire
from test_layer import (
    MAXSEC,
    QUIET,
    Probe,
    affinity_lists,
    build_probe,
    cpu_list,
    plain_env,
    run,
)

PAGE_MAGIC = 0x45474150
PAGE_SIZE = 4096
# struct scaf_page offsets (include/scaf/proto.h)
OFF_SEQ, OFF_THREADS, OFF_CONTROL, OFF_CPUSET = 8, 12, 16, 32
OFF_CLIENT_FLAGS, OFF_FIXED_TEAM, OFF_LAST_TEAM, OFF_REGIONS = 224, 228, 232, 256
NO_ESTIMATE = {"SCAF_ESTIMATE": "0", **QUIET}


class Peer:
    """A listening socket that answers HELLOs the way each test scripts it."""

    def __init__(self) -> None:
        self.dir = short_tmpdir()
        self.path = os.path.join(self.dir, "peer.sock")
        self.listen()

    def listen(self) -> None:
        self.srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.srv.bind(self.path)
        self.srv.listen(8)

    def close_listener(self) -> None:
        self.srv.close()
        os.unlink(self.path)

    def accept(self, timeout: float = 15) -> tuple[socket.socket, dict]:
        self.srv.settimeout(timeout)
        conn, _ = self.srv.accept()
        conn.settimeout(5)
        data = b""
        while len(data) < wire.HELLO.size:
            chunk = conn.recv(wire.HELLO.size - len(data))
            assert chunk, "client closed before a whole HELLO"
            data += chunk
        f = wire.HELLO.unpack(data)
        hello = {
            "magic": f[0],
            "version": f[1],
            "type": f[2],
            "length": f[3],
            "reserved": f[4],
            "max_threads": f[5],
            "flags": f[6],
            "name": f[7].rstrip(b"\0").decode(),
            "key": f[8],
            "tail": f[9:],
        }
        return conn, hello

    def welcome(
        self,
        conn: socket.socket,
        threads: int,
        *,
        send_fd: bool = True,
        file_size: int = PAGE_SIZE,
        page_magic: int = PAGE_MAGIC,
        page_version: int = wire.VERSION,
        header_version: int = wire.VERSION,
        page_size: int = PAGE_SIZE,
        cpus: int = 4,
        page_init: Callable[[mmap.mmap], None] | None = None,
    ) -> mmap.mmap | None:
        """Maps a page, fills it (page_init writes more, such as the memory half, before WELCOME, as scafd
        does) and sends WELCOME with its descriptor."""
        fd = os.memfd_create("scaf-test-page")
        try:
            os.ftruncate(fd, file_size)
            mm = None
            if file_size >= PAGE_SIZE:
                mm = mmap.mmap(fd, PAGE_SIZE)
                struct.pack_into("=IIIIIIII", mm, 0, page_magic, page_version, 0, threads, 0, cpus, 1, 0)
                if page_init is not None:
                    page_init(mm)
            msg = wire.WELCOME.pack(wire.MAGIC, header_version, wire.MSG_WELCOME, wire.WELCOME.size, 0, 7, page_size, 4, 0)
            if send_fd:
                socket.send_fds(conn, [msg], [fd])
            else:
                conn.sendall(msg)
        finally:
            os.close(fd)
        return mm

    def cleanup(self) -> None:
        self.srv.close()
        shutil.rmtree(self.dir, ignore_errors=True)


def u32(mm: mmap.mmap, off: int) -> int:
    return struct.unpack_from("=I", mm, off)[0]


def set_control(mm: mmap.mmap, control: int, cpus: list[int]) -> None:
    """Writes control and cpuset under the seqlock, as scafd does."""
    seq = u32(mm, OFF_SEQ)
    struct.pack_into("=I", mm, OFF_SEQ, seq + 1)
    words = [0] * 16
    for c in cpus:
        words[c // 64] |= 1 << (c % 64)
    struct.pack_into("=16Q", mm, OFF_CPUSET, *words)
    struct.pack_into("=I", mm, OFF_CONTROL, control)
    struct.pack_into("=I", mm, OFF_SEQ, seq + 2)


@pytest.fixture(scope="module")
def probe(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_probe(tmp_path_factory)


@pytest.fixture
def peer() -> Iterator[Peer]:
    p = Peer()
    yield p
    p.cleanup()


def start(exe: Path, args: list[str], env: dict[str, str], started: list[Probe]) -> Probe:
    p = Probe(exe, args, env)
    started.append(p)
    return p


@pytest.fixture
def started() -> Iterator[list[Probe]]:
    procs: list[Probe] = []
    yield procs
    for p in procs:
        p.kill()


def wait(pred: Callable[[], object], what: str, timeout: float = 15) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return
        time.sleep(0.05)
    pytest.fail(f"timed out waiting for {what}")


def test_hello_fields_and_allocation_capped_by_bound(probe: Path, peer: Peer, started: list[Probe]) -> None:
    p = start(probe, ["follow", "STOP", MAXSEC], layer_env(peer.path, {"OMP_NUM_THREADS": "2", **NO_ESTIMATE}), started)
    conn, hello = peer.accept()
    assert hello["magic"] == wire.MAGIC and hello["version"] == wire.VERSION
    assert hello["type"] == wire.MSG_HELLO and hello["length"] == wire.HELLO.size
    assert hello["reserved"] == 0 and hello["tail"] == (0, 0)
    assert hello["max_threads"] == 2 and hello["flags"] == 0
    assert hello["name"] == "omp_probe"
    # A peer offering more than the program could have seen: the layer still caps at 2.
    mm = peer.welcome(conn, threads=8)
    assert mm is not None
    wait(lambda: u32(mm, OFF_REGIONS) > 50, "regions published on the page")
    assert u32(mm, OFF_LAST_TEAM) == 2
    assert u32(mm, OFF_CLIENT_FLAGS) == 0  # malleable
    struct.pack_into("=I", mm, OFF_THREADS, 1)
    wait(lambda: p.teams() and p.teams()[-1] == 1, "team 1 after the page said 1")
    rc, text = p.finish()
    assert rc == 0, text
    assert max(p.teams()) == 2, text
    conn.close()


def test_nonmalleable_flag_in_hello_and_page(probe: Path, peer: Peer, started: list[Probe]) -> None:
    p = start(probe, ["setnum", "3", "STOP", MAXSEC], layer_env(peer.path, {"OMP_NUM_THREADS": "3", **QUIET}), started)
    conn, hello = peer.accept()
    # omp_set_num_threads() before any region is a count made known, not a verdict: the layer connects
    # undecided, and its first region (gcc's static loops number their threads) fixes the team.
    assert hello["flags"] == 0
    mm = peer.welcome(conn, threads=1)
    assert mm is not None
    wait(lambda: u32(mm, OFF_CLIENT_FLAGS) & 1 == 1 and u32(mm, OFF_FIXED_TEAM) == 3, "flags on the page")
    wait(lambda: u32(mm, OFF_REGIONS) > 20, "regions")
    rc, text = p.finish()
    assert rc == 0 and set(p.teams()) == {3}, text  # the page's 1 does not apply to a fixed team
    conn.close()


def test_cpuset_control_applied_then_restored(probe: Path, peer: Peer, started: list[Probe]) -> None:
    mine = sorted(os.sched_getaffinity(0))
    if len(mine) < 2:
        pytest.skip("needs 2 CPUs to tell a confined mask from the startup one")
    p = start(probe, ["fixed", "STOP", MAXSEC], layer_env(peer.path, {"OMP_NUM_THREADS": "3", **QUIET}), started)
    conn, _ = peer.accept()
    mm = peer.welcome(conn, threads=3)
    assert mm is not None
    wait(lambda: u32(mm, OFF_REGIONS) > 5, "regions")
    target = [mine[-1]]
    set_control(mm, 1, target)

    def all_are(cpus: list[int]) -> bool:
        lists = affinity_lists(p.pid)
        return len(lists) >= 4 and all(sorted(cpu_list(v)) == cpus for v in lists.values())

    wait(lambda: all_are(target), f"every thread confined to {target}: {affinity_lists(p.pid)}")
    set_control(mm, 0, [])
    wait(lambda: all_are(mine), f"startup mask {mine} restored: {affinity_lists(p.pid)}")
    rc, text = p.finish()
    assert rc == 0 and set(p.teams()) == {3}, text
    conn.close()


def test_reconnect_keeps_last_allocation(probe: Path, peer: Peer, started: list[Probe]) -> None:
    p = start(probe, ["follow", "STOP", MAXSEC], layer_env(peer.path, {"OMP_NUM_THREADS": "4", **NO_ESTIMATE}), started)
    conn, _ = peer.accept()
    mm = peer.welcome(conn, threads=1)
    assert mm is not None
    wait(lambda: p.teams() and p.teams()[-1] == 1, "team 1")
    # The "daemon" dies: connection closed, nobody listens.
    conn.close()
    peer.close_listener()
    before = u32(mm, OFF_REGIONS)
    time.sleep(1.0)
    assert p.proc.poll() is None
    assert u32(mm, OFF_REGIONS) > before  # still running regions, on the last page it had
    assert p.teams()[-1] == 1  # the last allocation holds, not the bound
    peer.listen()
    conn2, hello = peer.accept(timeout=20)
    assert hello["max_threads"] == 4
    mm2 = peer.welcome(conn2, threads=2)
    assert mm2 is not None
    wait(lambda: p.teams()[-1] == 2, "team 2 from the new page")
    rc, text = p.finish()
    assert rc == 0, text
    conn2.close()


BAD_ANSWERS = {
    "no_fd": {"send_fd": False},
    "short_memfd": {"file_size": 100},
    "page_magic": {"page_magic": 0x12345678},
    "page_version": {"page_version": wire.VERSION + 1},
    "welcome_version": {"header_version": wire.VERSION + 1},
    "page_size": {"page_size": 8192},
}


@pytest.mark.parametrize("case", [*BAD_ANSWERS, "refuse", "close", "silent"])
def test_bad_answers_leave_the_program_inert(probe: Path, peer: Peer, started: list[Probe], case: str) -> None:
    extra = {"OMP_NUM_THREADS": "3", **NO_ESTIMATE}
    plain = run(probe, ["explicit"], plain_env(extra))
    proc = subprocess.Popen(
        [str(probe), "explicit"],
        env=layer_env(peer.path, {**extra, "SCAF_VERBOSE": "1"}),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    conn, _ = peer.accept()
    mm = None
    if case in BAD_ANSWERS:
        mm = peer.welcome(conn, threads=1, **BAD_ANSWERS[case])
    elif case == "refuse":
        text = b"scripted refusal".ljust(120, b"\0")
        conn.sendall(wire.REFUSE.pack(wire.MAGIC, wire.VERSION, wire.MSG_REFUSE, wire.REFUSE.size, 0, 3, 1, text))
    elif case == "close":
        conn.close()
    # "silent": never answer; the layer gives up after its handshake timeout.
    out, err = proc.communicate(timeout=30)
    conn.close()
    assert proc.returncode == plain.returncode == 0, err
    assert out == plain.stdout, err  # default region at 3 threads: the page's 1 never applied
    if case == "refuse":
        assert "scripted refusal" in err, err
    if mm is not None:
        assert struct.unpack_from("=Q", mm, OFF_REGIONS)[0] == 0  # never published to
