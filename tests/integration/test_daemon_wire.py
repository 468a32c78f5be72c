"""scafd never dies from client input: malformed, truncated, oversized, wrong-version and abrupt peers.

Every test runs against the plain daemon and, under `make test`, the ASan+UBSan build too.
"""

from __future__ import annotations

import os
import random
import socket
import struct
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from conftest import Daemon, daemon_binaries
from support import wire

BINARIES = daemon_binaries()
IDS = ["plain" if i == 0 else "asan" for i in range(len(BINARIES))]


@pytest.fixture(params=BINARIES, ids=IDS)
def daemon(request: pytest.FixtureRequest, scafd_factory: Callable[..., Daemon]) -> Iterator[Daemon]:
    d = scafd_factory("--policy", "equipartition", "--cpus", "4", "--no-lookout", binary=request.param)
    yield d
    # It must still be serving, then exit cleanly; a sanitizer report fails the test.
    assert_serving(d)
    assert d.stop() == 0, d.stderr()
    for marker in ("AddressSanitizer", "LeakSanitizer", "runtime error:", "UndefinedBehaviorSanitizer"):
        assert marker not in d.stderr(), d.stderr()


def assert_serving(d: Daemon) -> None:
    """The daemon answers status and still accepts a well-behaved client."""
    assert d.alive(), d.stderr()
    d.status()
    s, page, _ = wire.register(d.socket, 2)
    assert page.threads >= 1
    s.close()


def raw(d: Daemon) -> socket.socket:
    return wire.connect(d.socket, timeout=5)


def read_refuse(sock: socket.socket) -> tuple[int, int, str]:
    buf = b""
    while len(buf) < wire.REFUSE.size:
        chunk = sock.recv(wire.REFUSE.size - len(buf))
        assert chunk, f"connection closed after {len(buf)} bytes, before a complete REFUSE"
        buf += chunk
    return wire.parse_refuse(buf)


def assert_closed(sock: socket.socket) -> None:
    """After a refusal the daemon drops the connection: EOF (or a reset) follows."""
    try:
        assert sock.recv(1) == b""
    except ConnectionResetError:
        pass


def stderr_lines(d: Daemon) -> int:
    return len([ln for ln in d.stderr().splitlines() if "refused" in ln])


def hello_fields(
    max_threads: int = 4, flags: int = 0, key: int = 0, reserved: tuple[int, int] = (0, 0),
    version: int = wire.VERSION, length: int = wire.HELLO.size, hreserved: int = 0, magic: int = wire.MAGIC,
    mtype: int = wire.MSG_HELLO,
) -> bytes:
    return wire.HELLO.pack(magic, version, mtype, length, hreserved, max_threads, flags, b"bad", key, *reserved)


# (name, bytes to send, expected reason, substring of the REFUSE text)
MALFORMED = [
    ("bad magic", hello_fields(magic=0xDEADBEEF), wire.REFUSE_MALFORMED, "bad magic"),
    ("wrong version", hello_fields(version=wire.VERSION + 1), wire.REFUSE_VERSION,
     f"scafd speaks protocol {wire.VERSION}, client speaks {wire.VERSION + 1}"),
    ("version 0", wire.header(wire.MSG_STATUS_REQ, 16, version=0), wire.REFUSE_VERSION, "client speaks 0"),
    ("unknown type", wire.header(99, 16), wire.REFUSE_MALFORMED, "type 99"),
    ("daemon-only type", wire.header(wire.MSG_WELCOME, wire.WELCOME.size), wire.REFUSE_MALFORMED, "type 2"),
    ("type zero", wire.header(0, 16), wire.REFUSE_MALFORMED, "type 0"),
    ("hello too long", hello_fields(length=wire.HELLO.size + 4) + b"\0" * 4, wire.REFUSE_MALFORMED, "length"),
    ("hello too short", hello_fields(length=20), wire.REFUSE_MALFORMED, "length"),
    ("status req with body", wire.header(wire.MSG_STATUS_REQ, 17) + b"x", wire.REFUSE_MALFORMED, "length"),
    ("length past STATUS_MAX", wire.header(wire.MSG_STATUS_REQ, 0xFFFFFFFF), wire.REFUSE_MALFORMED, "length"),
    ("length below header", wire.header(wire.MSG_HELLO, 3), wire.REFUSE_MALFORMED, "length"),
    ("nonzero header reserved", hello_fields(hreserved=1), wire.REFUSE_MALFORMED, "reserved"),
    ("max_threads 0", hello_fields(max_threads=0), wire.REFUSE_MALFORMED, "max_threads 0"),
    ("max_threads too big", hello_fields(max_threads=1025), wire.REFUSE_MALFORMED, "max_threads 1025"),
    ("max_threads huge", hello_fields(max_threads=0xFFFFFFFF), wire.REFUSE_MALFORMED, "max_threads"),
    ("unknown flag bits", hello_fields(flags=0x80), wire.REFUSE_MALFORMED, "flags"),
    ("nonzero hello reserved", hello_fields(reserved=(0, 7)), wire.REFUSE_MALFORMED, "reserved"),
]


