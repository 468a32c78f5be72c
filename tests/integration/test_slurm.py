"""scaf on a real one-node Slurm: docs/deploy.md's TaskProlog, slurm.conf lines and job script, run by slurmd."""

from __future__ import annotations

import configparser
import contextlib
import json
import os
import pwd
import re
import shutil
import signal
import subprocess
import tempfile
import textwrap
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from conftest import ROOT, SCAF
from scaf.lib import paths
from support import slurm, wire
from support.users import real_users

DEPLOY = ROOT / "docs" / "deploy.md"
PROLOG = ROOT / "dist" / "slurm" / "slurm-taskprolog.in"
PREFIX = "/usr/local"
USERS = ("scaft-slurm1", "scaft-slurm2")


def slurm_section() -> str:
    text = DEPLOY.read_text()
    start = text.index("\n## A Slurm node")
    return text[start:text.index("\n## ", start + 1)]


def fenced(section: str, first_line: str) -> str:
    """The fenced code block of the section whose first line is first_line, dedented."""
    for m in re.finditer(r"^( *)```[a-z]*\n(.*?)^\1```", section, re.MULTILINE | re.DOTALL):
        body = textwrap.dedent(m.group(2))
        if body.splitlines()[0] == first_line:
            return body
    raise AssertionError(f"docs/deploy.md's Slurm section has no code block starting {first_line!r}")


def for_build(text: str, prolog: Path | None = None) -> str:
    """The documented installed paths read as the build tree's."""
    if prolog is not None:
        text = text.replace(f"{PREFIX}/lib/scaf/slurm-taskprolog", str(prolog))
    return (text.replace(f"{PREFIX}/lib/scaf/workloads/", f"{paths.workloads_dir()}/")
            .replace(f"{PREFIX}/sbin/scafd", str(paths.scafd())))


def rendered_prolog(sbindir: str) -> str:
    return PROLOG.read_text().replace("@SBINDIR@", sbindir)


def test_the_documented_prolog_is_the_shipped_one() -> None:
    section = slurm_section()
    assert fenced(section, "#!/bin/sh") == rendered_prolog(f"{PREFIX}/sbin")
    assert "@" not in rendered_prolog(f"{PREFIX}/sbin").replace("$@", "")
    conf = fenced(section, "# slurm.conf: scaf's lines")
    assert f"TaskProlog={PREFIX}/lib/scaf/slurm-taskprolog" in conf.splitlines()


@pytest.fixture(scope="module")
def top() -> Iterator[Path]:
    """A folder every user can reach (pytest's own are private to root): the cluster's state and the jobs'."""
    d = Path(tempfile.mkdtemp(prefix="scaf-slurm-", dir="/tmp"))
    os.chmod(d, 0o755)
    tmp = d / "tmp"  # the jobs' TMPDIR, so that their daemons' sockets are ours to clean up
    tmp.mkdir()
    os.chmod(tmp, 0o1777)
    yield d
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture(scope="module")
def cluster(top: Path) -> Iterator[slurm.Slurm]:
    prolog = top / "slurm-taskprolog"
    prolog.write_text(rendered_prolog(str(paths.scafd().parent)))
    os.chmod(prolog, 0o755)
    conf = fenced(slurm_section(), "# slurm.conf: scaf's lines")
    lines = [ln for ln in for_build(conf, prolog).splitlines() if ln and not ln.startswith("#")]
    with slurm.cluster(top / "cluster", lines) as c:
        yield c


