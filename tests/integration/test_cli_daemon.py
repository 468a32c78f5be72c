"""The scaf command line with a real daemon: auto-start, status of a real client, `scaf daemon`."""

from __future__ import annotations

import json
import os
import pwd
import re
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest
from conftest import SCAF, Daemon, short_tmpdir
from scaf.lib import paths
from support import wire

# A real GNU OpenMP program that keeps opening small parallel regions, mostly
# asleep between them, until a stop file appears (or 60 s pass).
CLIENT_C = r"""
#include <omp.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    struct timespec t0, t;
    long sum = 0, regions = 0;
    if (argc != 2)
        return 2;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    printf("ready %d\n", (int)getpid());
    fflush(stdout);
    for (;;) {
#pragma omp parallel reduction(+ : sum)
        sum += 1;
        regions++;
        usleep(2000);
        clock_gettime(CLOCK_MONOTONIC, &t);
        if (access(argv[1], F_OK) == 0 || t.tv_sec - t0.tv_sec > 60)
            break;
    }
    printf("regions=%ld ok=%s\n", regions, sum >= regions ? "yes" : "no");
    return 0;
}
"""

CLIENT_FIELDS = {
    "id": int, "pid": int, "name": str, "threads": int, "malleable": bool, "cpuset": list, "nlwp": int,
    "max_threads": int, "last_team": int, "regions": int, "coef": (int, float), "estimate": str,
    "long_region": bool, "experiments": int, "uid": int,
}
TOP_FIELDS = {
    "version": int, "daemon_pid": int, "policy": str, "cpus": int, "available": int, "foreign": (int, float),
    "rate_hz": (int, float), "chunk": int, "clients": list, "refused": int, "affinity": int, "limit": str,
    "cgroup": dict,
}


@pytest.fixture(scope="module")
def omp_client() -> Iterator[Path]:
    d = short_tmpdir()
    src, exe = Path(d, "scafcli.c"), Path(d, "scafcli")
    src.write_text(CLIENT_C)
    subprocess.run(["gcc", "-O1", "-fopenmp", "-o", str(exe), str(src)], check=True)
    yield exe
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture
def fresh_socket() -> Iterator[str]:
    """A user's default socket path, XDG_RUNTIME_DIR/scaf/scafd.sock in a new directory (own_env sets
    that up); any daemon left on it is stopped at teardown."""
    d = short_tmpdir()
    os.mkdir(os.path.join(d, "scaf"), 0o700)
    sock = os.path.join(d, "scaf", "scafd.sock")
    yield sock
    for p in daemons_on(sock):
        p.terminate()
    _, alive = psutil.wait_procs(daemons_on(sock), timeout=10)
    for p in alive:
        p.kill()
    shutil.rmtree(d, ignore_errors=True)


def daemons_on(sock: str) -> list[psutil.Process]:
    out = []
    for p in psutil.process_iter(["cmdline", "status"]):
        cmd = p.info["cmdline"] or []
        if sock in cmd and p.info["status"] != psutil.STATUS_ZOMBIE:
            out.append(p)
    return out


def env_with(**kw: str) -> dict[str, str]:
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)
    env.update(kw)
    return env


def own_env(sock: str, **kw: str) -> dict[str, str]:
    """The environment in which SOCK (a fresh_socket) is this user's own default socket."""
    env = env_with(XDG_RUNTIME_DIR=os.path.dirname(os.path.dirname(sock)), **kw)
    env.pop("SCAF_SOCKET", None)
    return env


def scaf(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(SCAF), *args], capture_output=True, text=True, env=env, timeout=60, check=False)


STARTED = re.compile(r"^scaf: started a daemon on (\S+) \(pid (\d+)\); it exits after 30 s without clients$", re.MULTILINE)


def test_run_starts_a_daemon_when_none_answers(fresh_socket: str) -> None:
    env = own_env(fresh_socket)
    r = scaf("run", "--", "true", env=env)
    assert r.returncode == 0, r.stderr
    m = STARTED.search(r.stderr)
    assert m, r.stderr
    assert m.group(1) == fresh_socket
    pid = int(m.group(2))

    st = scaf("status", "--json", env=env)
    assert st.returncode == 0, st.stderr
    status = json.loads(st.stdout)
    assert status["daemon_pid"] == pid
    # The daemon is detached: its own session, not our child, with the idle exit asked for.
    proc = psutil.Process(pid)
    assert os.getsid(pid) != os.getsid(0)
    assert proc.ppid() != os.getpid()
    assert proc.cmdline()[-2:] == ["--idle-exit", "30"]
    assert os.path.exists(os.path.join(os.path.dirname(fresh_socket), "scafd.log"))

    # The next run finds it and says nothing.
    r2 = scaf("run", "--", "true", env=env)
    assert r2.returncode == 0 and "started" not in r2.stderr
    assert [p.pid for p in daemons_on(fresh_socket)] == [pid]


