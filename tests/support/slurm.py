"""A real one-node Slurm for the tests: its own munged, slurmctld and slurmd (Debian's), configured for this machine."""

from __future__ import annotations

import contextlib
import os
import pwd
import re
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import pytest

DAEMONS = ("munged", "slurmctld", "slurmd", "sbatch", "squeue", "scontrol", "scancel", "sinfo", "sacct")
PARTITION = "scaft"


def unavailable(why: str) -> None:
    """Skip, saying why; fail instead where Slurm must run (SCAF_SLURM_REQUIRED=1, as .ci/run sets)."""
    if os.environ.get("SCAF_SLURM_REQUIRED") == "1":
        pytest.fail(f"Slurm is required here (SCAF_SLURM_REQUIRED=1) but {why}")
    pytest.skip(why)


def which(name: str) -> str | None:
    # munged, slurmctld and slurmd are in /usr/sbin, which a user's PATH may lack.
    return shutil.which(name) or shutil.which(name, path="/usr/sbin:/sbin")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def node_line(slurmd: str) -> str:
    """`slurmd -C`'s description of this machine (its CPUs, sockets, cores and threads), without memory."""
    r = subprocess.run([slurmd, "-C"], capture_output=True, text=True, timeout=60, check=False)
    line = next((ln for ln in r.stdout.splitlines() if ln.startswith("NodeName=")), "")
    if not line:
        unavailable(f"slurmd -C printed no node line: {r.stdout[-500:]} {r.stderr[-500:]}")
    # RealMemory would make the node DRAIN when the tests' neighbours leave less free.
    return " ".join(w for w in line.split() if not w.startswith(("RealMemory=", "UpTime=")))


