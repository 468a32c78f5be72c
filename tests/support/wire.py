"""The daemon's wire format as the tests write it by hand: the header, HELLO, WELCOME, REFUSE, MEMORY and its reply, and the shared page (include/scaf/proto.h).

scaf itself encodes and checks its STATUS and MEMORY requests through the C
codec (scaf.lib.proto); the tests also register as clients, read and write the
page, stand in for a daemon and send what no codec makes (another version, a
bad length), so they spell the layouts out here, and
tests/python/test_wire_codec.py checks them byte for byte against the C
codec. The names of scaf.lib.proto are re-exported, so that a test needs one
module.
"""

from __future__ import annotations

import mmap
import os
import socket
import struct

from scaf.lib.proto import (
    MAGIC,
    MSG_STATUS_REPLY,
    MSG_STATUS_REQ,
    STATUS_MAX,
    VERSION,
    DaemonUnavailable,
    connect,
    recv_exact,
    status,
)

__all__ = [
    "MAGIC", "MSG_STATUS_REPLY", "MSG_STATUS_REQ", "STATUS_MAX", "VERSION", "DaemonUnavailable",
    "connect", "recv_exact", "status",
]

MSG_HELLO = 1
MSG_WELCOME = 2
MSG_REFUSE = 3
MSG_MEMORY = 6
MSG_MEMORY_REPLY = 7

MEMORY_RECALL, MEMORY_FORGET, MEMORY_REMEMBER = 1, 2, 3
MEMORY_OK, MEMORY_OFF, MEMORY_UNKNOWN, MEMORY_FAILED = 0, 1, 2, 3

REFUSE_VERSION = 1
REFUSE_MALFORMED = 2
REFUSE_FULL = 3
REFUSE_INTERNAL = 4
REFUSE_DUPLICATE = 5

HEADER = struct.Struct("=IHHII")  # magic, version, type, length, reserved
HELLO = struct.Struct("=IHHII II 16s Q 2I")
WELCOME = struct.Struct("=IHHII IIII")
REFUSE = struct.Struct("=IHHII II 120s")
# struct scaf_msg_memory: header, op, max_threads, key, verdict, reserved, name
MEMORY = struct.Struct("=IHHII IIQII 48s")
# struct scaf_msg_memory_reply: header, op, status, runs, verdict, source, start_team, forgotten, reserved
MEMORY_REPLY = struct.Struct("=IHHII IIIIIIII")

assert HEADER.size == 16 and HELLO.size == 56 and WELCOME.size == 32 and REFUSE.size == 144
assert MEMORY.size == 88 and MEMORY_REPLY.size == 48


def header(msg_type: int, length: int, version: int = VERSION, magic: int = MAGIC) -> bytes:
    return HEADER.pack(magic, version, msg_type, length, 0)


def hello(max_threads: int, name: bytes = b"pytest", flags: int = 0, version: int = VERSION, key: int = 0) -> bytes:
    return HELLO.pack(MAGIC, version, MSG_HELLO, HELLO.size, 0, max_threads, flags, name, key, 0, 0)


def memory(op: int, key: int = 0, max_threads: int = 0, verdict: int = 0, name: bytes = b"") -> bytes:
    """A MEMORY request as scaf_wire_encode_memory makes it (name cut to 47 bytes, NUL-padded)."""
    return MEMORY.pack(MAGIC, VERSION, MSG_MEMORY, MEMORY.size, 0, op, min(max_threads, 1024), key, verdict, 0,
                       name[:47])


def memory_reply(op: int, status: int, runs: int = 0, verdict: int = 0, source: int = 0, start_team: int = 0,
                 forgotten: int = 0, version: int = VERSION, length: int = MEMORY_REPLY.size,
                 reserved: int = 0) -> bytes:
    """A MEMORY_REPLY as a daemon sends it; VERSION, LENGTH and RESERVED to make a malformed one."""
    return MEMORY_REPLY.pack(MAGIC, version, MSG_MEMORY_REPLY, length, 0, op, status, runs, verdict, source,
                             start_team, forgotten, reserved)


# ---- the shared page (struct scaf_page); offsets checked against offsetof() in
# tests/python/test_daemon_proto.py ----

PAGE_SIZE = 4096
PAGE_MAGIC = 0x45474150
CONTROL_THREADS = 0
CONTROL_CPUSET = 1
CLIENT_NONMALLEABLE = 0x1
CLIENT_LONG_REGION = 0x2
CLIENT_EXITING = 0x4
HELLO_F_NONMALLEABLE = 0x1
ESTIMATE_NONE, ESTIMATE_ASSUMED, ESTIMATE_MEASURED, ESTIMATE_COUNTERS = 0, 1, 2, 3
CPUSET_WORDS = 16

PAGE_OFFSETS = {
    "magic": 0, "version": 4, "seq": 8, "threads": 12, "control": 16, "cpus": 20, "nclients": 24,
    "cpuset": 32, "gang": 160, "idle": 164, "client_flags": 224, "fixed_team": 228, "last_team": 232, "eff_team": 236,
    "efficiency_ppm": 240, "estimate": 244, "experiment_pid": 248, "client_seq": 252,
    "regions": 256, "experiments": 264, "verdict": 272, "verdict_source": 276, "reason_seq": 280,
    "reason": 288, "rigid_team": 488, "rigid_regions": 492, "wanted": 496,
    # protocol 6: the memory (docs/memory.md)
    "start_team": 552, "memory_runs": 556, "memory_verdict": 560, "memory_source": 564, "known_sites": 568,
    "known": 576, "started_with": 1600, "learned_sites": 1604, "learned": 1608,
}
MEMORY_SITES = 64
SITE_MEMO = struct.Struct("=QII")  # struct scaf_site_memo: object, offset, bits
MEMO_CLEAN, MEMO_TLS, MEMO_TLS_CLEAR, MEMO_FIXES, MEMO_STALLS = 0x1, 0x2, 0x4, 0x8, 0x10
MEMO_ALL = 0x1F
VERDICT_UNDECIDED, VERDICT_MALLEABLE, VERDICT_FIXED = 0, 1, 2
SOURCE_DEFAULT, SOURCE_EVIDENCE, SOURCE_USER, SOURCE_RULES, SOURCE_CHECK = 0, 1, 2, 3, 4
GANG_OFF, GANG_RUN, GANG_WAIT = 0, 1, 2
REASON_MAX = 200
_U32 = struct.Struct("=I")
_I32 = struct.Struct("=i")
_U64 = struct.Struct("=Q")


