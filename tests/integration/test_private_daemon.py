"""scaf.lib.daemon.PrivateDaemon: a real scafd on a fresh short socket, ready when it answers, gone after."""

from __future__ import annotations

import os
import signal

import pytest
from conftest import daemon_binaries
from scaf.lib import proto
from scaf.lib.daemon import DaemonExited, PrivateDaemon, pid_alive, short_tmpdir


@pytest.fixture(params=daemon_binaries(), ids=lambda p: p.parent.parent.name)
def binary(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def test_context_manager_starts_answers_and_cleans_up(binary: str) -> None:
    with PrivateDaemon(["--cpus", "3", "--no-lookout"], binary=binary, log=True) as d:
        assert d.dir is not None and len(os.fsencode(d.socket)) < 108
        st = proto.status(d.socket)
        assert st["daemon_pid"] == d.pid == d.answer["daemon_pid"] and st["cpus"] == 3
        assert d.log is not None and d.argv[:5] == [binary, "--socket", d.socket, "--log", d.log]
        assert d.alive()
    assert not d.alive() and d.returncode() == 0
    assert not os.path.exists(d.dir)
    with pytest.raises(proto.DaemonUnavailable):
        proto.status(d.socket)


def test_restart_on_the_same_socket(binary: str) -> None:
    d = PrivateDaemon(["--no-lookout"], binary=binary)
    try:
        first = d.start()["daemon_pid"]
        assert d.stop(signal.SIGINT) == 0
        second = d.start()["daemon_pid"]
        assert second != first and proto.status(d.socket)["daemon_pid"] == second
    finally:
        d.stop()
        d.cleanup()
    assert d.dir is not None and not os.path.exists(d.dir)


def test_a_daemon_that_exits_at_start_says_why(binary: str) -> None:
    d = PrivateDaemon(["--no-such-option"], binary=binary)
    with pytest.raises(DaemonExited) as err:
        d.start()
    d.cleanup()
    assert err.value.returncode not in (0, None)
    assert "--no-such-option" in err.value.stderr


def test_detached_daemon_runs_in_its_own_session_and_stops() -> None:
    where = short_tmpdir()
    sock = os.path.join(where, "d.sock")
    log = os.path.join(where, "d.log")
    d = PrivateDaemon(["--no-lookout"], socket=sock, stderr_path=log, detached=True)
    try:
        st = d.start()
        assert d.proc is None and st["daemon_pid"] == d.pid and pid_alive(d.pid)
        # Double-forked into a session of its own: not our child, not in our session.
        with open(f"/proc/{d.pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        assert int(fields[1]) != os.getpid() and int(fields[3]) != os.getsid(0)
        assert d.stop() is None
        assert not pid_alive(d.pid)
    finally:
        d.cleanup()
        for name in os.listdir(where):
            os.unlink(os.path.join(where, name))
        os.rmdir(where)
