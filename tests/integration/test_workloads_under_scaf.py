"""Every workload verifies, with the same checksum, without the layer, under the inert layer,
and under a daemon whose allocation keeps changing while the workload runs."""

from __future__ import annotations

import json
import os
import subprocess
import threading
import time
from pathlib import Path
from typing import Self

import pytest
from conftest import Daemon, layer_env, parse_result
from scaf.lib import paths
from support import wire

WORKLOADS = sorted(p.name for p in paths.workloads_dir().glob("*") if os.access(p, os.X_OK)) \
    if paths.workloads_dir().is_dir() else []


class Churn:
    """A raw client that arrives and leaves every few milliseconds, so that the daemon
    re-divides its 2 contexts (2 -> 1+1 -> 2 ...) all through the workload's run."""

    def __init__(self, socket: str) -> None:
        self.socket = socket
        self.stop = threading.Event()
        self.cycles = 0
        self.thread = threading.Thread(target=self.loop, daemon=True)

    def loop(self) -> None:
        while not self.stop.is_set():
            sock, _page, _ = wire.register(self.socket, 2, b"churn")
            time.sleep(0.001)
            sock.close()
            self.cycles += 1
            time.sleep(0.001)

    def __enter__(self) -> Self:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join()


def run(name: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(paths.workload(name)), "--size", "S"], env=env, cwd=cwd,
                          capture_output=True, text=True, timeout=120, check=False)


def checksum(out: str) -> str:
    return next(ln for ln in out.splitlines() if ln.startswith("checksum="))


def allocations_of(log: str, pid: int) -> set[tuple[int, tuple[int, ...]]]:
    seen = set()
    with open(log) as f:
        for line in f:
            for c in json.loads(line)["clients"]:
                if c["pid"] == pid:
                    seen.add((c["threads"], tuple(c["cpuset"])))
    return seen


@pytest.mark.skipif(not WORKLOADS, reason="workloads not built (run make)")
@pytest.mark.parametrize("name", WORKLOADS)
def test_verifies_plain_inert_and_while_allocation_changes(name: str, scafd_factory, tmp_path: Path) -> None:
    d: Daemon = scafd_factory("--policy", "equipartition", "--cpus", "2", "--no-lookout")
    plain_env = {k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS", "LD_PRELOAD")}
    inert_env = layer_env(None, {})
    live_env = layer_env(d.socket, {})
    for env in (inert_env, live_env):
        env.pop("OMP_NUM_THREADS", None)

    outs: dict[str, subprocess.CompletedProcess[str]] = {}
    for mode, env in (("plain", plain_env), ("inert", inert_env)):
        (tmp_path / mode).mkdir()
        outs[mode] = run(name, env, tmp_path / mode)
    for mode, r in outs.items():
        assert r.returncode == 0, (mode, r.stdout, r.stderr)
        assert parse_result(r.stdout)["verified"] == "yes", (mode, r.stdout)
    assert checksum(outs["plain"].stdout) == checksum(outs["inert"].stdout)
    run_while_churning([str(paths.workload(name)), "--size", "S"], live_env, d, checksum(outs["plain"].stdout),
                       tmp_path)


def run_while_churning(argv: list[str], env: dict[str, str], d: Daemon, want: str, tmp_path: Path) -> None:
    """The point of a run under churn: the daemon really changed the program's share while it ran, and
    it still verified with the plain checksum `want`. A short run can be over within a few churn cycles
    on a fast machine: the program runs again (each run must verify) until one has seen its share
    change, at most 20 times."""
    seen: set[tuple[int, tuple[int, ...]]] = set()
    cycles = 0
    for attempt in range(20):
        cwd = tmp_path / f"changing{attempt}"
        cwd.mkdir()
        with Churn(d.socket) as churn:
            p = subprocess.Popen(argv, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            stdout, stderr = p.communicate(timeout=180)
        cycles += churn.cycles
        assert p.returncode == 0, ("changing", attempt, stdout, stderr)
        assert parse_result(stdout)["verified"] == "yes", ("changing", attempt, stdout)
        assert checksum(stdout) == want, ("changing", attempt, stdout)
        seen = allocations_of(d.log, p.pid)
        if len(seen) >= 2:
            return
    raise AssertionError(f"{argv[0]} saw only {seen} in 20 runs and {cycles} churn cycles")
