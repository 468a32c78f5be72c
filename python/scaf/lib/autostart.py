"""Find the daemon a command should talk to, and start a per-user one when none answers."""

import contextlib
import fcntl
import os
import stat
from collections.abc import Iterator, Sequence
from typing import NamedTuple

from scaf.lib import paths, proto, rundir, sockpath
from scaf.lib.launch import strip_layer

# sun_path holds 108 bytes including the terminating NUL.
SUN_PATH_MAX = 107

# How long a per-user daemon that `scaf run` started lives without clients.
IDLE_EXIT_S = 30


class StartError(Exception):
    """A daemon could not be started; the message says why and what to do."""


class Started(NamedTuple):
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
    """The daemon's status, or None when no daemon answers on SOCK.

    Raises proto.UntrustedDaemon when another user's daemon answers, and
    proto.BadStatus when something answers that is not a scaf daemon.
    """
    try:
        return proto.status(sock, timeout=timeout)
    except proto.DaemonUnavailable:
        return None


@contextlib.contextmanager
def _start_lock(dirfd: int, name: str) -> Iterator[None]:
    """Serialize concurrent starters on this socket (scafd's own refusal is the backstop)."""
    # scafd itself holds P.lock while it serves; this one only serializes starters.
    fd = rundir.open_in(dirfd, name, os.O_RDWR | os.O_CREAT)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def ensure_daemon(sock: str, daemon_args: Sequence[str] = (), timeout: float = 10.0) -> Started | None:
    """Make sure a daemon answers on SOCK, this user's own default path; start one (idle-exit) if none does.

    Returns None when one already answered (or another starter won the race),
    a Started when this call started it (with DAEMON_ARGS added to scafd's
    options). Raises rundir.UnsafeDir when the socket's directory may be
    somebody else's (nothing is written then), proto.UntrustedDaemon when
    another user's daemon answers there, and StartError with a message fit
    for the user otherwise.
    """
    parent = os.path.dirname(sock) or "."
    # Before anything else touches the path: another user may have made the directory first.
    dirfd = rundir.open_dir(parent, private=True)
    try:
        problem = socket_problem(sock)
        if problem:
            raise StartError(problem)
        if answers(sock) is not None:
            return None
        scafd = paths.scafd()
        if not os.access(scafd, os.X_OK):
            raise StartError(f"the daemon {scafd} is missing; run make")
        return _start(sock, dirfd, scafd, list(daemon_args), timeout)
    finally:
        os.close(dirfd)


class Outcome(NamedTuple):
    """What daemon_for found: the daemon it started (None: one answered already), or a problem (None,
    "unsafe-dir": the socket's directory may be somebody else's, "untrusted": another user's daemon answers,
    "not-scaf": something else answers, "absent": nobody answers and none was to be started, "failed": none
    would start) with its message for the user."""

    started: Started | None = None
    problem: str | None = None
    message: str = ""


def started_line(s: Started) -> str:
    """The line a command prints when it started a daemon."""
    return f"started a daemon on {s.socket} (pid {s.pid}); it exits after {IDLE_EXIT_S} s without clients"


def daemon_for(sock: str, start: bool, daemon_args: Sequence[str] = ()) -> Outcome:
    """Makes sure a daemon we trust answers on SOCK: when START (the caller's own default socket, and the user
    did not say --no-start), one is started there if none answers (ensure_daemon); otherwise it is only asked."""
    try:
        if start:
            return Outcome(started=ensure_daemon(sock, daemon_args))
        if answers(sock) is None:
            return Outcome(problem="absent", message=f"no daemon answers on {sock}")
        return Outcome()
    except rundir.UnsafeDir as e:
        return Outcome(problem="unsafe-dir", message=f"cannot use {sock}: {e}")
    except proto.UntrustedDaemon as e:
        return Outcome(problem="untrusted", message=str(e))
    except proto.BadStatus as e:
        return Outcome(problem="not-scaf", message=f"what answers on {sock} is not a scaf daemon: {e}")
    except StartError as e:
        return Outcome(problem="failed", message=f"cannot start a daemon on {sock}: {e}")


def own_socket(sock: str) -> bool:
    """Whether SOCK is this user's own default socket (however named): the only one scaf starts a daemon on."""
    return os.path.abspath(sock) == os.path.abspath(sockpath.user_socket())


def _start(sock: str, dirfd: int, scafd: os.PathLike[str] | str, daemon_args: list[str],
           timeout: float) -> Started | None:
    # Imported here: `scaf run` against a daemon that already answers need not load the starter.
    from scaf.lib import daemon

    base = os.path.basename(sock)
    log = log_path(sock)
    env = dict(os.environ)
    # A daemon is no OpenMP client: keep a nested `scaf run`'s layer out of it.
    if "LD_PRELOAD" in env:
        env["LD_PRELOAD"] = strip_layer(env["LD_PRELOAD"])
        if not env["LD_PRELOAD"]:
            del env["LD_PRELOAD"]
    with _start_lock(dirfd, base + ".start.lock"):
        # Someone may have started one while we waited for the lock.
        if answers(sock) is not None:
            return None
        logfd = rundir.open_in(dirfd, os.path.basename(log), os.O_WRONLY | os.O_CREAT | os.O_APPEND)
        try:
            d = daemon.PrivateDaemon([*daemon_args, "--idle-exit", str(IDLE_EXIT_S)], binary=scafd, socket=sock,
                                     env=env, stderr_path=log, stderr_fd=logfd, detached=True, timeout=timeout,
                                     user_memory=True)  # the user's daemon keeps the user's memory
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
        finally:
            os.close(logfd)
        if st.get("daemon_pid") == d.pid:
            return Started(sock, d.pid, log)
        return None  # another daemon won (one started without our lock)
