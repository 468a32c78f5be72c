"""The daemon's status and memory requests as seen from Python: the part of include/scaf/proto.h that scaf's commands use."""

from __future__ import annotations

import socket
import struct

from scaf.lib import statusschema, trust
from scaf.lib.statusschema import BadStatus
from scaf.lib.trust import UntrustedDaemon

__all__ = ["BadStatus", "DaemonUnavailable", "MemoryReply", "UntrustedDaemon", "connect", "memory", "status"]

MAGIC = 0x46414353
VERSION = 6

MSG_STATUS_REQ = 4
MSG_STATUS_REPLY = 5
MSG_MEMORY = 6
MSG_MEMORY_REPLY = 7
MSG_REFUSE = 3

MEMORY_RECALL, MEMORY_FORGET, MEMORY_REMEMBER = 1, 2, 3
MEMORY_OK, MEMORY_OFF, MEMORY_UNKNOWN, MEMORY_FAILED = 0, 1, 2, 3
MEMORY_NAME = 48
VERDICT_UNDECIDED, VERDICT_MALLEABLE, VERDICT_FIXED = 0, 1, 2  # enum scaf_verdict
SOURCE_DEFAULT, SOURCE_EVIDENCE, SOURCE_USER, SOURCE_RULES, SOURCE_CHECK = 0, 1, 2, 3, 4  # enum scaf_verdict_source

HEADER = struct.Struct("=IHHII")  # magic, version, type, length, reserved
STATUS_MAX = 1 << 20
# struct scaf_msg_memory: header, op, max_threads, key, verdict, reserved, name
MEMORY = struct.Struct("=IHHII IIQII 48s")
# struct scaf_msg_memory_reply: header, op, status, runs, verdict, source, start_team, forgotten, reserved
MEMORY_REPLY = struct.Struct("=IHHII IIIIIIII")
REFUSE = struct.Struct("=IHHII II 120s")

assert HEADER.size == 16 and MEMORY.size == 88 and MEMORY_REPLY.size == 48 and REFUSE.size == 144


class DaemonUnavailable(Exception):
    """No daemon answers on the socket (absent, stale, or unusable path)."""


def header(msg_type: int, length: int, version: int = VERSION, magic: int = MAGIC) -> bytes:
    return HEADER.pack(magic, version, msg_type, length, 0)


def recv_exact(sock: socket.socket, n: int) -> bytes:
    """N bytes from SOCK; raises DaemonUnavailable when the daemon closes the connection first."""
    buf = b""
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise DaemonUnavailable("daemon closed the connection early")
        buf += chunk
    return buf


def connect(path: str, timeout: float = 2.0) -> socket.socket:
    """A connection to the daemon on PATH; raises DaemonUnavailable, or UntrustedDaemon (SO_PEERCRED)."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(timeout)
    try:
        sock.connect(path)
    except (FileNotFoundError, ConnectionRefusedError) as e:
        sock.close()
        raise DaemonUnavailable(f"no scaf daemon answers on {path} ({e.strerror})") from e
    except OSError as e:
        sock.close()
        raise DaemonUnavailable(f"cannot use socket {path}: {e.strerror or e}") from e
    try:
        trust.check(sock, path)
    except BaseException:
        sock.close()
        raise
    return sock


def status(path: str, timeout: float = 2.0) -> dict:
    """Ask the daemon for its state.

    Raises DaemonUnavailable (nobody answers), UntrustedDaemon (another user's
    daemon), or BadStatus (an answer that is not a status: its one-line reason).
    """
    sock = connect(path, timeout)
    try:
        sock.sendall(header(MSG_STATUS_REQ, HEADER.size))
        magic, version, mtype, length, _ = HEADER.unpack(recv_exact(sock, HEADER.size))
        if magic != MAGIC or mtype != MSG_STATUS_REPLY or not HEADER.size <= length <= STATUS_MAX:
            raise DaemonUnavailable(f"unexpected reply from {path} (type {mtype}, version {version})")
        body = recv_exact(sock, length - HEADER.size)
    except (TimeoutError, OSError) as e:
        raise DaemonUnavailable(f"daemon on {path} did not answer: {e}") from e
    finally:
        sock.close()
    return statusschema.parse(body)


class MemoryReply:
    """The daemon's answer to a MEMORY request (struct scaf_msg_memory_reply)."""

    def __init__(self, op: int, status: int, runs: int, verdict: int, source: int, start_team: int,
                 forgotten: int) -> None:
        self.op, self.status, self.runs, self.verdict = op, status, runs, verdict
        self.source, self.start_team, self.forgotten = source, start_team, forgotten


def memory_request(op: int, key: int = 0, max_threads: int = 0, verdict: int = 0, name: bytes = b"") -> bytes:
    """A MEMORY request, byte for byte as scaf_wire_encode_memory makes it (name cut to 47 bytes, NUL-padded)."""
    return MEMORY.pack(MAGIC, VERSION, MSG_MEMORY, MEMORY.size, 0, op, min(max_threads, 1024), key, verdict, 0,
                       name[:MEMORY_NAME - 1])


def memory(path: str, op: int, key: int = 0, max_threads: int = 0, verdict: int = 0, name: bytes = b"",
           timeout: float = 2.0) -> MemoryReply:
    """Send one MEMORY request and read the answer. Raises DaemonUnavailable (nobody answers, a daemon that
    refuses the request, such as one of an older protocol: the reason is in the message) or UntrustedDaemon."""
    sock = connect(path, timeout)
    try:
        sock.sendall(memory_request(op, key, max_threads, verdict, name))
        head = recv_exact(sock, HEADER.size)
        magic, version, mtype, length, _ = HEADER.unpack(head)
        if magic == MAGIC and mtype == MSG_REFUSE and length == REFUSE.size:
            text = REFUSE.unpack(head + recv_exact(sock, REFUSE.size - HEADER.size))[-1]
            said = text.split(b"\0")[0].decode(errors="replace")
            raise DaemonUnavailable(f"the daemon on {path} refused: {said}")
        if magic != MAGIC or version != VERSION or mtype != MSG_MEMORY_REPLY or length != MEMORY_REPLY.size:
            raise DaemonUnavailable(f"unexpected reply from {path} (type {mtype}, version {version})")
        f = MEMORY_REPLY.unpack(head + recv_exact(sock, MEMORY_REPLY.size - HEADER.size))
    except (TimeoutError, OSError) as e:
        raise DaemonUnavailable(f"daemon on {path} did not answer: {e}") from e
    finally:
        sock.close()
    return MemoryReply(*f[5:12])
