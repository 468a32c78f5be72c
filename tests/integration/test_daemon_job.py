"""scafd --job and --exit-with, as a batch job's daemon is started: the id in log, status and metrics; gone with its job."""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import SCAF, Daemon
from scaf.lib import paths
from support import wire


def scafd(*args: str, tmp: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(paths.scafd()), "--socket", f"{tmp}/s.sock", *args], capture_output=True,
                          text=True, timeout=30, check=False)


@pytest.mark.parametrize("job", ["", "a b", "x" * 65, "12;rm", "1\n2", 'q"'])
def test_a_job_id_outside_the_allowed_characters_is_a_usage_error(job: str, tmp_path) -> None:
    r = scafd("--job", job, tmp=str(tmp_path))
    assert r.returncode == 2 and "invalid --job" in r.stderr, r.stderr


@pytest.mark.parametrize("pid", ["0", "-1", "x", "99999999999"])
def test_exit_with_needs_a_pid(pid: str, tmp_path) -> None:
    r = scafd("--exit-with", pid, tmp=str(tmp_path))
    assert r.returncode == 2 and "invalid --exit-with" in r.stderr, r.stderr


def test_exit_with_a_process_that_is_gone_is_refused_at_start(tmp_path) -> None:
    p = subprocess.Popen(["true"])
    p.wait()
    r = scafd("--exit-with", str(p.pid), tmp=str(tmp_path))
    assert r.returncode == 1 and f"--exit-with {p.pid}: no such process" in r.stderr, r.stderr


def wait_exit(d: Daemon, timeout: float) -> int | None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and d.alive():
        time.sleep(0.05)
    return d.returncode()


def test_the_job_id_is_in_the_log_the_status_and_the_metrics(scafd_factory: Callable[..., Daemon]) -> None:
    d = scafd_factory("--job", "1234_5.x+0", "--cpus", "2", "--no-lookout")
    assert "for job 1234_5.x+0:" in d.stderr()
    conn, _page, _ = wire.register(d.socket, 2)
    try:
        st = d.wait_for(lambda s: len(s["clients"]) == 1, what="the client")
        assert st["job"] == "1234_5.x+0"
        prom = subprocess.run([str(SCAF), "status", "--prometheus", "--socket", d.socket], capture_output=True,
                              text=True, timeout=60, check=True).stdout
        assert 'job_id="1234_5.x+0"' in next(ln for ln in prom.splitlines() if ln.startswith("scaf_info{"))
        assert 'job_id="1234_5.x+0"' in next(ln for ln in prom.splitlines() if ln.startswith("scaf_client_threads{"))
        table = subprocess.run([str(SCAF), "status", "--socket", d.socket], capture_output=True, text=True,
                               timeout=60, check=True).stdout
        assert "job 1234_5.x+0" in table, table
    finally:
        conn.close()
    d.wait_for(lambda s: s["clients"] == [], what="the client gone")
    # Every --log line is a status: it names the job too.
    assert d.log is not None
    lines = [json.loads(ln) for ln in Path(d.log).read_text().splitlines()]
    assert lines and all(x["job"] == "1234_5.x+0" for x in lines), lines


def test_without_a_job_the_status_says_null(scafd: Daemon) -> None:
    assert scafd.status()["job"] is None


def test_exits_once_the_process_has_ended_and_the_last_client_left(scafd_factory: Callable[..., Daemon]) -> None:
    owner = subprocess.Popen(["sleep", "600"])
    try:
        d = scafd_factory("--exit-with", str(owner.pid), "--cpus", "2", "--no-lookout")
        conn, _page, _ = wire.register(d.socket, 2)
        owner.kill()
        owner.wait()
        # A client is still there: the daemon waits for it (a cancelled job's programs are ending too).
        time.sleep(1.5)
        assert d.alive(), d.stderr()
        assert "has ended: exiting when its 1 clients have left" in d.stderr()
        conn.close()
        assert wait_exit(d, 10) == 0, d.stderr()
        assert "(--exit-with) has ended and no client is left: exiting" in d.stderr()
    finally:
        owner.kill()
        owner.wait()


def test_exits_at_once_when_the_process_ends_without_clients(scafd_factory: Callable[..., Daemon]) -> None:
    owner = subprocess.Popen(["sleep", "600"])
    try:
        d = scafd_factory("--exit-with", str(owner.pid), "--no-lookout")
        owner.kill()
        owner.wait()
        assert wait_exit(d, 10) == 0, d.stderr()
    finally:
        owner.kill()
        owner.wait()
