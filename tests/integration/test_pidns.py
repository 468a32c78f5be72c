"""Clients and daemon in different PID namespaces (containers): served when the daemon sees the client's pid, refused clearly when it cannot."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from conftest import ROOT, Daemon, layer_env, parse_result, short_tmpdir
from scaf.lib import paths
from support import wire

UNSHARE = ["unshare", "--pid", "--fork", "--mount-proc", "--kill-child=SIGTERM"]


def _can_unshare() -> bool:
    if not shutil.which("unshare"):
        return False
    r = subprocess.run([*UNSHARE, "true"], capture_output=True, timeout=30, check=False)
    return r.returncode == 0


pytestmark = pytest.mark.skipif(not _can_unshare(), reason="cannot create PID namespaces here (needs root or user namespaces)")


@pytest.fixture
def tdir() -> Iterator[str]:
    d = short_tmpdir()
    yield d
    shutil.rmtree(d, ignore_errors=True)


def nspids(pid: int) -> list[int]:
    """The pid in each PID namespace from the host's down to the process's own (/proc/PID/status NSpid)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("NSpid:"):
            return [int(x) for x in line.split()[1:]]
    pytest.skip("this kernel's /proc/PID/status has no NSpid line")


def test_client_in_a_child_namespace_is_served_under_its_host_pid(scafd_factory: Callable[..., Daemon]) -> None:
    # A daemon on the host (Kubernetes: a DaemonSet with hostPID) and a program in a container.
    d = scafd_factory("--no-lookout")
    prog = subprocess.Popen([*UNSHARE, str(paths.workload("cg")), "--size", "W"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=layer_env(d.socket))
    try:
        st = d.wait_for(lambda s: len(s["clients"]) == 1, timeout=60, what="the namespaced program as a client")
        client = st["clients"][0]
        assert client["name"] == "cg"
        # The pid the daemon holds is the host's, and names a process that is pid 1 in its own namespace.
        assert nspids(client["pid"]) == [client["pid"], 1]
        # Its departure is seen too (the same result with and without scaf is checked elsewhere).
        # SIGKILL: a namespace's pid 1 ignores signals it has no handler for.
        os.kill(client["pid"], signal.SIGKILL)
        d.wait_for(lambda s: s["clients"] == [], timeout=30, what="the client's departure")
    finally:
        if prog.poll() is None:
            prog.kill()
        prog.communicate(timeout=30)


@pytest.mark.parametrize("client_in_own_namespace", [False, True], ids=["client-on-host", "client-in-sibling"])
def test_daemon_that_cannot_see_the_client_refuses_it_clearly(client_in_own_namespace: bool, tdir: str) -> None:
    # A daemon in a pod without hostPID: clients on the host or in other pods have pid 0 for it.
    sock = f"{tdir}/s.sock"
    with open(f"{tdir}/scafd.log", "wb") as log:
        daemon = subprocess.Popen([*UNSHARE, str(paths.scafd()), "--socket", sock, "--no-lookout", "-v"],
                                  stdout=log, stderr=log)
    try:
        deadline = time.monotonic() + 10
        while True:
            try:
                wire.status(sock, timeout=1)
                break
            except wire.DaemonUnavailable:
                assert time.monotonic() < deadline and daemon.poll() is None, Path(f"{tdir}/scafd.log").read_text()
                time.sleep(0.05)
        cmd = [str(paths.workload("cg")), "--size", "S"]
        if client_in_own_namespace:
            cmd = [*UNSHARE, *cmd]
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=300, check=False,
                           env=layer_env(sock, {"SCAF_VERBOSE": "1"}))
        # Refused, the program runs as it would without scaf, with the same result.
        assert r.returncode == 0, r.stderr
        assert parse_result(r.stdout)["verified"] == "yes"
        assert "PID namespace this daemon cannot see" in r.stderr
        assert wire.status(sock, timeout=2)["clients"] == []
    finally:
        # unshare blocks SIGTERM while it waits; the daemon is its one child.
        children = Path(f"/proc/{daemon.pid}/task/{daemon.pid}/children").read_text().split()
        for pid in children:
            os.kill(int(pid), signal.SIGTERM)
        if not children:
            daemon.kill()
        daemon.wait(timeout=10)
    assert "refused connection: client is in a PID namespace" in Path(f"{tdir}/scafd.log").read_text()
    assert not os.path.exists(sock)


def test_killed_sessions_with_their_leader_outside_the_namespace(tmp_path: Path) -> None:
    """Daemon and programs in one namespace whose session leader is outside it (docker exec, a CI
    runner): /proc says session 0 for all of them. The daemon's tests of killed sessions
    (test_daemon_alloc.py) run again in such a namespace: a killed job's programs still leave in one
    turn, and a program that exits is still not waited for."""
    probe = subprocess.run([*UNSHARE, "cat", "/proc/self/stat"], capture_output=True, text=True, timeout=30,
                           check=False)
    assert probe.returncode == 0 and probe.stdout.rsplit(")", 1)[1].split()[3] == "0", probe
    run = subprocess.run(
        [*UNSHARE, sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
         f"--basetemp={tmp_path / 'inner'}", str(Path(__file__).with_name("test_daemon_alloc.py")), "-k",
         "killed_one_at_a_time or exits_is_not_waited"],
        cwd=ROOT, capture_output=True, text=True, timeout=300, check=False)
    assert run.returncode == 0 and "2 passed" in run.stdout, run.stdout[-6000:] + run.stderr[-2000:]
