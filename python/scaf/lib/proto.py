"""The daemon's status and memory requests as seen from Python, encoded and checked by the one C codec (include/scaf/wire.h, src/common/wire.c) through libscaf_launch.so: no layout or value of the wire format is written here.

The constants callers use (``proto.MEMORY_RECALL``, ``proto.MEMORY_OK``, ``proto.VERDICT_FIXED``, ...) are
proto.h's, read from the C side by their C names (``scaf_wire_constant``) when first used, as is the library:
importing this module needs no build, asking a daemon does (``progkey.KeyLibraryMissing`` says "run make").
"""

from __future__ import annotations

import ctypes
import socket

from scaf.lib import progkey, statusschema, trust
from scaf.lib.statusschema import BadStatus
from scaf.lib.trust import UntrustedDaemon

__all__ = ["BadStatus", "DaemonUnavailable", "MemoryReply", "UntrustedDaemon", "connect", "memory", "status"]

# The module's constants, each by the C name scaf_wire_constant knows it by: proto.h's macros and enums lose
# their SCAF_ (SCAF_PROTO_ for the magic and the version), the sizes are those of the messages.
_FROM_C = {
    **{c.removeprefix("SCAF_PROTO_").removeprefix("SCAF_"): c for c in (
        "SCAF_PROTO_MAGIC", "SCAF_PROTO_VERSION", "SCAF_STATUS_MAX", "SCAF_MEMORY_NAME",
        "SCAF_MSG_REFUSE", "SCAF_MSG_STATUS_REQ", "SCAF_MSG_STATUS_REPLY", "SCAF_MSG_MEMORY", "SCAF_MSG_MEMORY_REPLY",
        "SCAF_MEMORY_RECALL", "SCAF_MEMORY_FORGET", "SCAF_MEMORY_REMEMBER",
        "SCAF_MEMORY_OK", "SCAF_MEMORY_OFF", "SCAF_MEMORY_UNKNOWN", "SCAF_MEMORY_FAILED",
        "SCAF_VERDICT_UNDECIDED", "SCAF_VERDICT_MALLEABLE", "SCAF_VERDICT_FIXED",
        "SCAF_SOURCE_DEFAULT", "SCAF_SOURCE_EVIDENCE", "SCAF_SOURCE_USER", "SCAF_SOURCE_RULES", "SCAF_SOURCE_CHECK",
        "SCAF_ESTIMATE_NONE", "SCAF_ESTIMATE_ASSUMED", "SCAF_ESTIMATE_MEASURED",
        "SCAF_CONTROL_THREADS", "SCAF_CONTROL_CPUSET", "SCAF_CPUSET_WORDS", "SCAF_REASON_MAX")},
    "HEADER_SIZE": "sizeof(struct scaf_msg_header)",
    "MEMORY_SIZE": "sizeof(struct scaf_msg_memory)",
    "MEMORY_REPLY_SIZE": "sizeof(struct scaf_msg_memory_reply)",
    "REFUSE_SIZE": "sizeof(struct scaf_msg_refuse)",
}


class DaemonUnavailable(Exception):
    """No daemon answers on the socket (absent, stale, or unusable path), or what answers is not one."""


class _Codec:
    """libscaf_launch.so's wire codec, bound once: its functions, and the two structs of wire.h it fills (the
    decoded answer, the reason something was not one), sized from the C side and checked against it."""

    def __init__(self) -> None:
        lib = progkey.library()
        lib.scaf_wire_constant.restype = ctypes.c_int
        lib.scaf_wire_constant.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_uint64)]
        self.lib = lib

        class Refusal(ctypes.Structure):
            """struct scaf_wire_refusal."""

            _fields_ = [("reason", ctypes.c_uint32), ("text", ctypes.c_char * self.constant("SCAF_REFUSE_TEXT"))]

        class Reply(ctypes.Structure):
            """struct scaf_wire_memory_reply."""

            _fields_ = [(f, ctypes.c_uint32) for f in ("op", "status", "runs", "verdict", "source", "start_team",
                                                       "forgotten")]

        for struct, name in ((Refusal, "struct scaf_wire_refusal"), (Reply, "struct scaf_wire_memory_reply")):
            if ctypes.sizeof(struct) != self.constant(f"sizeof({name})"):
                raise progkey.KeyLibraryMissing(f"{name} is {self.constant(f'sizeof({name})')} bytes in "
                                                f"libscaf_launch.so, python/scaf/lib/proto.py expects "
                                                f"{ctypes.sizeof(struct)}; run make")
        self.Refusal, self.Reply = Refusal, Reply
        lib.scaf_wire_put_status_req.restype = None
        lib.scaf_wire_put_status_req.argtypes = [ctypes.c_char_p]
        lib.scaf_wire_encode_memory.restype = None
        lib.scaf_wire_encode_memory.argtypes = [ctypes.c_char_p, ctypes.c_uint32, ctypes.c_uint64, ctypes.c_uint32,
                                                ctypes.c_uint32, ctypes.c_char_p]
        lib.scaf_wire_check_reply.restype = ctypes.c_uint32
        lib.scaf_wire_check_reply.argtypes = [ctypes.c_char_p, ctypes.c_uint32, ctypes.POINTER(Refusal)]
        lib.scaf_wire_decode_memory_reply.restype = ctypes.c_int
        lib.scaf_wire_decode_memory_reply.argtypes = [ctypes.c_char_p, ctypes.c_size_t, ctypes.POINTER(Reply),
                                                      ctypes.POINTER(Refusal)]
        self.header_size = self.constant("sizeof(struct scaf_msg_header)")
        self.memory_size = self.constant("sizeof(struct scaf_msg_memory)")
        self.status_req = self.constant("SCAF_MSG_STATUS_REQ")
        self.memory_req = self.constant("SCAF_MSG_MEMORY")
        self.reply_ok = self.constant("SCAF_WIRE_REPLY_OK")
        self.reply_refused = self.constant("SCAF_WIRE_REPLY_REFUSED")

    def constant(self, name: str) -> int:
        value = ctypes.c_uint64()
        if self.lib.scaf_wire_constant(name.encode(), ctypes.byref(value)) != 0:
            raise progkey.KeyLibraryMissing(f"libscaf_launch.so does not know {name}; run make")
        return value.value