class Slurm:
    """munged, slurmctld and slurmd as this process's children, all state under `top`; stop() ends them."""

    def __init__(self, top: Path, extra_conf: Sequence[str]) -> None:
        self.top = top
        self.procs: dict[str, subprocess.Popen[bytes]] = {}
        self.host = socket.gethostname().split(".")[0]
        self.munge_socket = top / "munge" / "munge.socket"
        self.conf = top / "slurm.conf"
        self.jobcomp = top / "jobcomp.txt"
        self.extra_conf = list(extra_conf)

    # --- set-up -------------------------------------------------------------------------------------

    def write_conf(self, slurmd: str) -> None:
        t = self.top
        lines = [
            "# A one-node cluster for scaf's tests (tests/support/slurm.py).",
            "ClusterName=scaft",
            f"SlurmctldHost={self.host}(127.0.0.1)",
            f"SlurmctldPort={free_port()}",
            f"SlurmdPort={free_port()}",
            "SlurmUser=root",
            "SlurmdUser=root",
            "AuthType=auth/munge",
            "CredType=cred/munge",
            f"AuthInfo=socket={self.munge_socket}",
            f"StateSaveLocation={t}/state",
            f"SlurmdSpoolDir={t}/spool",
            f"SlurmctldPidFile={t}/slurmctld.pid",
            f"SlurmdPidFile={t}/slurmd.pid",
            f"SlurmctldLogFile={t}/slurmctld.log",
            f"SlurmdLogFile={t}/slurmd.log",
            "SlurmctldDebug=info",
            "SlurmdDebug=info",
            # The machine's cgroups are not Slurm's to manage (a container, cgroup v1 without systemd):
            # processes are tracked by their parents, tasks bound by sched_setaffinity.
            "ProctrackType=proctrack/linuxproc",
            "SelectType=select/cons_tres",
            "SelectTypeParameters=CR_CPU",
            "MpiDefault=none",
            "ReturnToService=2",
            "KillWait=5",
            "MinJobAge=600",
            "InactiveLimit=0",
            # No slurmdbd: sacct reads the job completion file instead (sacct --completion).
            "AccountingStorageType=accounting_storage/none",
            "JobAcctGatherType=jobacct_gather/none",
            "JobCompType=jobcomp/filetxt",
            f"JobCompLoc={self.jobcomp}",
            "# scaf's lines, from docs/deploy.md:",
            *self.extra_conf,
            f"{node_line(slurmd)} NodeAddr=127.0.0.1 State=UNKNOWN",
            f"PartitionName={PARTITION} Nodes={self.host} Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES",
        ]
        self.conf.write_text("\n".join(lines) + "\n")

    def env(self, **extra: str) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "SBATCH_", "SQUEUE_"))}
        env["SLURM_CONF"] = str(self.conf)
        env.update(extra)
        return env

    def _spawn(self, name: str, argv: list[str]) -> None:
        log = open(self.top / f"{name}.out", "wb")  # noqa: SIM115 - the child keeps it
        self.procs[name] = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                            env=self.env(), start_new_session=True)
        log.close()

    def start(self) -> None:
        if os.geteuid() != 0:
            unavailable("Slurm's slurmd must start as root (it launches jobs as their users)")
        missing = [d for d in DAEMONS if which(d) is None]
        if missing:
            unavailable(f"Debian's Slurm is not installed (missing {', '.join(missing)}; "
                        "tools/deps test installs munge, slurmctld, slurmd and slurm-client)")
        self.top.mkdir(mode=0o755, parents=True, exist_ok=True)
        for d in ("state", "spool", "munge"):
            (self.top / d).mkdir(mode=0o755)
        # munged checks that nobody else can write where its socket, key and logs are.
        os.chmod(self.top, 0o755)
        # A key of this cluster's own: the machine's munge (if any) is left alone. munged runs as the
        # package's user `munge`, as its service does, and owns its folder.
        key = self.top / "munge" / "munge.key"
        key.write_bytes(os.urandom(1024))
        os.chmod(key, 0o400)
        as_munge: list[str] = []
        try:
            m = pwd.getpwnam("munge")
            for f in (self.top / "munge", key):
                os.chown(f, m.pw_uid, m.pw_gid)
            as_munge = ["setpriv", f"--reuid={m.pw_uid}", f"--regid={m.pw_gid}", "--clear-groups", "--"]
        except KeyError:
            pass
        self._spawn("munged", [*as_munge, str(which("munged")), "--foreground", "--force",
                               f"--socket={self.munge_socket}", f"--key-file={key}",
                               f"--pid-file={self.top}/munge/munged.pid", f"--log-file={self.top}/munge/munged.log",
                               f"--seed-file={self.top}/munge/munged.seed"])
        self._wait_for(lambda: self.munge_socket.exists(), 20, "munged's socket")
        slurmd = str(which("slurmd"))
        self.write_conf(slurmd)
        self._spawn("slurmctld", [str(which("slurmctld")), "-D", "-i", "-f", str(self.conf)])
        self._spawn("slurmd", [slurmd, "-D", "-f", str(self.conf)])
        self._wait_for(lambda: self.node_state() in ("idle", "mixed", "allocated"), 90, "the node to be idle in sinfo")

    def _wait_for(self, ok: Callable[[], bool], timeout: float, what: str) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if ok():
                return
            for name, p in self.procs.items():
                if p.poll() is not None:
                    self._fail(f"{name} exited ({p.returncode}) while waiting for {what}")
            time.sleep(0.2)
        self._fail(f"timed out after {timeout:.0f} s waiting for {what}")

    def _fail(self, why: str) -> None:
        text = why + "\n" + self.logs()
        self.stop()
        unavailable(text)

    def logs(self, tail: int = 1500) -> str:
        out = []
        for f in sorted(self.top.glob("*.out")) + sorted(self.top.glob("*.log")) + \
                sorted((self.top / "munge").glob("*.log")):
            with contextlib.suppress(OSError):
                out.append(f"--- {f.name}:\n{f.read_text(errors='replace')[-tail:]}")
        return "\n".join(out)

    def stop(self) -> None:
        """End every job, then the daemons (slurmd first, munged last); never leaves one running."""
        if "slurmctld" in self.procs and self.procs["slurmctld"].poll() is None:
            self.run(["scancel", "--partition", PARTITION], check=False)
        for name in ("slurmd", "slurmctld", "munged"):
            p = self.procs.get(name)
            if p is None or p.poll() is not None:
                continue
            with contextlib.suppress(ProcessLookupError):
                os.killpg(p.pid, signal.SIGTERM)
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(p.pid, signal.SIGKILL)
                p.wait(timeout=20)

    # --- using it -----------------------------------------------------------------------------------

    def run(self, argv: list[str], *, check: bool = True, user: int | None = None, gid: int | None = None,
            env: dict[str, str] | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
        cmd = [str(which(argv[0]) or argv[0]), *argv[1:]]
        if user is not None:
            cmd = ["setpriv", f"--reuid={user}", f"--regid={gid}", "--clear-groups", "--", *cmd]
        env = self.env() if env is None else dict(env, SLURM_CONF=str(self.conf))
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=60, check=False, env=env, cwd=cwd)
        if check and r.returncode != 0:
            raise AssertionError(f"{' '.join(argv)} exited {r.returncode}: {r.stdout[-2000:]}{r.stderr[-2000:]}")
        return r

    def node_state(self) -> str:
        r = self.run(["sinfo", "-h", "-N", "-o", "%t"], check=False)
        return r.stdout.strip().rstrip("*~#$@+-^!%") if r.returncode == 0 else ""

    def sbatch(self, script: Path, *args: str, user: int | None = None, gid: int | None = None,
               env: dict[str, str] | None = None) -> str:
        r = self.run(["sbatch", "--parsable", *args, str(script)], user=user, gid=gid, env=env,
                     cwd=script.parent)
        return r.stdout.strip().split(";")[0]

    def job(self, jobid: str) -> dict[str, str]:
        """scontrol's record of a job, as NAME=value pairs (empty once Slurm has forgotten it)."""
        r = self.run(["scontrol", "-o", "show", "job", jobid], check=False)
        return dict(re.findall(r"(\w+)=(\S*)", r.stdout))

    def wait_state(self, jobid: str, states: Sequence[str], timeout: float) -> dict[str, str]:
        deadline = time.monotonic() + timeout
        rec: dict[str, str] = {}
        while time.monotonic() < deadline:
            rec = self.job(jobid)
            if rec.get("JobState") in states:
                return rec
            time.sleep(0.2)
        raise AssertionError(f"job {jobid} not {'/'.join(states)} after {timeout:.0f} s: {rec}\n{self.logs()}")


@contextlib.contextmanager
def cluster(top: Path, extra_conf: Sequence[str]) -> Iterator[Slurm]:
    s = Slurm(top, extra_conf)
    try:
        s.start()
        yield s
    finally:
        s.stop()
