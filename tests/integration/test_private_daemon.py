"""scaf.lib.daemon.PrivateDaemon: a real scafd on a fresh short socket, ready when it answers, gone after."""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

import pytest
from conftest import daemon_binaries, layer_env, parse_result
from scaf.lib import paths, proto
from scaf.lib.daemon import (
    DaemonExited,
    PrivateDaemon,
    memory_chosen,
    pid_alive,
    short_tmpdir,
)


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


def one_client(d: PrivateDaemon, env: dict[str, str]) -> None:
    """A real program under the layer, a client of D from start to end: the daemon learns it when it leaves."""
    res = subprocess.run([str(paths.workload("fixed")), "--size", "S"], env=layer_env(d.socket, env),
                         capture_output=True, text=True, timeout=120, check=False)
    assert res.returncode == 0 and parse_result(res.stdout)["verified"] == "yes", res.stdout + res.stderr


def memory_files(where: Path) -> list[str]:
    return sorted(p.name for p in where.iterdir() if p.name.startswith("memory-")) if where.is_dir() else []


@pytest.mark.parametrize("own_socket", [False, True], ids=["private-socket", "given-socket"])
def test_a_private_daemon_never_touches_the_users_memory(tmp_path: Path, own_socket: bool) -> None:
    """Its memory lives in a temporary state directory of its own, removed with it: a benchmark neither
    warms the user's memory nor is warmed by it, whatever $XDG_STATE_HOME and $STATE_DIRECTORY say."""
    xdg = tmp_path / "xdg"
    env = dict(os.environ, XDG_STATE_HOME=str(xdg), STATE_DIRECTORY=str(tmp_path / "systemd"))
    sock = os.path.join(short_tmpdir(), "d.sock") if own_socket else None
    d = PrivateDaemon(["--no-lookout"], socket=sock, env=env)
    try:
        d.start()
        assert d.state_dir is not None and "--state-dir" in d.argv
        one_client(d, env)
        assert d.stop() == 0  # scafd writes its memory at exit at the latest
        assert memory_files(Path(d.state_dir)) == [f"memory-{os.getuid()}.bin"]  # it did remember, there
    finally:
        d.cleanup()
    assert not os.path.exists(d.state_dir)
    assert not (xdg / "scaf").exists() and not (tmp_path / "systemd").exists()


def test_a_state_dir_the_caller_names_is_used_and_kept(tmp_path: Path) -> None:
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    with PrivateDaemon(["--no-lookout"], state_dir=state) as d:
        one_client(d, {})
    assert memory_files(state) == [f"memory-{os.getuid()}.bin"]
    # A caller's --state-dir or --no-memory among the arguments: no directory of ours besides.
    for args in (["--state-dir", str(state)], [f"--state-dir={state}"], ["--no-memory"], ["--no-mem"]):
        assert memory_chosen(args)
        d = PrivateDaemon(args)
        try:
            assert d.state_dir is None and d.argv.count("--state-dir") == (args[0] == "--state-dir")
        finally:
            d.cleanup()
    assert not memory_chosen(["--no-lookout", "--socket", "x", "--shared"])


def test_user_memory_leaves_the_choice_to_scafd(tmp_path: Path) -> None:
    """The per-user daemon (scaf run's) keeps the user's memory: $XDG_STATE_HOME/scaf here."""
    env = dict(os.environ, XDG_STATE_HOME=str(tmp_path / "xdg"))
    env.pop("STATE_DIRECTORY", None)
    with PrivateDaemon(["--no-lookout"], env=env, user_memory=True) as d:
        assert d.state_dir is None and "--state-dir" not in d.argv
        one_client(d, env)
    assert memory_files(tmp_path / "xdg" / "scaf") == [f"memory-{os.getuid()}.bin"]
