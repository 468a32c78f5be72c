"""Supervise child processes: start each in its own process group, end whole groups, and never leave one behind on Ctrl-C."""

from __future__ import annotations

import atexit
import os
import signal
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_live: dict[int, subprocess.Popen[bytes]] = {}
_live_lock = threading.Lock()
_spawn_lock = threading.Lock()


def spawn(argv: list[str], env: dict[str, str], cpus: list[int] | None,
          stdout: int | object = subprocess.DEVNULL, stderr: int | object = subprocess.DEVNULL,
          cwd: str | None = None) -> subprocess.Popen[bytes]:
    """Start argv in its own session (its own process group), pinned to cpus if given.

    Affinity is inherited from the thread that forks: the spawning thread pins
    itself around the fork instead of using preexec_fn, which is unsafe while
    waiter threads run.
    """
    with _spawn_lock, _deferred_interrupts():
        old = os.sched_getaffinity(0) if cpus else None
        try:
            if cpus:
                os.sched_setaffinity(0, cpus)
            proc = subprocess.Popen(argv, env=env, stdout=stdout, stderr=stderr,  # type: ignore[arg-type]
                                    stdin=subprocess.DEVNULL, start_new_session=True, cwd=cwd)
        finally:
            if old is not None:
                os.sched_setaffinity(0, old)
        with _live_lock:
            _live[proc.pid] = proc
    return proc


def forget(proc: subprocess.Popen[bytes]) -> None:
    """Drops proc from the table kill_all() ends (it is reaped and its group is gone)."""
    with _live_lock:
        _live.pop(proc.pid, None)


def kill_group(proc: subprocess.Popen[bytes], grace: float = 1.0) -> None:
    """SIGTERM the process group, SIGKILL it after `grace` seconds, and reap the leader."""
    if proc.poll() is None:
        for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 5.0)):
            try:
                os.killpg(proc.pid, sig)
            except (ProcessLookupError, PermissionError):
                break
            try:
                proc.wait(timeout=wait)
                break
            except subprocess.TimeoutExpired:
                continue
    # Descendants that outlive the leader stay in its group: finish them too.
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    forget(proc)


def kill_all() -> None:
    """Ends every process group spawn() started that is still known (on any exit path)."""
    with _live_lock:
        procs = list(_live.values())
    for p in procs:
        kill_group(p, grace=0.5)


atexit.register(kill_all)


_INTERRUPTS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
_critical = 0
_pending = False


@contextmanager
def _deferred_interrupts() -> Iterator[None]:
    """Holds Ctrl-C/SIGTERM/SIGHUP back while a child is forked and registered.

    An interrupt inside Popen (between fork and the exec check) would leave a
    running child that nobody knows about; under interruptible() the handler
    only notes it here, and it is raised once the child is in the live table.
    """
    global _critical, _pending
    _critical += 1
    try:
        yield
    finally:
        _critical -= 1
        if _critical == 0 and _pending:
            _pending = False
            raise KeyboardInterrupt


@contextmanager
def interruptible() -> Iterator[None]:
    """Turns SIGINT, SIGTERM and SIGHUP into KeyboardInterrupt (deferred out of spawns), and
    kills every process spawn() started on the way out, whatever the way out is."""
    global _pending

    def handler(signum: int, frame: object) -> None:
        global _pending
        if _critical:
            _pending = True
            return
        raise KeyboardInterrupt

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    _pending = False
    old = {s: signal.signal(s, handler) for s in _INTERRUPTS}
    try:
        yield
    finally:
        kill_all()
        for s, h in old.items():
            signal.signal(s, h)
