"""The runs of `scaf demo`: workloads started together, serially, unmodified or under a private daemon, and what they printed."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from scaf.lib import alloclog, paths, procs
from scaf.lib.daemon import DaemonExited, DaemonTimeout, PrivateDaemon

# Every process the demo starts carries this variable (value: the demo's
# private directory), so that anyone can check that none outlives it.
MARKER = "SCAF_DEMO_DIR"


class DemoFailed(Exception):
    """A run failed or did not verify; the message carries its output."""


@dataclass
class Result:
    label: str
    name: str
    code: int
    wall_s: float
    fields: dict[str, str]
    output: str
    pid: int

    @property
    def time_s(self) -> float:
        return float(self.fields["time_s"])

    @property
    def threads(self) -> str:
        return self.fields.get("threads", "?")


@dataclass
class Demo:
    keep: bool
    dir: str = field(default_factory=lambda: tempfile.mkdtemp(prefix="scaf-demo-", dir="/tmp"))
    procs: list[subprocess.Popen[bytes]] = field(default_factory=list)
    daemon: PrivateDaemon | None = None

    @property
    def socket(self) -> str:
        return os.path.join(self.dir, "scafd.sock")

    @property
    def alloc_log(self) -> str:
        return os.path.join(self.dir, "alloc.jsonl")

    @property
    def daemon_stderr(self) -> str:
        return os.path.join(self.dir, "scafd.stderr")

    def env(self, scaf: bool, serial: bool) -> dict[str, str]:
        env = dict(os.environ)
        layer = str(paths.layer())
        preload = [p for p in env.get("LD_PRELOAD", "").replace(":", " ").split() if p != layer]
        for k in ("LD_PRELOAD", "SCAF_SOCKET", "SCAF_DISABLE", "OMP_NUM_THREADS"):
            env.pop(k, None)
        if scaf:
            preload.append(layer)
            env["SCAF_SOCKET"] = self.socket
        if preload:
            env["LD_PRELOAD"] = ":".join(preload)
        if serial:
            env["OMP_NUM_THREADS"] = "1"
        env[MARKER] = self.dir
        return env

    def start_daemon(self) -> None:
        self.daemon = PrivateDaemon(["--policy", "equipartition", "--log", self.alloc_log],
                                    socket=self.socket, env=self.env(scaf=False, serial=False),
                                    stderr_path=self.daemon_stderr,
                                    # A memory of its own in the demo's folder, gone with it: never the user's.
                                    state_dir=os.path.join(self.dir, "state"))
        try:
            self.daemon.start()
        except DaemonExited as e:
            raise DemoFailed(f"the private daemon exited at start ({e.returncode}):\n" + e.stderr) from None
        except DaemonTimeout as e:
            raise DemoFailed("the private daemon did not answer within 10 s:\n" + e.stderr) from None

    def trace_path(self, label: str) -> str:
        return os.path.join(self.dir, f"{label}.trace")

    def run_together(self, label: str, names: list[str], size: str, scaf: bool, serial: bool,
                     trace: bool = False) -> list[Result]:
        """Start NAMES at the same moment, wait for all, return their results (in order).

        With trace, per-CPU usage of each program's tree goes to trace_path(label).
        """
        from scaf.lib.trace import Recorder

        recorder = Recorder(self.trace_path(label)).start() if trace else None
        started: list[tuple[str, subprocess.Popen[bytes], str, float]] = []
        for i, name in enumerate(names):
            out = os.path.join(self.dir, f"{label}-{i}-{name}.out")
            with open(out, "wb") as f:
                # Own session: Ctrl-C reaches only us, and we can kill the whole group.
                p = procs.spawn([str(paths.workload(name)), "--size", size], self.env(scaf, serial), None,
                                stdout=f, stderr=f)
            self.procs.append(p)
            if recorder:
                recorder.add(p.pid, name)
            started.append((name, p, out, time.monotonic()))
        results = []
        try:
            codes = [p.wait() for _, p, _, _ in started]
        finally:
            if recorder:
                recorder.stop()
        for (name, p, out, t0), code in zip(started, codes, strict=True):
            wall = time.monotonic() - t0
            text = Path(out).read_text(errors="replace")
            fields = last_line_fields(text)
            results.append(Result(label, name, code, wall, fields, text, p.pid))
        for r in results:
            if r.code != 0 or r.fields.get("verified") != "yes" or "time_s" not in r.fields:
                raise DemoFailed(f"{r.name} ({r.label}) exited {r.code} without verified=yes; its output:\n"
                                 + r.output.rstrip())
        return results

    def close(self) -> None:
        """Leave nothing running: kill our workloads' groups, stop the daemon, remove the directory."""
        for p in self.procs:
            procs.kill_group(p, grace=0.0)
        if self.daemon is not None:
            self.daemon.stop()
        if not self.keep:
            shutil.rmtree(self.dir, ignore_errors=True)


def last_line_fields(text: str) -> dict[str, str]:
    lines = [ln for ln in text.strip().splitlines() if ln.strip()]
    if not lines:
        return {}
    return dict(kv.split("=", 1) for kv in lines[-1].split() if "=" in kv)


def allocations(log: str, pids: dict[int, str]) -> dict[int, list[int]]:
    """Threads each of PIDS was allocated over the daemon's log (empty list: never a client).

    Raises DemoFailed when a line of the log is malformed."""
    seen: dict[int, list[int]] = {pid: [] for pid in pids}
    try:
        records = alloclog.read(log, missing_ok=True)
    except alloclog.BadAllocLog as e:
        raise DemoFailed(str(e)) from None
    for entry in records:
        for c in entry["clients"]:
            if c.get("pid") in seen and isinstance(c.get("threads"), int):
                seen[c["pid"]].append(c["threads"])
    return seen
