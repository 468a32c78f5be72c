"""Run benchmark programs (alone or staggered together), parse their result lines, and clean up."""

from __future__ import annotations

import atexit
import contextlib
import os
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from scaf.lib import daemon, paths

if TYPE_CHECKING:
    from scaf.lib.bench.userprog import UserProgram

# Variables that would change what a configuration means; the bench sets them itself.
STRIPPED_ENV = (
    "OMP_NUM_THREADS", "OMP_DYNAMIC", "OMP_THREAD_LIMIT", "OMP_PROC_BIND", "OMP_PLACES",
    "GOMP_CPU_AFFINITY", "SCAF_SOCKET", "SCAF_DISABLE", "LD_PRELOAD",
)

# Every process the bench starts carries this variable, so that leftovers can be found.
TAG_VAR = "SCAF_BENCH_TAG"

_live: dict[int, subprocess.Popen[bytes]] = {}
_live_lock = threading.Lock()
_spawn_lock = threading.Lock()


class BenchError(Exception):
    """A setup problem the user must fix (missing binary, bad option); the message says what."""


def base_env(tag: str) -> dict[str, str]:
    """The environment for benchmark programs: ours, minus variables a configuration controls."""
    env = {k: v for k, v in os.environ.items() if k not in STRIPPED_ENV}
    env[TAG_VAR] = tag
    return env


def spawn(argv: list[str], env: dict[str, str], cpus: list[int] | None,
          stdout: int | object = subprocess.DEVNULL, stderr: int | object = subprocess.DEVNULL,
          cwd: str | None = None) -> subprocess.Popen[bytes]:
    """Start argv in its own session (its own process group), pinned to cpus if given.

    Affinity is inherited from the thread that forks: the spawning thread pins
    itself around the fork instead of using preexec_fn, which is unsafe while
    waiter threads run.
    """
    with _spawn_lock, _deferred_interrupts():
        old = os.sched_getaffinity(0) if cpus else None
        try:
            if cpus:
                os.sched_setaffinity(0, cpus)
            proc = subprocess.Popen(argv, env=env, stdout=stdout, stderr=stderr,  # type: ignore[arg-type]
                                    stdin=subprocess.DEVNULL, start_new_session=True, cwd=cwd)
        finally:
            if old is not None:
                os.sched_setaffinity(0, old)
        with _live_lock:
            _live[proc.pid] = proc
    return proc


def forget(proc: subprocess.Popen[bytes]) -> None:
    with _live_lock:
        _live.pop(proc.pid, None)


def kill_group(proc: subprocess.Popen[bytes], grace: float = 1.0) -> None:
    """SIGTERM the process group, SIGKILL it after `grace` seconds, and reap the leader."""
    if proc.poll() is None:
        for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 5.0)):
            try:
                os.killpg(proc.pid, sig)
            except (ProcessLookupError, PermissionError):
                break
            try:
                proc.wait(timeout=wait)
                break
            except subprocess.TimeoutExpired:
                continue
    # Descendants that outlive the leader stay in its group: finish them too.
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    forget(proc)


def kill_all() -> None:
    """Ends every process group the bench started that is still known (on any exit path)."""
    with _live_lock:
        procs = list(_live.values())
    for p in procs:
        kill_group(p, grace=0.5)


atexit.register(kill_all)


_INTERRUPTS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
_critical = 0
_pending = False


@contextmanager
def _deferred_interrupts() -> Iterator[None]:
    """Holds Ctrl-C/SIGTERM/SIGHUP back while a child is forked and registered.

    An interrupt inside Popen (between fork and the exec check) would leave a
    running child that nobody knows about; under interruptible() the handler
    only notes it here, and it is raised once the child is in the live table.
    """
    global _critical, _pending
    _critical += 1
    try:
        yield
    finally:
        _critical -= 1
        if _critical == 0 and _pending:
            _pending = False
            raise KeyboardInterrupt


@contextmanager
def interruptible() -> Iterator[None]:
    """Turns SIGINT, SIGTERM and SIGHUP into KeyboardInterrupt (deferred out of spawns), and
    kills every process the bench started on the way out, whatever the way out is."""
    global _pending

    def handler(signum: int, frame: object) -> None:
        global _pending
        if _critical:
            _pending = True
            return
        raise KeyboardInterrupt

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    _pending = False
    old = {s: signal.signal(s, handler) for s in _INTERRUPTS}
    try:
        yield
    finally:
        kill_all()
        for s, h in old.items():
            signal.signal(s, h)


