"""No unmanaged gap: a program that started while no daemon answered joins one when it appears.

Real daemons, a real OpenMP program with the layer preloaded. The program's first region runs
while the daemon is dead (its socket stale) or stopped in the middle of the handshake; the
daemon then comes back, and the program must become a client by itself and stay one.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from conftest import Daemon, layer_env, short_tmpdir
from test_cli_daemon import CLIENT_C


@pytest.fixture(scope="module")
def omp_client() -> Iterator[Path]:
    d = short_tmpdir()
    src, exe = Path(d, "joincli.c"), Path(d, "joincli")
    src.write_text(CLIENT_C)
    subprocess.run(["gcc", "-O1", "-fopenmp", "-o", str(exe), str(src)], check=True)
    yield exe
    shutil.rmtree(d, ignore_errors=True)


def start_client(exe: Path, sock: str, stop: str) -> tuple[subprocess.Popen[str], int]:
    proc = subprocess.Popen([str(exe), stop], env=layer_env(sock, {"SCAF_VERBOSE": "1"}),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    line = proc.stdout.readline()
    assert line.startswith("ready "), line
    return proc, int(line.split()[1])


def finish(proc: subprocess.Popen[str], stop: str) -> str:
    Path(stop).touch()
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert "ok=yes" in out, out
    return err


def managed_fraction(d: Daemon, pid: int, window_s: float = 3.0) -> float:
    """The share of status samples over the window in which pid is a client."""
    seen = total = 0
    end = time.monotonic() + window_s
    while time.monotonic() < end:
        total += 1
        seen += any(c["pid"] == pid for c in d.status()["clients"])
        time.sleep(0.1)
    return seen / total


def test_daemon_killed_before_first_region_then_restarted(scafd_factory: Callable[..., Daemon],
                                                         omp_client: Path) -> None:
    d = scafd_factory("--policy", "equipartition", "--cpus", "4", "--no-lookout")
    d.stop(signal.SIGKILL)  # what a crash leaves: a stale socket nobody listens on
    stop = os.path.join(d.dir or "", "stop")
    proc, pid = start_client(omp_client, d.socket, stop)
    try:
        time.sleep(0.5)  # the program runs its regions unmanaged meanwhile
        d.start()
        d.wait_for(lambda s: any(c["pid"] == pid for c in s["clients"]), timeout=15, what=f"client {pid} joins")
        assert managed_fraction(d, pid) == 1.0
    finally:
        err = finish(proc, stop)
    assert "no daemon on" in err and "joined a daemon that appeared after start-up" in err, err


def test_daemon_stopped_during_handshake_then_continued(scafd_factory: Callable[..., Daemon],
                                                         omp_client: Path) -> None:
    d = scafd_factory("--policy", "equipartition", "--cpus", "4", "--no-lookout")
    assert d.pid
    os.kill(d.pid, signal.SIGSTOP)
    stop = os.path.join(d.dir or "", "stop")
    try:
        # connect() succeeds into the listen backlog; the HELLO is never answered.
        proc, pid = start_client(omp_client, d.socket, stop)
        time.sleep(1.5)  # past the layer's handshake timeout: the program runs unmanaged
    finally:
        os.kill(d.pid, signal.SIGCONT)
    try:
        d.wait_for(lambda s: any(c["pid"] == pid for c in s["clients"]), timeout=15, what=f"client {pid} joins")
        assert managed_fraction(d, pid) == 1.0
    finally:
        err = finish(proc, stop)
    assert "no valid answer to HELLO" in err and "joined a daemon" in err, err


def test_no_daemon_ever_same_result_and_no_client(omp_client: Path) -> None:
    """Without any daemon the program computes the same and exits normally (the joiner never blocks it)."""
    d = short_tmpdir()
    try:
        stop = os.path.join(d, "stop")
        Path(stop).touch()
        plain = subprocess.run([str(omp_client), stop], capture_output=True, text=True, timeout=60, check=False,
                               env={k: v for k, v in os.environ.items() if k != "LD_PRELOAD"})
        layered = subprocess.run([str(omp_client), stop], capture_output=True, text=True, timeout=60, check=False,
                                 env=layer_env(os.path.join(d, "none.sock")))
    finally:
        shutil.rmtree(d, ignore_errors=True)
    assert plain.returncode == layered.returncode == 0
    assert plain.stdout.split()[-1] == layered.stdout.split()[-1] == "ok=yes"
    assert layered.stderr == ""
