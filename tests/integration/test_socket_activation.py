"""scafd under socket activation: the listening socket passed as fd 3 with LISTEN_FDS/LISTEN_PID, as systemd passes it."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import stat
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import daemon_binaries, layer_env, parse_result, short_tmpdir
from scaf.lib import paths
from support import wire


@pytest.fixture
def tdir() -> Iterator[str]:
    d = short_tmpdir()
    yield d
    shutil.rmtree(d, ignore_errors=True)


def listening(path: str) -> socket.socket:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(path)
    s.listen(16)
    return s


def activate(binary: Path, fd3: int, log: str, *args: str, fds: str = "1", listen_pid: int | None = None,
             env: dict[str, str] | None = None) -> int:
    """Fork and exec scafd the way systemd does: fd3 becomes fd 3, LISTEN_PID the child's own pid."""
    logfd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child execs or exits at once
        try:
            os.dup2(fd3, 3)  # the duplicate is inheritable: it survives exec, as systemd's does
            os.dup2(logfd, 1)
            os.dup2(logfd, 2)
            e = dict(env if env is not None else os.environ)
            e["LISTEN_FDS"] = fds
            e["LISTEN_PID"] = str(listen_pid if listen_pid is not None else os.getpid())
            os.execve(str(binary), [str(binary), *args], e)
        finally:
            os._exit(127)
    os.close(logfd)
    return pid


def wait_exit(pid: int, timeout: float = 10) -> int:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        time.sleep(0.02)
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    pytest.fail(f"scafd {pid} did not exit")


def wait_status(sock: str, pid: int, log: str) -> dict:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        done, _ = os.waitpid(pid, os.WNOHANG)
        assert not done, f"scafd exited early: {Path(log).read_text()}"
        try:
            return wire.status(sock, timeout=1)
        except wire.DaemonUnavailable:
            time.sleep(0.02)
    pytest.fail(f"no answer on {sock}: {Path(log).read_text()}")


@pytest.mark.parametrize("binary", daemon_binaries(), ids=lambda p: p.parent.parent.name)
def test_serves_the_passed_socket_and_leaves_it_in_place(binary: Path, tdir: str) -> None:
    sock = f"{tdir}/s.sock"
    log = f"{tdir}/scafd.log"
    lsock = listening(sock)
    # The socket passed wins over every other path the daemon could have chosen.
    env = dict(os.environ, SCAF_SOCKET=f"{tdir}/elsewhere.sock")
    pid = activate(binary, lsock.fileno(), log, "--no-lookout", env=env)
    try:
        st = wait_status(sock, pid, log)
        assert st["daemon_pid"] == pid
        assert "passed by socket activation" in Path(log).read_text()

        # A program started with the layer becomes the daemon's client through the passed socket.
        report = f"{tdir}/report.jsonl"
        r = subprocess.run([str(paths.workload("cg")), "--size", "S"], capture_output=True, text=True,
                           env=layer_env(sock, {"SCAF_REPORT": report}), timeout=120, check=False)
        assert r.returncode == 0, r.stderr
        assert parse_result(r.stdout)["verified"] == "yes"
        lines = Path(report).read_text().splitlines()
        assert lines, "the layer wrote no report: it never ran a region while connected"
        assert json.loads(lines[-1])["regions"] > 0

        os.kill(pid, signal.SIGTERM)
        assert wait_exit(pid) == 0
    finally:
        try:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        except (ProcessLookupError, ChildProcessError):
            pass
    # The path belongs to whoever passed the socket: not removed, and no lock file made beside it.
    assert stat.S_ISSOCK(os.lstat(sock).st_mode)
    assert sorted(os.listdir(tdir)) == ["report.jsonl", "s.sock", "scafd.log"]

    # The next connection is queued on the socket still listening; a new daemon handed it serves it.
    pending = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    pending.connect(sock)
    pid2 = activate(binary, lsock.fileno(), log, "--no-lookout")
    try:
        assert wait_status(sock, pid2, log)["daemon_pid"] == pid2
    finally:
        os.kill(pid2, signal.SIGTERM)
        assert wait_exit(pid2) == 0
        pending.close()
        lsock.close()


def test_variables_meant_for_another_process_are_ignored(tdir: str) -> None:
    # LISTEN_PID names someone else (a parent that did not unset them): bind --socket as usual.
    sock = f"{tdir}/own.sock"
    passed = listening(f"{tdir}/passed.sock")
    log = f"{tdir}/scafd.log"
    pid = activate(paths.scafd(), passed.fileno(), log, "--socket", sock, listen_pid=os.getpid())
    try:
        assert wait_status(sock, pid, log)["daemon_pid"] == pid
        assert "passed by socket activation" not in Path(log).read_text()
    finally:
        os.kill(pid, signal.SIGTERM)
        assert wait_exit(pid) == 0
        passed.close()
    assert not os.path.exists(sock), "the socket scafd bound itself is removed at exit"


def bad_activation(tdir: str, fd3: int, fds: str = "1") -> tuple[int, str]:
    log = f"{tdir}/scafd.log"
    pid = activate(paths.scafd(), fd3, log, fds=fds)
    return wait_exit(pid), Path(log).read_text()


def test_two_passed_sockets_are_refused(tdir: str) -> None:
    s = listening(f"{tdir}/s.sock")
    rc, err = bad_activation(tdir, s.fileno(), fds="2")
    s.close()
    assert rc == 1
    assert "passed 2 sockets; scafd serves exactly one" in err
    assert os.path.exists(f"{tdir}/s.sock")


def test_a_pipe_is_not_a_socket(tdir: str) -> None:
    r, w = os.pipe()
    rc, err = bad_activation(tdir, r)
    os.close(r)
    os.close(w)
    assert rc == 1
    assert "fd 3 is not a socket" in err


def test_a_socket_that_does_not_listen_is_refused(tdir: str) -> None:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(f"{tdir}/s.sock")  # bound, never listen()ed: Accept=yes or a mistake
    rc, err = bad_activation(tdir, s.fileno())
    s.close()
    assert rc == 1
    assert "not a listening stream socket" in err
    assert os.path.exists(f"{tdir}/s.sock")


@pytest.mark.skipif(not shutil.which("systemd-socket-activate"), reason="systemd-socket-activate (Debian's systemd package) is not installed")
def test_systemd_socket_activate_starts_scafd_at_the_first_connection(tdir: str) -> None:
    sock = f"{tdir}/s.sock"
    with open(f"{tdir}/log", "wb") as log:
        proc = subprocess.Popen(["systemd-socket-activate", "-l", sock, str(paths.scafd()), "--no-lookout"],
                                stdout=log, stderr=log)
    try:
        deadline = time.monotonic() + 10
        while not os.path.exists(sock):
            assert time.monotonic() < deadline and proc.poll() is None, Path(f"{tdir}/log").read_text()
            time.sleep(0.02)
        # systemd-socket-activate execs scafd in its own process once this connection arrives.
        st = wire.status(sock, timeout=10)
        assert st["daemon_pid"] == proc.pid
        assert "passed by socket activation" in Path(f"{tdir}/log").read_text()
    finally:
        proc.terminate()
        assert proc.wait(timeout=10) == 0
    assert os.path.exists(sock), "scafd removed a socket it was handed"
