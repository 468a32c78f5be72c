"""Find the daemon a command should talk to, and start a per-user one when none answers."""

from __future__ import annotations

import contextlib
import fcntl
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass

from scaf.lib import daemon, paths, proto
from scaf.lib.launch import strip_layer

# sun_path holds 108 bytes including the terminating NUL.
SUN_PATH_MAX = 107

# How long a per-user daemon that `scaf run` started lives without clients.
IDLE_EXIT_S = 30


class StartError(Exception):
    """A daemon could not be started; the message says why and what to do."""


@dataclass
class Started:
    socket: str
    pid: int
    log: str


def socket_problem(path: str) -> str | None:
    """Why PATH cannot be a daemon's socket, or None when it could be one.

    The connect() errors for these cases (ECONNREFUSED on a directory, EINVAL
    on a long path) read like "no daemon", which sends the user looking in the
    wrong place; say what is wrong with the path instead.
    """
    if not path:
        return "the socket path is empty"
    size = len(os.fsencode(path))
    if size > SUN_PATH_MAX:
        return f"socket path {path} is too long ({size} bytes; Unix sockets allow at most {SUN_PATH_MAX})"
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    except NotADirectoryError:
        return f"socket path {path} goes through something that is not a directory"
    except PermissionError:
        return f"socket path {path} is not reachable (permission denied on a directory above it)"
    except OSError as e:
        return f"socket path {path} is unusable: {e.strerror}"
    if stat.S_ISDIR(st.st_mode):
        return f"socket path {path} is a directory, not a socket"
    if not stat.S_ISSOCK(st.st_mode):
        return f"socket path {path} is not a socket (it is an ordinary file or device)"
    return None


def log_path(sock: str) -> str:
    """Where an auto-started daemon's stderr goes: next to its socket."""
    base = os.path.basename(sock)
    stem = base[: -len(".sock")] if base.endswith(".sock") and len(base) > 5 else base
    return os.path.join(os.path.dirname(sock) or ".", stem + ".log")


def answers(sock: str, timeout: float = 2.0) -> dict | None:
    """The daemon's status, or None when no daemon answers on SOCK."""
    try:
        return proto.status(sock, timeout=timeout)
    except proto.DaemonUnavailable:
        return None


@contextlib.contextmanager
def _start_lock(sock: str) -> Iterator[None]:
    """Serialize concurrent starters on this socket (scafd's own refusal is the backstop)."""
    # scafd itself holds P.lock while it serves; this one only serializes starters.
    lock = sock + ".start.lock"
    try:
        fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    except OSError:
        # A directory we cannot write: scafd will fail on it too and say why.
        yield
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def ensure_daemon(sock: str, timeout: float = 10.0) -> Started | None:
    """Make sure a daemon answers on SOCK; start one (idle-exit) if none does.

    Returns None when one already answered (or another starter won the race),
    a Started when this call started it. Raises StartError with a message fit
    for the user otherwise.
    """
    if answers(sock) is not None:
        return None
    problem = socket_problem(sock)
    if problem:
        raise StartError(problem)
    scafd = paths.scafd()
    if not os.access(scafd, os.X_OK):
        raise StartError(f"the daemon {scafd} is missing; run make")
    parent = os.path.dirname(sock) or "."
    try:
        # The default /tmp/scaf-$UID and $XDG_RUNTIME_DIR/scaf are ours to create, private.
        os.makedirs(parent, mode=0o700, exist_ok=True)
    except OSError as e:
        raise StartError(f"cannot create the socket's directory {parent}: {e.strerror}") from e
    log = log_path(sock)
    env = dict(os.environ)
    # A daemon is no OpenMP client: keep a nested `scaf run`'s layer out of it.
    if "LD_PRELOAD" in env:
        env["LD_PRELOAD"] = strip_layer(env["LD_PRELOAD"])
        if not env["LD_PRELOAD"]:
            del env["LD_PRELOAD"]
    with _start_lock(sock):
        # Someone may have started one while we waited for the lock.
        if answers(sock) is not None:
            return None
        d = daemon.PrivateDaemon(["--idle-exit", str(IDLE_EXIT_S)], binary=scafd, socket=sock, env=env,
                                 stderr_path=log, detached=True, timeout=timeout)
        try:
            st = d.start()
        except OSError as e:
            raise StartError(f"cannot start {scafd}: {e.strerror or e}") from e
        except RuntimeError as e:
            raise StartError(str(e)) from e
        except daemon.DaemonExited:
            # scafd refuses a socket that a live daemon holds: ask again before failing.
            if answers(sock) is not None:
                return None
            detail = daemon.tail(log, 2000).strip()
            raise StartError(
                f"the daemon exited at start (see {log})" + (f":\n{detail}" if detail else "")
            ) from None
        except daemon.DaemonTimeout:
            raise StartError(
                f"the daemon (pid {d.pid}) did not answer on {sock} within {timeout:.0f} s (see {log})"
            ) from None
        if st.get("daemon_pid") == d.pid:
            return Started(sock, d.pid, log)
        return None  # another daemon won (one started without our lock)
