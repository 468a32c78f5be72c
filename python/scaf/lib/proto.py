"""The daemon's status request as seen from Python: the part of include/scaf/proto.h that scaf's commands use."""

from __future__ import annotations

import socket
import struct

from scaf.lib import statusschema, trust
from scaf.lib.statusschema import BadStatus
from scaf.lib.trust import UntrustedDaemon

__all__ = ["BadStatus", "DaemonUnavailable", "UntrustedDaemon", "connect", "status"]

MAGIC = 0x46414353
VERSION = 5

MSG_STATUS_REQ = 4
MSG_STATUS_REPLY = 5

HEADER = struct.Struct("=IHHII")  # magic, version, type, length, reserved
STATUS_MAX = 1 << 20

assert HEADER.size == 16


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
