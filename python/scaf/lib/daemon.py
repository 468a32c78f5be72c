"""Start a scafd of our own, wait until it answers, and stop it: the one daemon starter of scaf and its tests."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import IO, Self

from scaf.lib import paths, procs, proto

# Starts argv with env, its stdout and stderr going to the given file (or DEVNULL); returns the process.
Spawner = Callable[[list[str], dict[str, str], "IO[bytes] | int"], "subprocess.Popen[bytes]"]


class DaemonError(Exception):
    """The daemon did not come up; .stderr holds what it wrote."""

    def __init__(self, message: str, stderr: str) -> None:
        super().__init__(message)
        self.stderr = stderr


class DaemonExited(DaemonError):
    """The daemon exited before it answered; .returncode (None for a detached one)."""

    def __init__(self, returncode: int | None, stderr: str) -> None:
        super().__init__(f"scafd exited with status {returncode}", stderr)
        self.returncode = returncode


class DaemonTimeout(DaemonError):
    """The daemon still ran but did not answer within the timeout."""


def short_tmpdir(prefix: str = "scaf-d-") -> str:
    """A fresh private directory short enough for sun_path (108 bytes with the socket's name)."""
    return tempfile.mkdtemp(prefix=prefix, dir="/tmp")


def memory_chosen(args: Sequence[str]) -> bool:
    """Whether scafd's ARGS choose where its memory goes: --state-dir (DIR or =DIR) or --no-memory, as
    getopt_long reads them (an unambiguous prefix counts: --state, --no-mem)."""
    for a in args:
        if not a.startswith("--"):
            continue
        name = a[2:].partition("=")[0]
        if (len(name) >= 2 and "state-dir".startswith(name)) or (len(name) >= 4 and "no-memory".startswith(name)):
            return True
    return False


def pid_alive(pid: int) -> bool:
    """Whether PID runs (not merely a zombie); for daemons we do not parent."""
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


def spawn_detached(argv: list[str], env: dict[str, str], log: str | int) -> int:
    """Start argv as a daemon: own session, stdin /dev/null, output appended to LOG, reparented to init.

    LOG is a path, or a descriptor the caller opened (and still owns) the
    safe way. The double fork means the daemon is never our zombie, even when
    it idles out while its starter still runs. Returns the daemon's pid;
    raises OSError when LOG cannot be opened, RuntimeError when the fork failed.
    """
    logfd = os.dup(log) if isinstance(log, int) else os.open(
        log, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o600)
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
        raise RuntimeError("could not fork a daemon process")
    return int(data)


def tail(path: str | None, limit: int | None = None) -> str:
    """The last LIMIT bytes of the file at PATH (all of it without LIMIT), "" when unreadable."""
    if path is None:
        return ""
    try:
        with open(path, "rb") as f:
            if limit is not None:
                f.seek(0, os.SEEK_END)
                f.seek(max(0, f.tell() - limit))
            return f.read().decode(errors="replace")
    except OSError:
        return ""


class PrivateDaemon:
    """A scafd of our own: started on start() (or `with`), ready once a status request answers.

    The socket is SOCKET, or scafd.sock in a fresh short temporary directory
    that cleanup() removes; with LOG true (and that directory) scafd logs every
    allocation to alloc.jsonl there, with LOG a path to that file (self.log). scafd's stdout and stderr go to
    STDERR_PATH (appended), else to scafd.stderr in that directory, else
    nowhere; `stderr()` reads them back. A child daemon is started by SPAWN
    (default: Popen in the environment ENV), a DETACHED one double-forked
    into its own session so that it outlives us. start() may be called again
    after stop(): the same socket, a new process, the same memory.

    Memory (docs/memory.md): a daemon of our own never reads or writes the
    user's. It keeps its memory in a temporary state directory of its own
    (`state` in that short directory, or a fresh one when SOCKET is given),
    which cleanup() removes; STATE_DIR names another, which is the caller's
    and is kept. `--state-dir` or `--no-memory` among ARGS is the caller's
    choice too, and no directory is made. Only USER_MEMORY (the per-user
    daemon `scaf run` starts) leaves the choice to scafd's defaults
    ($STATE_DIRECTORY, $XDG_STATE_HOME/scaf, ~/.local/state/scaf).
    """

    def __init__(
        self,
        args: Sequence[str] = (),
        *,
        binary: str | Path | None = None,
        socket: str | None = None,
        log: bool | str | Path = False,
        env: dict[str, str] | None = None,
        stderr_path: str | None = None,
        stderr_fd: int | None = None,
        capture: bool = True,
        spawn: Spawner | None = None,
        detached: bool = False,
        timeout: float = 10.0,
        prefix: str = "scaf-d-",
        state_dir: str | Path | None = None,
        user_memory: bool = False,
    ) -> None:
        self.binary = Path(binary) if binary is not None else paths.scafd()
        self.dir = None if socket is not None else short_tmpdir(prefix)
        self.socket = socket if socket is not None else os.path.join(self.dir or "", "scafd.sock")
        if stderr_path is None and capture and self.dir is not None:
            stderr_path = os.path.join(self.dir, "scafd.stderr")
        self.stderr_path = stderr_path
        self.stderr_fd = stderr_fd  # detached only: an open descriptor to append to, used instead of the path
        if isinstance(log, str | Path):
            self.log: str | None = str(log)
        else:
            self.log = os.path.join(self.dir, "alloc.jsonl") if log and self.dir is not None else None
        # The memory's directory: ours (removed by cleanup), the caller's, or scafd's default (None).
        self.state_dir: str | None = None
        self._own_state: str | None = None
        memory: list[str] = []
        if state_dir is not None:
            self.state_dir = str(state_dir)
            memory = ["--state-dir", self.state_dir]
        elif not user_memory and not memory_chosen(args):
            if self.dir is not None:
                self.state_dir = os.path.join(self.dir, "state")  # scafd makes it, 0700; removed with the directory
            else:
                self.state_dir = self._own_state = tempfile.mkdtemp(prefix="scaf-m-", dir="/tmp")
            memory = ["--state-dir", self.state_dir]
        self.argv = [str(self.binary), "--socket", self.socket, *(["--log", self.log] if self.log else []),
                     *memory, *args]
        self.env = dict(os.environ) if env is None else env
        self.timeout = timeout
        self._spawn = spawn
        self.detached = detached
        self.proc: subprocess.Popen[bytes] | None = None
        self.pid = 0
        self.answer: dict = {}  # the first status the daemon gave

    # -- starting --
    def start(self) -> dict:
        """Start scafd and wait until it answers; returns that status.

        Raises DaemonExited or DaemonTimeout (after stopping it); OSError (or
        RuntimeError from a failed fork when detached) when it cannot be started.
        """
        self._launch()
        try:
            return self.wait_ready()
        except BaseException:
            # Failed or interrupted while starting: nobody else knows this daemon yet.
            self.stop()
            raise

    def start_or_discard(self) -> dict:
        """start(), and discard() the daemon when that fails or is interrupted (nobody else knows it yet).

        Raises DaemonError whose message says why, with what scafd wrote; OSError when it cannot be started.
        """
        try:
            return self.start()
        except DaemonError as e:
            self.discard()
            raise DaemonError(f"{e}: {e.stderr.strip()}", e.stderr) from None
        except BaseException:
            self.discard()
            raise

    def _launch(self) -> None:
        if self.detached:
            log: str | int = self.stderr_fd if self.stderr_fd is not None else (self.stderr_path or os.devnull)
            self.pid = spawn_detached(self.argv, self.env, log)
            return
        with contextlib.ExitStack() as files:
            out: IO[bytes] | int = subprocess.DEVNULL
            if self.stderr_path is not None:
                out = files.enter_context(open(self.stderr_path, "ab"))
            if self._spawn is not None:
                self.proc = self._spawn(self.argv, self.env, out)
            else:
                self.proc = subprocess.Popen(self.argv, stdin=subprocess.DEVNULL, stdout=out, stderr=out,
                                             env=self.env, start_new_session=True)
        self.pid = self.proc.pid

    def wait_ready(self) -> dict:
        """Poll the socket until a daemon answers; raises DaemonExited when ours exited first."""
        deadline = time.monotonic() + self.timeout
        while True:
            if not self.alive():
                raise DaemonExited(self.returncode(), self.stderr())
            try:
                self.answer = proto.status(self.socket, timeout=1)
                return self.answer
            except proto.DaemonUnavailable:
                if time.monotonic() > deadline:
                    raise DaemonTimeout(f"scafd did not answer on {self.socket} within {self.timeout:.0f} s",
                                        self.stderr()) from None
                time.sleep(0.02)

    # -- state --
    def alive(self) -> bool:
        if self.proc is not None:
            return self.proc.poll() is None
        return self.pid > 0 and pid_alive(self.pid)

    def returncode(self) -> int | None:
        return self.proc.returncode if self.proc is not None else None

    def stderr(self, limit: int | None = None) -> str:
        """What scafd wrote (its last LIMIT bytes), "" when it went nowhere."""
        return tail(self.stderr_path, limit)

    def status(self) -> dict:
        return proto.status(self.socket)

    # -- stopping --
    def stop(self, sig: int = signal.SIGTERM, timeout: float = 10.0) -> int | None:
        """Send SIG, SIGKILL its process group after TIMEOUT s; returns the exit status (None: detached)."""
        if self.proc is None:
            if self.pid > 0 and pid_alive(self.pid):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(self.pid, sig)
                deadline = time.monotonic() + timeout
                while time.monotonic() < deadline and pid_alive(self.pid):
                    time.sleep(0.02)
                if pid_alive(self.pid):
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(self.pid, signal.SIGKILL)
            return None
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.kill()
        return self.proc.returncode

    def kill(self) -> None:
        """SIGKILL the daemon (and its process group, when it leads one) and reap it."""
        if self.proc is None:
            if self.pid > 0 and pid_alive(self.pid):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(self.pid, signal.SIGKILL)
            return
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                with contextlib.suppress(ProcessLookupError):
                    self.proc.kill()
            self.proc.wait()

    def _kill_group(self) -> None:
        """End the process group a child daemon leads, whether or not it still runs, and reap it."""
        if self.proc is not None:
            procs.kill_group(self.proc)

    def discard(self) -> None:
        """Throw away a daemon that failed to start: its group ended, its directory removed."""
        self._kill_group()
        self.cleanup()

    def finish(self, timeout: float = 5.0) -> dict:
        """Stop the daemon and remove its directory; returns its argv, exit status, whether it
        still ran at the end, and the tail of its messages (what a bench record keeps)."""
        was_alive = self.alive()
        if was_alive:
            self.stop(timeout=timeout)
        self._kill_group()
        info = {"argv": self.argv, "returncode": self.returncode(), "alive_at_end": was_alive,
                "stderr_tail": self.stderr()[-600:]}
        # The folder is ours alone (mkdtemp): socket, lock file, messages all go with it.
        self.cleanup()
        return info

    def cleanup(self) -> None:
        """Kill the daemon if it still runs, and remove the directory we made (socket, lock, messages)."""
        self.kill()
        if self.dir is not None:
            shutil.rmtree(self.dir, ignore_errors=True)
        if self._own_state is not None:
            shutil.rmtree(self._own_state, ignore_errors=True)

    def __enter__(self) -> Self:
        try:
            self.start()
        except BaseException:
            self.cleanup()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            self.stop()
        finally:
            self.cleanup()
