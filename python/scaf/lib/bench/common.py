"""What every bench command shares: CPU set, workload list, output folder, the run loop."""

from __future__ import annotations

import datetime as dt
import os
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from scaf.lib import paths, procs
from scaf.lib.bench import machine, runner, store
from scaf.lib.bench.errors import BenchError

if TYPE_CHECKING:
    from scaf.lib.bench.userprog import UserProgram

SIZES = ("S", "W", "A")


def bench_cpus(cpus: int | None, taskset: str | None) -> list[int]:
    """The CPUs the bench may use: --taskset LIST, else our affinity; the first --cpus N of them."""
    allowed = sorted(os.sched_getaffinity(0))
    chosen = allowed
    if taskset:
        try:
            chosen = machine.parse_cpulist(taskset)
        except ValueError as e:
            raise BenchError(f"--taskset {taskset!r}: {e} (expected a list like 0-3,8)") from e
        outside = [c for c in chosen if c not in allowed]
        if outside:
            raise BenchError(f"--taskset: CPUs {machine.format_cpulist(outside)} are not in this "
                             f"process's affinity ({machine.format_cpulist(allowed)})")
    if cpus is not None:
        if cpus < 1 or cpus > len(chosen):
            raise BenchError(f"--cpus must be between 1 and {len(chosen)} here, not {cpus}")
        chosen = chosen[:cpus]
    return chosen


def _built(d: Path) -> list[str]:
    if not d.is_dir():
        return []
    return sorted(p.name for p in d.iterdir() if p.is_file() and os.access(p, os.X_OK))


def available_workloads() -> list[str]:
    """The gcc builds (the default set); name@build for the others is also accepted (available_builds)."""
    return _built(paths.workloads_dir())


def available_builds() -> list[str]:
    return [f"{w}@{b}" for b in paths.WORKLOAD_BUILDS for w in _built(paths.workloads_dir(b))]


def resolve_workloads(text: str | None) -> list[str]:
    have = available_workloads()
    if not text:
        if not have:
            raise BenchError(f"no workloads in {paths.workloads_dir()} (run `make`)")
        return have
    names = list(dict.fromkeys(w.strip() for w in text.split(",") if w.strip()))
    missing = [w for w in names if w not in have and w not in available_builds()]
    if missing or not names:
        raise BenchError(f"unknown or unbuilt workload(s): {', '.join(missing) or '(none)'}; "
                         f"built: {', '.join(have) or 'none (run `make`)'}")
    return names


def default_out(prefix: str = "bench") -> Path:
    return Path("results") / f"{prefix}-{dt.datetime.now().strftime('%Y%m%d-%H%M%S')}"


def results_home() -> Path:
    """Where `scaf doctor` keeps its runs when not told: $XDG_STATE_HOME/scaf (~/.local/state/scaf),
    not the current folder, which may be anywhere (or not writable)."""
    state = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(state) / "scaf"


def stamped(prefix: str) -> str:
    return f"{prefix}-{dt.datetime.now().strftime('%Y%m%d-%H%M%S')}"


@dataclass
class Unit:
    """One measurement to make: its results key, a label, and the function that returns its run."""

    key: tuple
    label: str
    run: Callable[[], dict]
    describe: Callable[[dict], str]


def new_tag() -> str:
    """The value of SCAF_BENCH_TAG in every process this bench starts (inherited if already set,
    so that a caller can find any leftover)."""
    return os.environ.get(runner.TAG_VAR) or uuid.uuid4().hex[:12]


def execute(results: store.Results, units: list[Unit], quiet: bool = False) -> int:
    """Runs the units not in results yet, saving after each; returns how many ran.

    KeyboardInterrupt (Ctrl-C, SIGTERM, SIGHUP) propagates after the current run's
    processes are killed; results.json then holds every finished run and nothing else.
    """
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    todo = [u for u in units if not results.done(u.key)]
    skipped = len(units) - len(todo)
    console = Console(stderr=True)
    if skipped:
        console.print(f"resuming {results.dir}: {skipped} of {len(units)} measurements already done")
    if not todo:
        return 0
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
               TimeElapsedColumn(), TextColumn("left"), TimeRemainingColumn())
    ran = 0
    with procs.interruptible(), Progress(*columns, console=console, disable=quiet) as progress:
        task = progress.add_task("bench", total=len(todo))
        for unit in todo:
            progress.update(task, description=unit.label)
            started = store.now_iso()
            t0 = time.monotonic()
            run = unit.run()
            run["started"] = started
            run["duration_s"] = round(time.monotonic() - t0, 3)
            results.add(run)
            ran += 1
            progress.console.print(f"{unit.label}: {unit.describe(run)}")
            progress.advance(task)
    return ran


def describe_programs(run: dict) -> str:
    parts = []
    for p in run.get("programs", []):
        if p.get("error"):
            parts.append(f"{p['workload']} FAILED ({p['error']})")
        else:
            threads = f"/{p['threads']}t" if p.get("threads") else ""
            parts.append(f"{p['workload']} {p['time_s']:.3f}s{threads}")
    if run.get("error"):
        parts.append(f"FAILED: {run['error']}")
    return ", ".join(parts)


def workload_argv(name: str, size: str, until: str | None = None) -> list[str]:
    """A workload's command line; with `until`, one that runs until that file exists (or until killed,
    for a path that never will), for the workloads that take --until."""
    argv = [str(paths.workload(name)), "--size", size]
    if until is not None and takes_until(name):
        argv += ["--until", until]
    return argv


_TAKES_UNTIL: dict[str, bool] = {}


def takes_until(name: str) -> bool:
    """Whether workload `name` accepts --until, as its --help says."""
    if name not in _TAKES_UNTIL:
        import subprocess

        r = subprocess.run([str(paths.workload(name)), "--help"], capture_output=True, text=True, timeout=30,
                           check=False)
        _TAKES_UNTIL[name] = r.returncode == 0 and "--until PATH" in r.stdout
    return _TAKES_UNTIL[name]


def bench_program(name: str, size: str, env: dict[str, str], cpus: list[int] | None,
                  settings: dict[str, str], programs: dict[str, UserProgram] | None) -> runner.Program:
    """One of our workloads at `size`, or the user's program of that name (--program)."""
    cmd = (programs or {}).get(name)
    argv = list(cmd.argv) if cmd is not None else workload_argv(name, size)
    return runner.Program(name, argv, env, cpus, settings, cmd)


def solo_unit(name: str, threads: int, repeat: int, size: str, cpus: list[int], tag: str,
              timeout: float, programs: dict[str, UserProgram] | None = None) -> Unit:
    """One program alone with `threads` threads in every runtime (configs.count_env) on the bench's CPUs."""

    def run() -> dict:
        from scaf.lib.bench import configs

        user = (programs or {}).get(name)
        counts = configs.count_env(threads, user.count_var if user else None)
        env = runner.base_env(tag)
        env.update(counts)
        prog = bench_program(name, size, env, cpus, counts, programs)
        progs = runner.run_together([prog], [0.0], timeout)
        return {"kind": "solo", "workload": name, "threads": threads, "repeat": repeat,
                "size": size, "programs": progs, "error": None}

    return Unit(("solo", name, threads, repeat), f"solo {name} x{threads} #{repeat + 1}", run,
                describe_programs)


def check_built(need_layer: bool) -> None:
    if need_layer:
        for path in (paths.layer(), paths.scafd()):
            if not path.exists():
                raise BenchError(f"{path} is not built (run `make`)")