def test_concurrent_runs_start_one_daemon(fresh_socket: str) -> None:
    env = own_env(fresh_socket)
    procs = [subprocess.Popen([str(SCAF), "run", "--", "true"], stderr=subprocess.PIPE, text=True, env=env)
             for _ in range(4)]
    errs = []
    for p in procs:
        _, err = p.communicate(timeout=60)
        assert p.returncode == 0, err
        errs.append(err)
    assert sum(bool(STARTED.search(e)) for e in errs) == 1, errs
    running = daemons_on(fresh_socket)
    assert len(running) == 1, [p.cmdline() for p in running]
    assert wire.status(fresh_socket)["daemon_pid"] == running[0].pid


def test_no_start_runs_without_a_daemon(fresh_socket: str, omp_client: Path) -> None:
    stop = fresh_socket + ".stop"
    Path(stop).touch()
    r = scaf("run", "--no-start", "--", str(omp_client), stop, env=env_with(SCAF_SOCKET=fresh_socket))
    assert r.returncode == 0, r.stderr
    assert "ok=yes" in r.stdout
    assert r.stderr == ""
    assert not daemons_on(fresh_socket)


def test_status_of_a_real_client(scafd: Daemon, omp_client: Path) -> None:
    stop = os.path.join(scafd.dir, "stop")
    run = subprocess.Popen([str(SCAF), "run", "--socket", scafd.socket, "--", str(omp_client), stop],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env_with())
    try:
        assert run.stdout is not None
        line = run.stdout.readline()
        assert line.startswith("ready "), line
        pid = int(line.split()[1])
        scafd.wait_for(lambda s: any(c["pid"] == pid for c in s["clients"]), what=f"client {pid}")

        r = scaf("status", "--json", "--socket", scafd.socket)
        assert r.returncode == 0, r.stderr
        st = json.loads(r.stdout)
        for k, t in TOP_FIELDS.items():
            assert isinstance(st[k], t), (k, st[k])
        assert st["policy"] == "equipartition" and st["cpus"] == 4
        (client,) = [c for c in st["clients"] if c["pid"] == pid]
        for k, t in CLIENT_FIELDS.items():
            assert isinstance(client[k], t), (k, client[k])
        assert client["efficiency"] is None or isinstance(client["efficiency"], float)
        assert client["estimate"] in ("none", "assumed", "measured", "counters")
        assert client["name"] == omp_client.name
        assert 1 <= client["threads"] <= st["cpus"]
        assert client["uid"] == os.getuid()
        assert st["limit"] == "--cpus"

        human = scaf("status", "--socket", scafd.socket)
        assert human.returncode == 0, human.stderr
        assert "policy equipartition" in human.stdout and "cpus 4" in human.stdout
        for col in ("PID", "NAME", "USER", "THREADS", "MALLEABLE", "CPUSET", "NLWP", "IDLE", "EFFICIENCY", "ESTIMATE"):
            assert col in human.stdout
        assert "cpus 4 set by scafd --cpus" in human.stdout
        row = next(ln for ln in human.stdout.splitlines() if ln.split()[:2] == [str(pid), omp_client.name])
        assert row.split()[2] == str(client["threads"])
        assert row.split()[-1] == pwd.getpwuid(os.getuid()).pw_name
    finally:
        Path(stop).touch()
        out, err = run.communicate(timeout=30)
    assert run.returncode == 0, err
    assert "ok=yes" in out
    assert "started a daemon" not in err


def test_status_without_clients(scafd: Daemon) -> None:
    r = scaf("status", "--socket", scafd.socket)
    assert r.returncode == 0, r.stderr
    assert "no clients" in r.stdout
    assert scafd.proc is not None
    assert f"daemon pid {scafd.proc.pid}" in r.stdout