def parse_result(stdout: str) -> tuple[dict[str, str], str | None]:
    """The last line's key=value fields and the checksum, or ({}, None) when absent."""
    lines = [ln.strip() for ln in stdout.splitlines() if ln.strip()]
    checksum = None
    for ln in lines:
        if ln.startswith("checksum="):
            checksum = ln.split("=", 1)[1].strip()
    if not lines:
        return {}, checksum
    fields = dict(kv.split("=", 1) for kv in lines[-1].split() if "=" in kv)
    if not {"name", "threads", "time_s", "verified"} <= fields.keys():
        return {}, checksum
    return fields, checksum


@dataclass
class Program:
    """One program of a run: a workload binary with its environment and CPU set."""

    workload: str
    argv: list[str]
    env: dict[str, str]
    cpus: list[int] | None = None
    settings: dict[str, str] = field(default_factory=dict)  # what the configuration changed
    command: UserProgram | None = None  # the user's program (--program), judged by exit status and output


def _judge_workload(rec: dict, workload: str, stdout: str) -> None:
    """One of our workloads: its result line gives time, threads and verification."""
    fields, checksum = parse_result(stdout)
    rec["checksum"] = checksum
    if fields:
        try:
            rec["time_s"] = float(fields["time_s"])
            rec["threads"] = int(fields["threads"])
        except ValueError:
            fields = {}
        rec["verified"] = fields.get("verified")
        # name@build (docs/bench.md) is the same source: its result line names the base name.
        if fields and fields.get("name") != workload.partition("@")[0] and rec["error"] is None:
            rec["error"] = f"result line names {fields.get('name')!r}, not {workload!r}"
    if rec["error"] is None:
        if not fields:
            rec["error"] = f"no result line (exit status {rec['returncode']})"
        elif rec["verified"] != "yes":
            rec["error"] = f"verification failed (verified={rec['verified']})"
        elif rec["returncode"] != 0:
            rec["error"] = f"exit status {rec['returncode']}"


def _judge_command(rec: dict, prog: UserProgram, stdout: str, cwd: str) -> None:
    """A user's program has no result line: its time is the wall time, its result the exit status
    and the digest of its output (compared across runs by the report)."""
    from scaf.lib.bench import userprog

    rec["time_s"] = rec["wall_s"]
    rec["command"] = prog.text
    threads = rec["settings"].get("OMP_NUM_THREADS")
    rec["threads"] = int(threads) if threads and threads.isdigit() else None
    if rec["error"] is not None:
        return
    if rec["returncode"] != 0:
        rec["error"] = f"exit status {rec['returncode']}"
        return
    rec["checksum"], rec["error"] = userprog.judge(prog, stdout, cwd)
    rec["verified"] = "yes" if rec["error"] is None else "no"


def _tail(data: bytes, n: int = 600) -> str:
    return data[-n:].decode(errors="replace")


def run_together(programs: list[Program], offsets: list[float], timeout: float) -> list[dict]:
    """Starts program i at offsets[i] seconds, waits for all, returns one record per program.

    A record holds what the bench needs later: time_s (the program's own), wall_s, threads,
    verified, checksum, returncode, error (None when the program ran and verified), start_s
    and end_s relative to the first start. Programs still running at `timeout` are killed.
    """
    assert len(programs) == len(offsets)
    with contextlib.ExitStack() as files:
        outs = [files.enter_context(tempfile.TemporaryFile()) for _ in programs]
        errs = [files.enter_context(tempfile.TemporaryFile()) for _ in programs]
        # Each program in a folder of its own: two copies of a program that writes a file in
        # its working directory must not clobber each other's.
        cwds = [files.enter_context(tempfile.TemporaryDirectory(prefix="scaf-bench-run-"))
                for _ in programs]
        return _run_with_files(programs, offsets, timeout, outs, errs, cwds)


