"""Whether the daemon behind a socket may steer this user's programs: the rules of src/common/peer.c."""

from __future__ import annotations

import os
import pwd
import socket
import stat
import struct

# struct ucred: pid, uid, gid
UCRED = struct.Struct("=iII")


class UntrustedDaemon(Exception):
    """The daemon on the socket runs as a user this user does not trust; the message says both uids."""

    def __init__(self, path: str, peer_uid: int) -> None:
        super().__init__(
            f"the daemon on {path} runs as uid {peer_uid}, not as you (uid {os.getuid()}), root or "
            "SCAF_DAEMON_USER; not trusting it (the layer refuses it too: programs run unsteered)"
        )
        self.path = path
        self.peer_uid = peer_uid


def configured_uid() -> int | None:
    """SCAF_DAEMON_USER as a uid (a user name or a number), None when unset or unknown."""
    v = os.environ.get("SCAF_DAEMON_USER", "")
    if not v:
        return None
    if v.isdigit():
        return int(v)
    try:
        return pwd.getpwnam(v).pw_uid
    except KeyError:
        return None


# Where system services' runtime directories live (src/common/peer.c).
RUNDIR = "/run"


def handed_by_root(path: str, uid: int) -> bool:
    """PATH's directory belongs to uid and is an entry of /run, which only root can write (/run/scaf)."""
    if not path.startswith("/"):
        return False
    d = os.path.dirname(path)
    if d in ("", "/"):
        return False
    try:
        ds = os.lstat(d)
        ps = os.stat(os.path.dirname(d))
        run = os.stat(RUNDIR)
    except OSError:
        return False
    writable = stat.S_IWGRP | stat.S_IWOTH
    return (stat.S_ISDIR(ds.st_mode) and ds.st_uid == uid and not ds.st_mode & writable
            and (ps.st_dev, ps.st_ino) == (run.st_dev, run.st_ino)
            and ps.st_uid == 0 and not ps.st_mode & writable)


def peer_uid(sock: socket.socket) -> int:
    """The uid of the process that listens at the other end (SO_PEERCRED)."""
    raw = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, UCRED.size)
    return UCRED.unpack(raw)[1]


def check(sock: socket.socket, path: str) -> None:
    """Raises UntrustedDaemon unless the daemon runs as us, root, SCAF_DAEMON_USER, or owns its /run directory."""
    uid = peer_uid(sock)
    if uid in (os.getuid(), 0) or uid == configured_uid() or handed_by_root(path, uid):
        return
    raise UntrustedDaemon(path, uid)
