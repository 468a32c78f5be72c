"""Run benchmark programs (alone or staggered together), parse their result lines, and clean up."""

from __future__ import annotations

import contextlib
import os
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from scaf.lib import alloclog, daemon, paths, procs
from scaf.lib.bench.errors import BenchError

if TYPE_CHECKING:
    from scaf.lib.bench.userprog import UserProgram

# Variables that would change what a configuration means; the bench sets them itself.
STRIPPED_ENV = (
    "OMP_NUM_THREADS", "OMP_DYNAMIC", "OMP_THREAD_LIMIT", "OMP_PROC_BIND", "OMP_PLACES",
    "GOMP_CPU_AFFINITY", "SCAF_SOCKET", "SCAF_DISABLE", "LD_PRELOAD",
)

# Every process the bench starts carries this variable, so that leftovers can be found.
TAG_VAR = "SCAF_BENCH_TAG"


def base_env(tag: str) -> dict[str, str]:
    """The environment for benchmark programs: ours, minus variables a configuration controls."""
    env = {k: v for k, v in os.environ.items() if k not in STRIPPED_ENV}
    env[TAG_VAR] = tag
    return env


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
    # Called just before the program starts (scaf's configurations: what `scaf run` would add, asked of the
    # daemon then): returns its environment, its settings and more fields for its record.
    prepare: Callable[[], tuple[dict[str, str], dict[str, str], dict]] | None = None


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
    started: list[subprocess.Popen[bytes] | None] = [None] * len(programs)
    ends: list[float | None] = [None] * len(programs)
    waiters: list[threading.Thread] = []

    cpu_s: list[float | None] = [None] * len(programs)

    def waiter(i: int) -> None:
        p = started[i]
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
    extra: list[dict] = [{} for _ in programs]
    try:
        for i, prog in sorted(enumerate(programs), key=lambda x: offsets[x[0]]):
            delay = t0 + offsets[i] - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            if prog.prepare is not None:
                try:
                    prog.env, prog.settings, extra[i] = prog.prepare()
                except BenchError as e:
                    records[i] = {"error": str(e)}
                    continue
            starts[i] = time.monotonic()
            try:
                started[i] = procs.spawn(prog.argv, prog.env, prog.cpus, outs[i], errs[i], cwds[i])
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
        for i, p in enumerate(started):
            if p is not None and p.poll() is None:
                procs.kill_group(p)
                records[i] = {"error": f"timed out after {timeout:g} s and was killed"}
    finally:
        for p in started:
            if p is not None:
                procs.kill_group(p, grace=0.2)
    result = []
    for i, prog in enumerate(programs):
        outs[i].seek(0)
        errs[i].seek(0)
        stdout = outs[i].read().decode(errors="replace")
        stderr = errs[i].read()
        p = started[i]
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
            **extra[i],
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


def start_daemon(policy: str, cpu_set: list[int] | None, cpus: int | None, log: Path,
                 extra: list[str], tag: str, state_dir: str | None = None) -> daemon.PrivateDaemon:
    """A scafd of our own on a temporary socket for one run, started like the bench's programs
    (own process group, the bench's CPU set and tag), logging to LOG; stop it with finish().
    Its memory is STATE_DIR's, else a fresh empty one of its own (PrivateDaemon), unless EXTRA
    (--daemon-arg) chooses.

    Raises BenchError when scafd is not built, exits at start or does not answer."""
    binary = paths.scafd()
    if not binary.exists():
        raise BenchError(f"{binary} is not built (run `make`)")
    args = ["--policy", policy]
    if cpus:
        args += ["--cpus", str(cpus)]
    args += extra
    d = daemon.PrivateDaemon(
        args, binary=binary, log=log, env=base_env(tag), prefix="scaf-b-",
        state_dir=None if state_dir is None or daemon.memory_chosen(extra) else state_dir,
        spawn=lambda argv, env, out: procs.spawn(argv, env, cpu_set, stdout=out, stderr=out))
    try:
        d.start_or_discard()
    except daemon.DaemonError as e:
        raise BenchError(str(e)) from None
    return d


def memory_in_log(log: Path | str) -> dict[int, dict]:
    """Per client pid in a daemon --log, as the daemon logged it at the client's first line (its arrival):
    what it remembered of the program then (`memory`: runs, verdict, source; null when nothing) and the share
    its page offered (`start_team`; the layer applies it to a program that keeps its team). docs/memory.md.

    Raises BenchError naming the line when the log has a malformed one."""
    out: dict[int, dict] = {}
    try:
        records = alloclog.read(log, missing_ok=True)
    except alloclog.BadAllocLog as e:
        raise BenchError(str(e)) from None
    for rec in records:
        for c in rec["clients"]:
            if isinstance(c.get("pid"), int) and c["pid"] not in out:
                out[c["pid"]] = {"remembered": c.get("memory"), "start_team": c.get("start_team")}
    return out


def clients_in_log(log: Path | str) -> set[int]:
    """Pids that appeared as clients in a daemon --log (so they really ran under scaf).

    Raises BenchError naming the line when the log has a malformed one."""
    try:
        return alloclog.client_pids(alloclog.read(log, missing_ok=True))
    except alloclog.BadAllocLog as e:
        raise BenchError(str(e)) from None