@pytest.mark.parametrize(("name", "data", "reason", "text"), MALFORMED, ids=[m[0] for m in MALFORMED])
def test_malformed_refused(daemon: Daemon, name: str, data: bytes, reason: int, text: str) -> None:
    before = stderr_lines(daemon)
    s = raw(daemon)
    s.sendall(data)
    got_reason, daemon_version, got_text = read_refuse(s)
    assert got_reason == reason, got_text
    assert daemon_version == wire.VERSION
    assert text in got_text
    assert_closed(s)
    s.close()
    # One line on stderr per refusal, saying why.
    assert stderr_lines(daemon) == before + 1
    assert text in daemon.stderr()
    assert daemon.status()["clients"] == []


def test_malformed_sent_byte_by_byte(daemon: Daemon) -> None:
    """A message is acted on only when complete, however it is split."""
    s = raw(daemon)
    data = hello_fields(max_threads=0)
    for i in range(len(data) - 1):
        s.send(data[i : i + 1])
    time.sleep(0.1)
    assert daemon.status()["clients"] == [], "nothing happens before the last byte"
    s.send(data[-1:])
    assert read_refuse(s)[0] == wire.REFUSE_MALFORMED
    s.close()


def test_hello_split_across_sends_is_accepted(daemon: Daemon) -> None:
    s = raw(daemon)
    data = wire.hello(3)
    s.send(data[:5])
    time.sleep(0.05)
    s.send(data[5:30])
    time.sleep(0.05)
    s.send(data[30:])
    msg, fds, _, _ = socket.recv_fds(s, wire.WELCOME.size, 1)
    assert len(msg) == wire.WELCOME.size and len(fds) == 1
    for fd in fds:
        os.close(fd)
    assert [c["max_threads"] for c in daemon.status()["clients"]] == [3]
    s.close()


def test_second_hello_is_duplicate(daemon: Daemon) -> None:
    s, _, _ = wire.register(daemon.socket, 4)
    assert len(daemon.status()["clients"]) == 1
    s.sendall(wire.hello(4))
    reason, _, text = read_refuse(s)
    assert reason == wire.REFUSE_DUPLICATE and "already said HELLO" in text
    assert_closed(s)
    s.close()
    # The refused connection was a client: dropping it is its departure.
    daemon.wait_for(lambda st: st["clients"] == [], what="duplicate's client gone")


def test_status_on_a_fresh_connection_then_hello(daemon: Daemon) -> None:
    """Status works on any connection that has not said HELLO; the same connection may then register."""
    s = raw(daemon)
    for _ in range(3):
        s.sendall(wire.header(wire.MSG_STATUS_REQ, 16))
        h = wire.HEADER.unpack(recv_exact(s, 16))
        assert h[2] == wire.MSG_STATUS_REPLY
        recv_exact(s, h[3] - 16)
    s.sendall(wire.hello(2))
    msg, fds, _, _ = socket.recv_fds(s, wire.WELCOME.size, 1)
    assert wire.HEADER.unpack_from(msg)[2] == wire.MSG_WELCOME and len(fds) == 1
    os.close(fds[0])
    s.close()


def recv_exact(s: socket.socket, n: int) -> bytes:
    buf = b""
    while len(buf) < n:
        chunk = s.recv(n - len(buf))
        assert chunk, "early EOF"
        buf += chunk
    return buf


@pytest.mark.parametrize(
    "data",
    [b"", b"\x53", wire.header(wire.MSG_HELLO, wire.HELLO.size)[:7], wire.header(wire.MSG_HELLO, 56),
     wire.hello(4)[:30], wire.header(wire.MSG_STATUS_REQ, 16)[:15]],
    ids=["connect-close", "one-byte", "half-header", "header-only", "half-hello", "almost-status"],
)
def test_abrupt_disconnects(daemon: Daemon, data: bytes) -> None:
    for _ in range(5):
        s = raw(daemon)
        if data:
            s.sendall(data)
        s.close()
    assert daemon.status()["clients"] == []