_bound: _Codec | None = None


def _codec() -> _Codec:
    global _bound
    if _bound is None:
        _bound = _Codec()
    return _bound


def __getattr__(name: str) -> int:
    """proto.MEMORY_OK and the other constants of _FROM_C: read from the C side once."""
    c = _FROM_C.get(name)
    if c is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = _codec().constant(c)
    globals()[name] = value
    return value


def _said(why: ctypes.Structure) -> str:
    return why.text.decode(errors="replace")


def recv_exact(sock: socket.socket, n: int) -> bytes:
    """N bytes from SOCK; raises DaemonUnavailable when the daemon closes the connection first."""
    buf = b""
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise DaemonUnavailable("daemon closed the connection early")
        buf += chunk
    return buf


def _answer(sock: socket.socket, asked: int, path: str) -> bytes:
    """The daemon's whole answer to the request of type ASKED, once the C codec passed its header."""
    c = _codec()
    head = recv_exact(sock, c.header_size)
    why = c.Refusal()
    length = c.lib.scaf_wire_check_reply(head, asked, ctypes.byref(why))
    if length == 0:
        raise DaemonUnavailable(f"unexpected reply from {path} ({_said(why)})")
    return head + recv_exact(sock, length - c.header_size)


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


def status_request() -> bytes:
    """A STATUS_REQ, as scaf_wire_encode_status_req makes it."""
    c = _codec()
    buf = ctypes.create_string_buffer(c.header_size)
    c.lib.scaf_wire_put_status_req(buf)
    return buf.raw


def status(path: str, timeout: float = 2.0) -> dict:
    """Ask the daemon for its state.

    Raises DaemonUnavailable (nobody answers, or not with a status reply), UntrustedDaemon (another user's
    daemon), or BadStatus (an answer whose JSON is not a status: its one-line reason).
    """
    c = _codec()
    sock = connect(path, timeout)
    try:
        sock.sendall(status_request())
        body = _answer(sock, c.status_req, path)[c.header_size:]
    except (TimeoutError, OSError) as e:
        raise DaemonUnavailable(f"daemon on {path} did not answer: {e}") from e
    finally:
        sock.close()
    return statusschema.parse(body)


class MemoryReply:
    """The daemon's answer to a MEMORY request (struct scaf_wire_memory_reply)."""

    def __init__(self, op: int, status: int, runs: int, verdict: int, source: int, start_team: int,
                 forgotten: int) -> None:
        self.op, self.status, self.runs, self.verdict = op, status, runs, verdict
        self.source, self.start_team, self.forgotten = source, start_team, forgotten


def memory_request(op: int, key: int = 0, max_threads: int = 0, verdict: int = 0, name: bytes = b"") -> bytes:
    """A MEMORY request, as scaf_wire_encode_memory makes it (max_threads clamped to SCAF_MAX_CPUS, the name cut
    to SCAF_MEMORY_NAME - 1 bytes and NUL-padded). Raises ValueError for a negative field, or an op, key or
    verdict that its C type cannot hold."""
    max_threads = min(max_threads, 0xFFFFFFFF)  # the C side clamps it further
    for what, value, bits in (("op", op, 32), ("key", key, 64), ("max_threads", max_threads, 32),
                              ("verdict", verdict, 32)):
        if not 0 <= value < 1 << bits:
            raise ValueError(f"MEMORY {what} {value} is not a {bits}-bit unsigned value")
    c = _codec()
    buf = ctypes.create_string_buffer(c.memory_size)
    c.lib.scaf_wire_encode_memory(buf, op, key, max_threads, verdict, name)
    return buf.raw


def memory(path: str, op: int, key: int = 0, max_threads: int = 0, verdict: int = 0, name: bytes = b"",
           timeout: float = 2.0) -> MemoryReply:
    """Send one MEMORY request and read the answer. Raises DaemonUnavailable (nobody answers, a daemon that
    refuses the request, such as one of an older protocol: the reason is in the message; an answer that is
    not a MEMORY_REPLY) or UntrustedDaemon."""
    c = _codec()
    request = memory_request(op, key, max_threads, verdict, name)
    sock = connect(path, timeout)
    try:
        sock.sendall(request)
        msg = _answer(sock, c.memory_req, path)
    except (TimeoutError, OSError) as e:
        raise DaemonUnavailable(f"daemon on {path} did not answer: {e}") from e
    finally:
        sock.close()
    reply, why = c.Reply(), c.Refusal()
    kind = c.lib.scaf_wire_decode_memory_reply(msg, len(msg), ctypes.byref(reply), ctypes.byref(why))
    if kind == c.reply_refused:
        raise DaemonUnavailable(f"the daemon on {path} refused: {_said(why)}")
    if kind != c.reply_ok:
        raise DaemonUnavailable(f"unexpected reply from {path} ({_said(why)})")
    return MemoryReply(reply.op, reply.status, reply.runs, reply.verdict, reply.source, reply.start_team,
                       reply.forgotten)