def test_daemon_command_execs_scafd_with_options() -> None:
    d = short_tmpdir()
    sock = os.path.join(d, "scafd.sock")
    p = subprocess.Popen([str(SCAF), "daemon", "--socket", sock, "--policy", "equipartition", "--cpus", "3",
                          "--no-lookout"], stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 15
        st = None
        while st is None and time.monotonic() < deadline and p.poll() is None:
            try:
                st = wire.status(sock)
            except wire.DaemonUnavailable:
                time.sleep(0.05)
        assert st is not None, p.stderr.read() if p.poll() is not None and p.stderr else "no answer"
        # exec, not a child: the daemon is the very process we started.
        assert st["daemon_pid"] == p.pid
        assert st["cpus"] == 3 and st["policy"] == "equipartition"
        p.send_signal(signal.SIGTERM)
        assert p.wait(timeout=10) == 0
        assert not os.path.exists(sock)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        shutil.rmtree(d, ignore_errors=True)


def test_daemon_command_missing_scafd() -> None:
    empty = short_tmpdir()
    try:
        r = scaf("daemon", "--policy", "equipartition", env=env_with(SCAF_BUILD=empty))
    finally:
        shutil.rmtree(empty)
    assert r.returncode == 1
    assert "scafd" in r.stderr and "run make" in r.stderr


def test_daemon_command_bad_option_is_scafds_error() -> None:
    r = scaf("daemon", "--no-such-option")
    assert r.returncode != 0
    assert r.stderr  # scafd explains; scaf adds nothing and parses nothing
    assert paths.scafd().exists()


# --- scaf run: only the user's own socket gets a daemon; the started daemon's options -----------------


@pytest.mark.parametrize("how", ["--socket", "SCAF_SOCKET"])
def test_run_never_starts_a_daemon_on_a_given_socket(fresh_socket: str, how: str) -> None:
    """A shared daemon's socket: down means the program runs unsteered, with its own exit status."""
    sock = os.path.join(os.path.dirname(fresh_socket), "shared", "scafd.sock")
    argv = ["run", *(["--socket", sock] if how == "--socket" else []), "--", "sh", "-c", "echo out; exit 7"]
    env = env_with(**({"SCAF_SOCKET": sock} if how == "SCAF_SOCKET" else {}))
    r = scaf(*argv, env=env)
    assert r.returncode == 7, r.stderr
    assert r.stdout == "out\n"
    assert r.stderr == (f"scaf: no daemon answers on {sock}; running the program unsteered "
                        "(scaf run starts a daemon only on your own default socket)\n")
    assert not os.path.exists(os.path.dirname(sock)), "nothing was created for a daemon"
    assert not daemons_on(sock)


def test_run_policy_and_daemon_args_shape_the_daemon_it_starts(fresh_socket: str) -> None:
    env = own_env(fresh_socket, SCAF_DAEMON_ARGS="--cpus 3 --no-lookout")
    r = scaf("run", "--policy", "equipartition", "--daemon-arg=--chunk", "--daemon-arg=1", "--", "true", env=env)
    assert r.returncode == 0, r.stderr
    assert STARTED.search(r.stderr), r.stderr
    st = wire.status(fresh_socket)
    assert st["policy"] == "equipartition" and st["cpus"] == 3 and st["chunk"] == 1
    # A later run asking for another policy is told that the running daemon keeps its own.
    r = scaf("run", "--policy", "speedup", "--", "true", env=env)
    assert r.returncode == 0, r.stderr
    assert "already runs policy equipartition; --policy speedup applies only to a daemon scaf run starts" in r.stderr
    assert len(r.stderr.splitlines()) == 1, r.stderr


def test_run_bad_daemon_args_setting_is_a_usage_error(fresh_socket: str) -> None:
    r = scaf("run", "--", "true", env=own_env(fresh_socket, SCAF_DAEMON_ARGS="--cpus 'unclosed"))
    assert r.returncode == 2 and "SCAF_DAEMON_ARGS" in r.stderr, r.stderr
    assert not daemons_on(fresh_socket)


def test_second_daemon_says_who_holds_the_socket(fresh_socket: str) -> None:
    """The auto-started daemon is named as such, with when it leaves."""
    env = own_env(fresh_socket)
    r = scaf("run", "--", "true", env=env)
    m = STARTED.search(r.stderr)
    assert m, r.stderr
    second = subprocess.run([str(paths.scafd()), "--socket", fresh_socket, "--no-lookout"], capture_output=True,
                            text=True, timeout=30, check=False)
    assert second.returncode == 1
    assert (f"another scafd (pid {m.group(2)}) is already running on {fresh_socket}: an idle-exit daemon "
            "(as `scaf run` starts), it exits 30 s after its last client leaves") in second.stderr, second.stderr


def test_second_daemon_names_a_daemon_that_stays(scafd: Daemon) -> None:
    r = subprocess.run([str(paths.scafd()), "--socket", scafd.socket], capture_output=True, text=True, timeout=30,
                       check=False)
    assert r.returncode == 1
    assert f"another scafd (pid {scafd.pid}) is already running on {scafd.socket}; it runs until stopped" in r.stderr


def test_run_never_creates_a_missing_tree(fresh_socket: str) -> None:
    """Only the socket's own directory is made: a missing $XDG_RUNTIME_DIR is not ours to create."""
    top = os.path.dirname(os.path.dirname(fresh_socket))
    xdg = os.path.join(top, "no", "such")
    env = env_with(XDG_RUNTIME_DIR=xdg)
    env.pop("SCAF_SOCKET", None)
    r = scaf("run", "--", "true", env=env)
    assert r.returncode == 122, r.stderr
    assert f"directory {xdg}/scaf: cannot create it" in r.stderr and "cannot start" not in r.stderr, r.stderr
    assert not os.path.exists(os.path.join(top, "no"))
