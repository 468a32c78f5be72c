"""Find the daemon a command should talk to, and start a per-user one when none answers."""

from __future__ import annotations

import contextlib
import fcntl
import os
import stat
import time
from collections.abc import Iterator
from dataclasses import dataclass

from scaf.lib import paths, proto
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


def _spawn_detached(argv: list[str], log: str) -> int:
    """Start argv as a daemon: own session, stdin /dev/null, output to LOG, reparented to init.

    The double fork means the daemon is never our zombie, even when it idles
    out while `scaf run` still waits for its program. Returns the daemon's pid.
    """
    env = dict(os.environ)
    # A daemon is no OpenMP client: keep a nested `scaf run`'s layer out of it.
    if "LD_PRELOAD" in env:
        env["LD_PRELOAD"] = strip_layer(env["LD_PRELOAD"])
        if not env["LD_PRELOAD"]:
            del env["LD_PRELOAD"]
    logfd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o600)
    rd, wr = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover - runs in the forked child
        code = 0
        try:
            os.close(rd)
            os.setsid()
            pid = os.fork()
            if pid == 0:
                null = os.open(os.devnull, os.O_RDONLY)
                os.dup2(null, 0)
                os.dup2(logfd, 1)
                os.dup2(logfd, 2)
                os.closerange(3, 65536)
                try:
                    os.execve(argv[0], argv, env)
                finally:
                    os._exit(127)
            os.write(wr, str(pid).encode())
        except BaseException:  # noqa: BLE001 - a forked child must _exit, never unwind into the caller
            code = 1
        finally:
            os._exit(code)
    os.close(wr)
    os.close(logfd)
    try:
        data = b""
        while chunk := os.read(rd, 64):
            data += chunk
    finally:
        os.close(rd)
        os.waitpid(child, 0)
    if not data:
        raise StartError("could not fork a daemon process")
    return int(data)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # Reparented to init, a dead daemon can linger as a zombie for a moment.
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[0] != b"Z"
    except OSError:
        return False


def _tail(path: str, limit: int = 2000) -> str:
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - limit))
            return f.read().decode(errors="replace").strip()
    except OSError:
        return ""


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
    with _start_lock(sock):
        # Someone may have started one while we waited for the lock.
        if answers(sock) is not None:
            return None
        try:
            pid = _spawn_detached([str(scafd), "--socket", sock, "--idle-exit", str(IDLE_EXIT_S)], log)
        except OSError as e:
            raise StartError(f"cannot start {scafd}: {e.strerror or e}") from e
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            st = answers(sock, timeout=1.0)
            if st is not None:
                if st.get("daemon_pid") == pid:
                    return Started(sock, pid, log)
                return None  # another daemon won (one started without our lock)
            if not _alive(pid):
                # scafd refuses a socket that a live daemon holds: ask again before failing.
                if answers(sock) is not None:
                    return None
                detail = _tail(log)
                raise StartError(
                    f"the daemon exited at start (see {log})" + (f":\n{detail}" if detail else "")
                )
            time.sleep(0.02)
        with contextlib.suppress(OSError):
            os.kill(pid, 15)
        raise StartError(f"the daemon (pid {pid}) did not answer on {sock} within {timeout:.0f} s (see {log})")


def stop_pid(pid: int, timeout: float = 10.0) -> None:
    """SIGTERM a daemon we do not parent, then SIGKILL if it lingers."""
    try:
        os.kill(pid, 15)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and _alive(pid):
        time.sleep(0.02)
    if _alive(pid):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, 9)