def job_env(top: Path, **extra: str) -> dict[str, str]:
    """What a user's shell would pass to sbatch: scaf on PATH, a TMPDIR of the tests'."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SCAF_", "LD_PRELOAD", "OMP_", "GOMP_"))}
    env.update(PATH=f"{SCAF.parent}:/usr/local/bin:/usr/bin:/bin", TMPDIR=str(top / "tmp"))
    env.update(extra)
    return env


def job_dir(top: Path, name: str, owner: pwd.struct_passwd | None = None) -> Path:
    d = top / name
    d.mkdir()
    if owner is not None:
        os.chown(d, owner.pw_uid, owner.pw_gid)
    os.chmod(d, 0o755)
    return d


def job_socket(top: Path, jobid: str) -> str:
    return str(top / "tmp" / f"scaf-job{jobid}" / "scafd.sock")


def status_of(sock: str) -> dict | None:
    try:
        return wire.status(sock, timeout=5)
    except (OSError, wire.DaemonUnavailable):
        return None


def wait_status(sock: str, pred: Callable[[dict], bool], timeout: float, what: str, logs: Callable[[], str]) -> dict:
    deadline = time.monotonic() + timeout
    st: dict | None = None
    while time.monotonic() < deadline:
        st = status_of(sock)
        if st is not None and pred(st):
            return st
        time.sleep(0.1)
    raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}: last status {st}\n{logs()}")


def wait_gone(pid: int, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.1)
    return False


@contextlib.contextmanager
def reaped(pids: list[int]) -> Iterator[list[int]]:
    """Daemons a test saw: should one outlive its job (a failing test), it does not outlive the test."""
    try:
        yield pids
    finally:
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                if not wait_gone(pid, 0.5):
                    os.kill(pid, signal.SIGTERM)


def checksum(text: str) -> str:
    m = re.search(r"^checksum=([0-9a-f]{16})$", text, re.MULTILINE)
    assert m, text
    return m.group(1)


def plain_checksum(name: str, size: str) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SCAF_", "LD_PRELOAD"))}
    r = subprocess.run([str(paths.workload(name)), "--size", size], capture_output=True, text=True, env=env,
                       timeout=300, check=True)
    return checksum(r.stdout)


def test_a_job_runs_two_programs_as_clients_of_its_own_daemon(cluster: slurm.Slurm, top: Path) -> None:
    d = job_dir(top, "pair")
    script = d / "pair.sh"
    # The documented job script: the section's one sh block with #SBATCH lines.
    blocks = [b for b in re.findall(r"```sh\n(.*?)```", slurm_section(), re.DOTALL) if "#SBATCH" in b]
    assert len(blocks) == 1, blocks
    script.write_text(for_build(blocks[0]))
    jobid = cluster.sbatch(script, env=job_env(top))
    sock = job_socket(top, jobid)
    with reaped([]) as daemons:
        st = wait_status(sock, lambda s: {c["name"] for c in s["clients"]} == {"ep", "cg"}, 120,
                         "ep and cg both clients of the job's daemon", cluster.logs)
        daemons.append(st["daemon_pid"])
        assert st["job"] == jobid, st
        rec = cluster.job(jobid)
        assert rec.get("JobState") == "RUNNING", rec
        # The job has 2 CPUs (the whole node here); the daemon hands out those.
        assert st["affinity"] == 2 and st["cpus"] == 2, st
        # The site's view: the metrics name the job, on the daemon and on each of its programs.
        prom = subprocess.run([str(SCAF), "status", "--prometheus", "--socket", sock], capture_output=True,
                              text=True, timeout=60, check=True).stdout
        assert re.search(rf'^scaf_info{{[^}}]*job_id="{jobid}"', prom, re.MULTILINE), prom
        assert len(re.findall(rf'^scaf_client_threads{{[^}}]*job_id="{jobid}"', prom, re.MULTILINE)) == 2, prom
        # Over a window, never more threads than the job's CPUs while both run.
        samples = []
        deadline = time.monotonic() + 2.0
        while time.monotonic() < deadline:
            s = status_of(sock)
            if s is not None and len(s["clients"]) == 2:
                samples.append(sum(c["threads"] for c in s["clients"]))
            time.sleep(0.1)
        assert samples and max(samples) <= 2, samples

        cluster.wait_state(jobid, ("COMPLETED",), 300)
        # The script has ended and its clients have left: the daemon goes too.
        assert wait_gone(st["daemon_pid"], 30), f"the job's daemon {st['daemon_pid']} outlived job {jobid}"
    log = (top / "tmp" / f"scaf-job{jobid}" / "scafd.log").read_text()
    assert f"for job {jobid}:" in log, log
    assert "(--exit-with) has ended and no client is left: exiting" in log, log
    for name in ("ep", "cg"):
        out = (d / f"{name}.out").read_text()
        assert "verified=yes" in out, out
        assert checksum(out) == plain_checksum(name, "W"), f"{name}: results differ from a plain run"


def test_a_one_cpu_jobs_daemon_divides_that_cpu_only(cluster: slurm.Slurm, top: Path) -> None:
    d = job_dir(top, "one")
    script = d / "one.sh"
    # In the job: the daemon's status, its affinity and the job script's own.
    script.write_text(textwrap.dedent("""\
        #!/bin/sh
        scaf status --json > status.json
        pid=$(sed -n 's/^ *"daemon_pid": \\([0-9]*\\),$/\\1/p' status.json)
        grep Cpus_allowed_list /proc/$pid/status > daemon-cpus.txt
        grep Cpus_allowed_list /proc/$$/status > job-cpus.txt
        """))
    jobid = cluster.sbatch(script, "--cpus-per-task=1", env=job_env(top))
    rec = cluster.wait_state(jobid, ("COMPLETED", "FAILED"), 120)
    assert rec["JobState"] == "COMPLETED", (rec, cluster.logs())
    st = json.loads((d / "status.json").read_text())
    assert st["job"] == jobid and st["cpus"] == 1 and st["affinity"] == 1, st
    job_cpus = (d / "job-cpus.txt").read_text().split()[-1]
    assert (d / "daemon-cpus.txt").read_text().split()[-1] == job_cpus
    assert re.fullmatch(r"\d+", job_cpus), job_cpus
    with reaped([st["daemon_pid"]]):
        assert wait_gone(st["daemon_pid"], 30), f"the job's daemon {st['daemon_pid']} outlived job {jobid}"


def test_an_srun_job_gets_a_daemon_of_its_own(cluster: slurm.Slurm, top: Path) -> None:
    # srun without sbatch: the step's task is the prolog's parent, the daemon lives as long as it.
    r = cluster.run(["srun", "--cpus-per-task=1", "sh", "-c",
                     f"scaf run -- {paths.workload('ep')} --size S && scaf status --json"],
                    env=job_env(top), cwd=top)
    assert "verified=yes" in r.stdout, r.stdout + r.stderr
    st = json.loads(r.stdout[r.stdout.index("{"):])
    assert st["job"] and st["cpus"] == 1 and st["affinity"] == 1, st
    with reaped([st["daemon_pid"]]):
        assert wait_gone(st["daemon_pid"], 30), f"the step's daemon {st['daemon_pid']} outlived its task"


def test_scancel_ends_the_programs_and_the_jobs_daemon(cluster: slurm.Slurm, top: Path) -> None:
    d = job_dir(top, "cancel")
    script = d / "long.sh"
    w = paths.workloads_dir()
    script.write_text(textwrap.dedent(f"""\
        #!/bin/sh
        scaf run -- {w}/ep --size A --until /nonexistent/never > ep.out &
        scaf run -- {w}/spin --size A --until /nonexistent/never > spin.out &
        wait
        """))
    jobid = cluster.sbatch(script, "--cpus-per-task=2", env=job_env(top))
    sock = job_socket(top, jobid)
    with reaped([]) as daemons:
        st = wait_status(sock, lambda s: len(s["clients"]) == 2, 120, "both programs clients", cluster.logs)
        daemons.append(st["daemon_pid"])
        clients = [c["pid"] for c in st["clients"]]
        # The daemon's view while the job is cancelled, as densely as it answers: its two clients
        # leave in one turn, so no reply shows one of them gone and the other still there.
        views: list[set[int]] = []
        stop = threading.Event()

        def watch() -> None:
            while not stop.is_set():
                s = status_of(sock)
                if s is None:
                    return
                views.append({c["pid"] for c in s["clients"]})
                if not s["clients"]:
                    return

        watcher = threading.Thread(target=watch, daemon=True)
        watcher.start()
        cluster.run(["scancel", jobid])
        cluster.wait_state(jobid, ("CANCELLED",), 60)
        for pid in clients:
            assert wait_gone(pid, 30), f"client {pid} outlived the cancelled job"
        watcher.join(30)
        stop.set()
        log_path = top / "tmp" / f"scaf-job{jobid}" / "scafd.log"
        assert views and all(v in (set(clients), set()) for v in views), \
            f"the clients left in separate turns: {len(views)} answers, {views[:3]} ... {views[-3:]}\n{log_path.read_text()}"
        assert wait_gone(st["daemon_pid"], 30), f"the job's daemon {st['daemon_pid']} outlived the cancelled job"
    log = log_path.read_text()
    assert "(--exit-with) has ended" in log and "no client is left: exiting" in log, log


@pytest.fixture(scope="module")
def users() -> Iterator[list[pwd.struct_passwd]]:
    with real_users(USERS) as pair:
        yield pair


def as_user(user: pwd.struct_passwd, sock: str) -> dict:
    """The status a user gets from the shared daemon (asked by a child that has become that user)."""
    rd, wr = os.pipe()
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            os.close(rd)
            os.setgroups([])
            os.setgid(user.pw_gid)
            os.setuid(user.pw_uid)
            os.write(wr, json.dumps(wire.status(sock, timeout=10)).encode())
            code = 0
        finally:
            os._exit(code)
    os.close(wr)
    with os.fdopen(rd, "rb") as f:
        data = f.read()
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0 and data, f"{user.pw_name} could not ask for status"
    return json.loads(data)


@pytest.fixture(scope="module")
def installed(top: Path) -> Path:
    """docs/deploy.md's first step, `sudo make install`, into a DESTDIR under `top` (every user can read it).

    Returns the installed prefix: `scaf`, `scafd`, the layers, the workloads and the systemd units.
    """
    dest = top / "dest"
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL", "SCAF_BUILD")}
    r = subprocess.run(["make", "-C", str(ROOT), "install", f"DESTDIR={dest}", f"PREFIX={PREFIX}"],
                       capture_output=True, text=True, env=env, timeout=1500, check=False)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    return dest / PREFIX.lstrip("/")


def unit(path: Path) -> configparser.ConfigParser:
    u = configparser.ConfigParser(strict=False, interpolation=None)
    u.optionxform = str  # systemd's keys are case-sensitive
    u.read_string(path.read_text())
    return u


class NodeDaemon:
    """The node-wide shared daemon, run as the installed scafd.socket and scafd.service would run it."""

    def __init__(self, socket: str, proc: subprocess.Popen, log: Path, alloc: Path) -> None:
        self.socket, self.proc, self.log, self.alloc = socket, proc, log, alloc

    def status(self) -> dict:
        return wire.status(self.socket, timeout=10)

    def wait_for(self, pred: Callable[[dict], bool], timeout: float, what: str) -> dict:
        return wait_status(self.socket, pred, timeout, what, lambda: self.log.read_text()[-3000:])


@pytest.fixture
def node_daemon(installed: Path, top: Path) -> Iterator[NodeDaemon]:
    """`systemctl enable --now scafd.socket`, where no systemd runs: the installed units, read and followed.

    systemd-socket-activate listens on the socket unit's ListenStream= and, at the first connection, execs
    the service's ExecStart= as its User= with the socket as fd 3 (LISTEN_FDS), as systemd does. The
    directory and the socket get the unit's DirectoryMode= and SocketMode=. The ExecStart= gets what a
    drop-in (docs/deploy.md) would add: --no-lookout, so that the shares are judged against the node's 2
    CPUs whatever else this machine runs, and --log, to read the turns.
    """
    system = installed / "lib" / "systemd" / "system"
    sock_unit, svc_unit = unit(system / "scafd.socket")["Socket"], unit(system / "scafd.service")["Service"]
    listen = sock_unit["ListenStream"]
    if not shutil.which("systemd-socket-activate"):
        pytest.skip("systemd-socket-activate (Debian's systemd package) is not installed")
    if os.path.exists(listen):
        pytest.skip(f"a node-wide scafd already listens on {listen}: the test will not take its place")
    argv = svc_unit["ExecStart"].split()
    assert argv[0] == f"{PREFIX}/sbin/scafd", argv
    argv[0] = str(installed / "sbin" / "scafd")
    with real_users((svc_unit["User"],)) as (daemon_user,):
        d = top / "node-daemon"  # what LogsDirectory= would make: the daemon's user writes there
        d.mkdir()
        os.chown(d, daemon_user.pw_uid, daemon_user.pw_gid)
        alloc, log = d / "alloc.jsonl", top / "node-daemon.log"
        run_dir = os.path.dirname(listen)
        made = not os.path.isdir(run_dir)
        if made:
            os.mkdir(run_dir, int(sock_unit["DirectoryMode"], 8))
        env = {k: v for k, v in os.environ.items() if not k.startswith(("SCAF_", "LD_PRELOAD", "OMP_"))}
        with open(log, "wb") as out:
            proc = subprocess.Popen(
                ["systemd-socket-activate", "-l", listen, "setpriv", f"--reuid={daemon_user.pw_uid}",
                 f"--regid={daemon_user.pw_gid}", "--init-groups", *argv, "--no-lookout", "--log", str(alloc)],
                stdout=out, stderr=out, env=env)
        try:
            deadline = time.monotonic() + 10
            while not os.path.exists(listen):
                assert time.monotonic() < deadline and proc.poll() is None, log.read_text()
                time.sleep(0.02)
            os.chmod(listen, int(sock_unit["SocketMode"], 8))
            yield NodeDaemon(listen, proc, log, alloc)
        finally:
            proc.terminate()
            proc.wait(timeout=10)
            with contextlib.suppress(FileNotFoundError):
                os.unlink(listen)  # RemoveOnStop=yes
            if made:
                with contextlib.suppress(OSError):
                    os.rmdir(run_dir)


def test_two_users_jobs_share_the_node_through_the_shared_daemon(
    cluster: slurm.Slurm, top: Path, users: list[pwd.struct_passwd], installed: Path, node_daemon: NodeDaemon,
) -> None:
    jobs = {}
    for u in users:
        d = job_dir(top, f"shared-{u.pw_name}", owner=u)
        script = d / "ep.sh"
        # What a user of the node writes: the installed scaf on PATH, nothing about sockets (the prolog
        # finds the node's /run/scaf/scafd.sock and points the job at it).
        script.write_text(textwrap.dedent(f"""\
            #!/bin/sh
            scaf run -- {installed}/lib/scaf/workloads/ep --size A --until /nonexistent/never > ep.out
            """))
        os.chmod(script, 0o755)
        env = job_env(top)
        env["PATH"] = f"{installed / 'bin'}:/usr/local/bin:/usr/bin:/bin"
        jobs[u.pw_uid] = cluster.sbatch(script, "--cpus-per-task=2", "--oversubscribe", user=u.pw_uid, gid=u.pw_gid,
                                        env=env)
    node = node_daemon
    for jobid in jobs.values():
        cluster.wait_state(jobid, ("RUNNING",), 60)
    st = node.wait_for(lambda s: {c["uid"] for c in s["clients"]} == set(jobs), timeout=60,
                       what="both users' programs clients of the shared daemon")
    by_uid = {c["uid"]: c for c in st["clients"]}
    # The daemon is the installed one, as the service's user, started by the socket's first connection.
    assert os.readlink(f"/proc/{st['daemon_pid']}/exe") == str(installed / "sbin" / "scafd")
    assert st["daemon_pid"] == node.proc.pid
    assert pwd.getpwuid(os.stat(f"/proc/{st['daemon_pid']}").st_uid).pw_name == "scaf"
    assert "passed by socket activation" in node.log.read_text()
    # Each program runs the installed layer, put there by `scaf run`.
    for c in st["clients"]:
        assert f"LD_PRELOAD={installed}/lib/scaf/libscaf_gomp.so".encode() in \
            Path(f"/proc/{c['pid']}/environ").read_bytes().split(b"\0")

    # Over a window: the node's 2 CPUs split between the users, one each, not 2 + 2 threads time-sliced.
    samples: dict[int, list[int]] = {uid: [] for uid in jobs}
    deadline = time.monotonic() + 3.0
    while time.monotonic() < deadline:
        s = node.status()
        if {c["uid"] for c in s["clients"]} == set(jobs):
            for c in s["clients"]:
                samples[c["uid"]].append(c["threads"])
        time.sleep(0.1)
    for uid, seen in samples.items():
        assert len(seen) >= 10 and sum(seen) / len(seen) <= 1.2, (uid, seen)
    assert all(a + b <= 2 for a, b in zip(*samples.values(), strict=False)), samples

    # Each user sees their own program, and of the other's only a count.
    for u in users:
        mine = as_user(u, node.socket)
        assert [c["pid"] for c in mine["clients"]] == [by_uid[u.pw_uid]["pid"]], mine
        assert mine["other_clients"] == 1, mine

    # Root's metrics name each program's job.
    prom = subprocess.run([str(SCAF), "status", "--prometheus", "--socket", node.socket], capture_output=True,
                          text=True, timeout=60, check=True)
    for uid, jobid in jobs.items():
        assert re.search(rf'^scaf_client_threads{{[^}}]*pid="{by_uid[uid]["pid"]}"[^}}]*job_id="{jobid}"',
                         prom.stdout, re.MULTILINE), prom.stdout

    # One job cancelled: its program leaves the daemon, and the other user's gets the whole node.
    first, second = users
    cluster.run(["scancel", jobs[first.pw_uid]])
    node.wait_for(lambda s: [c["uid"] for c in s["clients"]] == [second.pw_uid], timeout=30,
                  what="the cancelled job's program gone")
    node.wait_for(lambda s: [c["threads"] for c in s["clients"]] == [2], timeout=30,
                  what="the remaining program given both CPUs")
    cluster.run(["scancel", jobs[second.pw_uid]])
    cluster.wait_state(jobs[second.pw_uid], ("CANCELLED",), 60)