def test_hello_then_reset_mid_welcome(daemon: Daemon) -> None:
    """A client that says HELLO and vanishes at once (SO_LINGER 0: reset) leaves no trace."""
    for _ in range(10):
        s = raw(daemon)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        s.sendall(wire.hello(4))
        s.close()
    daemon.wait_for(lambda st: st["clients"] == [], what="no leftover clients")


def test_oversized_garbage(daemon: Daemon) -> None:
    s = raw(daemon)
    junk = os.urandom(1 << 20)
    try:
        s.sendall(junk)
    except (BrokenPipeError, ConnectionResetError):
        pass  # the daemon dropped us after the first 16 bytes, as it should
    reason, _, text = read_refuse(s)
    assert reason in (wire.REFUSE_MALFORMED, wire.REFUSE_VERSION), text
    s.close()


def test_peer_that_never_reads(daemon: Daemon) -> None:
    """Requests without reading the replies cannot stall the loop; the peer is dropped eventually."""
    s = raw(daemon)
    s.setblocking(False)
    req = wire.header(wire.MSG_STATUS_REQ, 16) * 4096
    sent = 0
    try:
        while sent < len(req):
            sent += s.send(req[sent:])
    except BlockingIOError:
        pass
    # Others are served meanwhile, promptly (status has its own 2 s timeout).
    for _ in range(3):
        assert daemon.status()["clients"] == []
    daemon.wait_for(lambda st: "left its status reply unread" in daemon.stderr(), timeout=15, what="stall drop")
    s.close()


def test_connection_storm(daemon: Daemon) -> None:
    socks = [raw(daemon) for _ in range(100)]
    for i, s in enumerate(socks):
        if i % 3 == 0:
            s.sendall(wire.header(wire.MSG_STATUS_REQ, 16))
        elif i % 3 == 1:
            s.sendall(b"junkjunkjunkjunk")
    daemon.status()
    for s in socks:
        s.close()


def test_client_scribbling_on_its_page(daemon: Daemon) -> None:
    """Every client-written field is untrusted: garbage there changes nothing for anyone else."""
    s1, p1, _ = wire.register(daemon.socket, 8)
    s2, p2, _ = wire.register(daemon.socket, 8)
    p1.buf[224:336] = b"\xff" * 112  # the whole client half: flags, teams, pids, estimates
    p1.set_u32("seq", 12345)  # not its to write; only its own reads would suffer
    p1.set_i32("experiment_pid", 1)  # init is not its child: ignored
    st = daemon.wait_for(lambda st: any(not c["malleable"] for c in st["clients"]), what="flags seen")
    mine = next(c for c in st["clients"] if not c["malleable"])
    assert 1 <= mine["threads"] <= 1024 and mine["estimate"] == "none"
    assert 1 <= p2.threads <= 4
    s1.close()
    s2.close()


def test_shrinking_the_page_is_impossible(daemon: Daemon) -> None:
    """The memfd is sealed: a client cannot truncate it under the daemon (that would be a SIGBUS there)."""
    s = raw(daemon)
    s.sendall(wire.hello(4))
    _, fds, _, _ = socket.recv_fds(s, wire.WELCOME.size, 1)
    fd = fds[0]
    with pytest.raises(PermissionError):
        os.ftruncate(fd, 0)
    with pytest.raises(PermissionError):
        os.ftruncate(fd, 1 << 20)
    assert os.fstat(fd).st_size == wire.PAGE_SIZE
    os.close(fd)
    daemon.status()
    s.close()


def test_daemon_binary_exists() -> None:
    for b in BINARIES:
        assert Path(b).exists(), f"{b} missing: run make"


def test_random_messages(daemon: Daemon) -> None:
    """Fixed-seed random headers and bodies near the valid ones: always an answer or a close, never a crash."""
    rng = random.Random(1234)
    for _ in range(150):
        mtype = rng.choice([0, 1, 2, 3, 4, 5, 6, 255, 65535])
        length = rng.choice([0, 15, 16, 17, 55, 56, 57, 144, wire.STATUS_MAX, wire.STATUS_MAX + 1, 0xFFFFFFFF])
        version = rng.choice([1, 1, 1, 0, 2, 65535])
        msg = wire.HEADER.pack(wire.MAGIC, version, mtype, length, rng.choice([0, 0, 1]))
        msg += rng.randbytes(rng.choice([0, 8, 40, 200]))
        s = raw(daemon)
        try:
            s.sendall(msg)
            s.shutdown(socket.SHUT_WR)
            while s.recv(65536):
                pass
        except (ConnectionResetError, BrokenPipeError):
            pass
        finally:
            s.close()
    assert_serving(daemon)