def _run_with_files(programs: list[Program], offsets: list[float], timeout: float,
                    outs: list, errs: list, cwds: list[str]) -> list[dict]:
    records: list[dict] = [{} for _ in programs]
    procs: list[subprocess.Popen[bytes] | None] = [None] * len(programs)
    ends: list[float | None] = [None] * len(programs)
    waiters: list[threading.Thread] = []

    cpu_s: list[float | None] = [None] * len(programs)

    def waiter(i: int) -> None:
        p = procs[i]
        assert p is not None
        try:
            # wait4 rather than p.wait(): the same reaping, plus the CPU time of the program's
            # threads (and of any children it waited for).
            _, status, ru = os.wait4(p.pid, 0)
            p.returncode = os.waitstatus_to_exitcode(status)
            cpu_s[i] = round(ru.ru_utime + ru.ru_stime, 3)
        except ChildProcessError:
            p.wait()  # reaped elsewhere (a kill after the timeout): no CPU time for it
        ends[i] = time.monotonic()

    t0 = time.monotonic()
    starts: list[float] = [0.0] * len(programs)
    try:
        for i, prog in sorted(enumerate(programs), key=lambda x: offsets[x[0]]):
            delay = t0 + offsets[i] - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            starts[i] = time.monotonic()
            try:
                procs[i] = spawn(prog.argv, prog.env, prog.cpus, outs[i], errs[i], cwds[i])
            except OSError as e:
                records[i] = {"error": f"cannot start {prog.argv[0]}: {e.strerror or e}"}
                continue
            th = threading.Thread(target=waiter, args=(i,), daemon=True)
            th.start()
            waiters.append(th)
        deadline = t0 + max(offsets) + timeout
        for th in waiters:
            # Short joins keep the main thread responsive to Ctrl-C.
            while th.is_alive() and time.monotonic() < deadline:
                th.join(0.2)
        for i, p in enumerate(procs):
            if p is not None and p.poll() is None:
                kill_group(p)
                records[i] = {"error": f"timed out after {timeout:g} s and was killed"}
    finally:
        for p in procs:
            if p is not None:
                kill_group(p, grace=0.2)
    result = []
    for i, prog in enumerate(programs):
        outs[i].seek(0)
        errs[i].seek(0)
        stdout = outs[i].read().decode(errors="replace")
        stderr = errs[i].read()
        p = procs[i]
        end = ends[i] if ends[i] is not None else time.monotonic()
        rec: dict = {
            "workload": prog.workload,
            "slot": i,
            "pid": p.pid if p else None,
            "argv": prog.argv,
            "settings": prog.settings,
            "cpus": prog.cpus,
            "returncode": p.returncode if p else None,
            "start_s": round(starts[i] - t0, 4),
            "end_s": round(end - t0, 4),
            "wall_s": round(end - starts[i], 4),
            "cpu_s": cpu_s[i],
            "time_s": None,
            "threads": None,
            "verified": None,
            "checksum": None,
            "error": records[i].get("error"),
        }
        if prog.command is not None:
            _judge_command(rec, prog.command, stdout, cwds[i])
        else:
            _judge_workload(rec, prog.workload, stdout)
        if rec["error"] is not None:
            rec["stdout_tail"] = stdout[-600:]
            rec["stderr_tail"] = _tail(stderr)
        result.append(rec)
    return result


class PrivateDaemon:
    """A scafd of our own on a temporary socket for one run, started like the bench's programs
    (own process group, the bench's CPU set and tag); always stopped by stop()."""

    def __init__(self, policy: str, cpu_set: list[int] | None, cpus: int | None, log: Path,
                 extra: list[str], tag: str):
        binary = paths.scafd()
        if not binary.exists():
            raise BenchError(f"{binary} is not built (run `make`)")
        args = ["--policy", policy, "--log", str(log)]
        if cpus:
            args += ["--cpus", str(cpus)]
        args += extra
        self.log = log
        self.daemon = daemon.PrivateDaemon(
            args, binary=binary, env=base_env(tag), prefix="scaf-b-",
            spawn=lambda argv, env, out: spawn(argv, env, cpu_set, stdout=out, stderr=out))
        self.socket = self.daemon.socket
        self.argv = self.daemon.argv
        try:
            self.daemon.start()
        except daemon.DaemonExited as e:
            self._discard()
            raise BenchError(f"scafd exited with status {e.returncode}: {e.stderr.strip()}") from None
        except daemon.DaemonTimeout as e:
            self._discard()
            raise BenchError(f"scafd did not answer on {self.socket} within 10 s: {e.stderr.strip()}") from None
        except BaseException:
            # Interrupted while starting: nobody else knows this daemon yet.
            self._discard()
            raise

    def _discard(self) -> None:
        if self.daemon.proc is not None:
            kill_group(self.daemon.proc)
        self.daemon.cleanup()

    def stderr(self) -> str:
        return self.daemon.stderr()

    def alive(self) -> bool:
        return self.daemon.alive()

    def stop(self) -> dict:
        """Stops the daemon; returns its exit status and the tail of its messages."""
        was_alive = self.alive()
        if was_alive:
            self.daemon.stop(timeout=5)
        assert self.daemon.proc is not None
        kill_group(self.daemon.proc)
        info = {"argv": self.argv, "returncode": self.daemon.returncode(),
                "alive_at_end": was_alive, "stderr_tail": self.stderr()[-600:]}
        # The folder is ours alone (mkdtemp): socket, lock file, messages all go with it.
        self.daemon.cleanup()
        return info


def clients_in_log(log: Path) -> set[int]:
    """Pids that appeared as clients in a daemon --log (so they really ran under scaf)."""
    import json

    pids: set[int] = set()
    try:
        text = log.read_text()
    except OSError:
        return pids
    for line in text.splitlines():
        try:
            rec = json.loads(line)
        except json.JSONDecodeError:
            continue
        for c in rec.get("clients", []) if isinstance(rec, dict) else []:
            if isinstance(c, dict) and isinstance(c.get("pid"), int):
                pids.add(c["pid"])
    return pids