class Page:
    """A client's view of its shared page: reads the daemon's half, writes the client's half."""

    def __init__(self, buf: mmap.mmap) -> None:
        self.buf = buf

    def u32(self, field: str) -> int:
        return _U32.unpack_from(self.buf, PAGE_OFFSETS[field])[0]

    def set_u32(self, field: str, value: int) -> None:
        _U32.pack_into(self.buf, PAGE_OFFSETS[field], value)

    def set_i32(self, field: str, value: int) -> None:
        _I32.pack_into(self.buf, PAGE_OFFSETS[field], value)

    def set_u64(self, field: str, value: int) -> None:
        _U64.pack_into(self.buf, PAGE_OFFSETS[field], value)

    @property
    def threads(self) -> int:
        return self.u32("threads")

    @property
    def control(self) -> int:
        return self.u32("control")

    @property
    def seq(self) -> int:
        return self.u32("seq")

    def known(self) -> list[tuple[int, int, int]]:
        """The sites the daemon remembered (known[]: object, offset, bits), as many as known_sites says."""
        n = min(self.u32("known_sites"), MEMORY_SITES)
        return [SITE_MEMO.unpack_from(self.buf, PAGE_OFFSETS["known"] + i * SITE_MEMO.size) for i in range(n)]

    def learn(self, sites: list[tuple[int, int, int]], count: int | None = None) -> None:
        """Writes sites into learned[] as the layer does, then learned_sites (COUNT: any value, to lie)."""
        for i, site in enumerate(sites[:MEMORY_SITES]):
            SITE_MEMO.pack_into(self.buf, PAGE_OFFSETS["learned"] + i * SITE_MEMO.size, *site)
        self.set_u32("learned_sites", len(sites) if count is None else count)

    def decide(self, verdict: int, source: int, reason: bytes = b"") -> None:
        """The verdict, its source and reason, as the layer publishes them (reason under its seqlock)."""
        self.set_u32("reason_seq", self.u32("reason_seq") + 1)
        self.buf[PAGE_OFFSETS["reason"]:PAGE_OFFSETS["reason"] + REASON_MAX] = reason[:REASON_MAX - 1].ljust(
            REASON_MAX, b"\0")
        self.set_u32("reason_seq", self.u32("reason_seq") + 1)
        self.set_u32("verdict_source", source)
        self.set_u32("verdict", verdict)

    def cpuset(self) -> list[int]:
        """The CPU list, read under the seqlock (retry while seq is odd or moved)."""
        while True:
            s1 = self.seq
            words = struct.unpack_from(f"={CPUSET_WORDS}Q", self.buf, PAGE_OFFSETS["cpuset"])
            if s1 % 2 == 0 and self.seq == s1:
                return [w * 64 + b for w, word in enumerate(words) for b in range(64) if word >> b & 1]


def register(
    path: str, max_threads: int, name: bytes = b"pytest", flags: int = 0, timeout: float = 2.0, key: int = 0
) -> tuple[socket.socket, Page, int]:
    """HELLO as a client would (KEY: the program's, for the daemon's memory): returns (connection, mapped page,
    client id); raises Refused."""
    sock = connect(path, timeout)
    try:
        sock.sendall(hello(max_threads, name, flags, key=key))
        msg, fds, _, _ = socket.recv_fds(sock, WELCOME.size, 1)
        if len(msg) >= HEADER.size and HEADER.unpack_from(msg)[2] == MSG_REFUSE:
            msg += recv_exact(sock, REFUSE.size - len(msg))
            raise Refused(*parse_refuse(msg))
        if len(msg) != WELCOME.size or not fds:
            raise DaemonUnavailable(f"bad WELCOME from {path}: {len(msg)} bytes, {len(fds)} fds")
        client_id = WELCOME.unpack(msg)[5]
        try:
            buf = mmap.mmap(fds[0], PAGE_SIZE)
        finally:
            for fd in fds:
                os.close(fd)
    except BaseException:
        sock.close()
        raise
    return sock, Page(buf), client_id


class Refused(Exception):
    """The daemon answered REFUSE: .reason (REFUSE_*), .daemon_version, .text."""

    def __init__(self, reason: int, daemon_version: int, text: str) -> None:
        super().__init__(f"refused ({reason}): {text}")
        self.reason = reason
        self.daemon_version = daemon_version
        self.text = text


def parse_refuse(msg: bytes) -> tuple[int, int, str]:
    """(reason, daemon_version, text) of a complete REFUSE message."""
    magic, _version, mtype, length, _, reason, dver, text = REFUSE.unpack(msg[: REFUSE.size])
    if magic != MAGIC or mtype != MSG_REFUSE or length != REFUSE.size:
        raise ValueError(f"not a REFUSE message: type {mtype}, length {length}")
    return reason, dver, text.split(b"\0", 1)[0].decode(errors="replace")
