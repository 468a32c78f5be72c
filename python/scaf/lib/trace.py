"""Sample how much of each CPU each process tree uses, period by period (like pidpcpu), and write the rows."""

from __future__ import annotations

import os
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Self, TextIO

FORMAT_VERSION = 1
CLK_TCK = os.sysconf("SC_CLK_TCK")


@dataclass
class Tree:
    """One traced process tree: its root and every member seen so far."""

    root: int
    name: str
    # pid -> starttime (ticks since boot) of members; starttime guards against pid reuse.
    members: dict[int, int] = field(default_factory=dict)


def _read(path: str) -> str | None:
    try:
        with open(path) as f:
            return f.read()
    except (FileNotFoundError, ProcessLookupError, PermissionError, OSError):
        return None


def _stat_fields(text: str) -> list[str]:
    """Fields after `comm` (which may hold spaces and parentheses): [state, ppid, ...]."""
    return text[text.rindex(")") + 2 :].split()


def proc_stat(pid: int) -> tuple[int, int, str] | None:
    """(ppid, starttime, comm) of a live process, or None when it is gone or a zombie."""
    text = _read(f"/proc/{pid}/stat")
    if not text:
        return None
    try:
        rest = _stat_fields(text)
        comm = text[text.index("(") + 1 : text.rindex(")")]
        if rest[0] in ("Z", "X"):
            return None
        return int(rest[1]), int(rest[19]), comm
    except (ValueError, IndexError):
        return None


def all_parents() -> dict[int, tuple[int, int, str]]:
    """pid -> (ppid, starttime, comm) of every live process (one /proc scan)."""
    out: dict[int, tuple[int, int, str]] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        st = proc_stat(int(entry.name))
        if st:
            out[int(entry.name)] = st
    return out


# Commands that start the program rather than being it: a tree rooted in one is named after the
# first program below it (`scaf trace -- scaf run -- ./cg` is cg's tree, not scaf's or python's).
WRAPPERS = frozenset({
    "scaf", "sh", "bash", "dash", "zsh", "env", "nice", "ionice", "chrt", "taskset", "numactl", "timeout",
    "time", "stdbuf", "setsid", "nohup", "sudo", "su", "runuser", "xargs", "srun", "perf", "strace", "ltrace",
})


def is_wrapper(name: str) -> bool:
    return name in WRAPPERS or name.startswith("python")


def thread_times(pid: int) -> Iterator[tuple[int, int, int]]:
    """(tid, cpu time in ns, last CPU) for each thread of a process.

    schedstat gives nanoseconds; utime+stime (clock ticks) is the fallback where the
    kernel lacks schedstats.
    """
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return
    for t in tids:
        text = _read(f"/proc/{pid}/task/{t}/stat")
        if not text:
            continue
        try:
            rest = _stat_fields(text)
            cpu = int(rest[36])
            ns: int | None = None
            sched = _read(f"/proc/{pid}/task/{t}/schedstat")
            if sched:
                ns = int(sched.split()[0])
            if ns is None:
                ns = (int(rest[11]) + int(rest[12])) * 1_000_000_000 // CLK_TCK
        except (ValueError, IndexError):
            continue
        yield int(t), ns, cpu


class Sampler:
    """Samples per-tree, per-CPU CPU use; call sample() once per period."""

    def __init__(self, roots: list[int], names: dict[int, str] | None = None):
        self.trees: list[Tree] = []
        names = names or {}
        for pid in roots:
            st = proc_stat(pid)
            if st is None:
                raise ProcessLookupError(pid)
            tree = Tree(pid, names.get(pid) or st[2])
            tree.members[pid] = st[1]
            self.trees.append(tree)
        self.roots = {t.root for t in self.trees}
        # (pid, tid) -> cumulative ns at the previous sample.
        self.prev: dict[tuple[int, int], int] = {}
        self.prev_time: float | None = None

    def add_root(self, pid: int, name: str | None = None) -> None:
        """Starts tracing another tree (a program started after the trace began)."""
        st = proc_stat(pid)
        if st is None:
            raise ProcessLookupError(pid)
        if pid in self.roots:
            return
        # A new root leaves the tree it was a descendant of.
        for t in self.trees:
            t.members.pop(pid, None)
        tree = Tree(pid, name or st[2])
        tree.members[pid] = st[1]
        self.trees.append(tree)
        self.roots.add(pid)

    def _discover(self) -> None:
        """Adds new descendants to each tree; drops members that exited (or whose pid was reused)."""
        procs = all_parents()
        children: dict[int, list[int]] = {}
        for pid, (ppid, _, _) in procs.items():
            children.setdefault(ppid, []).append(pid)
        for tree in self.trees:
            alive = {p: s for p, s in tree.members.items() if procs.get(p, (0, -1))[1] == s}
            todo = list(alive)
            while todo:
                p = todo.pop()
                for c in children.get(p, ()):
                    # Another traced root owns its own subtree.
                    if c in alive or c in self.roots:
                        continue
                    alive[c] = procs[c][1]
                    todo.append(c)
            tree.members = alive
            if is_wrapper(tree.name):
                # The earliest-started member that is not a wrapper itself is the program.
                named = sorted((procs[p][1], p) for p in alive if p != tree.root and p in procs
                               and not is_wrapper(procs[p][2]))
                if named:
                    tree.name = procs[named[0][1]][2]

    def alive(self) -> bool:
        return any(t.members for t in self.trees)

    def sample(self) -> tuple[float, list[tuple[Tree, dict[int, float]]]]:
        """(now, [(tree, {cpu: fraction of the CPU used since the previous sample})])."""
        self._discover()
        now = time.monotonic()
        first = self.prev_time is None
        elapsed = 0.0 if first else now - self.prev_time  # type: ignore[operator]
        current: dict[tuple[int, int], int] = {}
        result: list[tuple[Tree, dict[int, float]]] = []
        for tree in self.trees:
            per_cpu: dict[int, float] = {}
            for pid in tree.members:
                for tid, ns, cpu in thread_times(pid):
                    key = (pid, tid)
                    current[key] = ns
                    # A thread first seen after the first sample was born since the previous
                    # one (threads and forked children start at zero), so all its time counts.
                    base = self.prev.get(key, ns if first else 0)
                    delta = ns - base
                    if delta > 0 and elapsed > 0:
                        per_cpu[cpu] = per_cpu.get(cpu, 0.0) + delta / (elapsed * 1e9)
            result.append((tree, per_cpu))
        self.prev = current
        self.prev_time = now
        return now, result


class Writer:
    """Streams trace rows as text (pidpcpu style) or CSV."""

    def __init__(self, out: TextIO, csv: bool, period: float, start_unix: float, clock: str):
        self.out = out
        self.csv = csv
        if csv:
            out.write("time,pid,name,cpu,usage\n")
        else:
            out.write(
                f"# scaf-trace {FORMAT_VERSION} period={period:g} cpus={os.cpu_count()} "
                f"start={start_unix:.3f} clock={clock}\n"
            )
        self.named: dict[int, str] = {}

    def rows(self, t: float, result: list[tuple[Tree, dict[int, float]]]) -> None:
        for tree, per_cpu in result:
            if not self.csv and self.named.get(tree.root) != tree.name:
                # Again when a wrapper's tree is renamed after its program: the last line wins.
                self.out.write(f"# tree {tree.root} {tree.name}\n")
                self.named[tree.root] = tree.name
            for cpu in sorted(per_cpu):
                use = per_cpu[cpu]
                if round(use, 3) <= 0:
                    continue
                if self.csv:
                    name = tree.name.replace(",", "_")
                    self.out.write(f"{t:.3f},{tree.root},{name},{cpu},{use:.3f}\n")
                else:
                    self.out.write(f"{t:.3f} {tree.root}@{cpu} {use:.3f}\n")
        self.out.flush()


class Recorder:
    """Traces trees in a background thread into a file in the `scaf trace` text format.

    For programs that start other programs (the demo): add each one's pid as it starts;
    stop() takes a last sample and closes the file, which scaf.lib.plot.plot_trace then draws.
    """

    def __init__(self, path: str | os.PathLike[str], period: float = 0.1):
        self.period = period
        self._out = open(path, "w")  # noqa: SIM115 - closed by stop(), which the thread outlives
        self._sampler = Sampler([])
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="scaf-trace", daemon=True)
        self._writer: Writer | None = None

    def add(self, pid: int, name: str | None = None) -> None:
        """Traces pid's tree from now on; a pid that already exited is ignored."""
        with self._lock:
            try:
                self._sampler.add_root(pid, name)
            except ProcessLookupError:
                pass

    def start(self) -> Self:
        self._start = time.monotonic()
        self._writer = Writer(self._out, False, self.period, time.time(), _clock_kind())
        self._sample()
        self._thread.start()
        return self

    def _sample(self) -> None:
        with self._lock:
            now, result = self._sampler.sample()
            assert self._writer is not None
            if self._sampler.prev_time is not None and result:
                self._writer.rows(now - self._start, result)

    def _loop(self) -> None:
        while not self._stop.wait(self.period):
            self._sample()

    def stop(self) -> None:
        if self._thread.is_alive():
            self._stop.set()
            self._thread.join()
            self._sample()
        self._out.close()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _clock_kind() -> str:
    return "schedstat" if os.path.exists("/proc/self/schedstat") else "ticks"


def trace(
    roots: list[int],
    out: TextIO,
    period: float,
    csv: bool,
    child: subprocess.Popen[bytes] | None = None,
    names: dict[int, str] | None = None,
) -> None:
    """Samples until every tree is gone (or `child` ends), writing rows to `out`."""
    sampler = Sampler(roots, names)
    start = time.monotonic()
    writer = Writer(out, csv, period, time.time(), _clock_kind())
    sampler.sample()
    deadline = start
    try:
        while True:
            deadline += period
            delay = deadline - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            else:
                deadline = time.monotonic()  # fell behind: do not burst to catch up
            done = child is not None and child.poll() is not None
            now, result = sampler.sample()
            writer.rows(now - start, result)
            if done or not sampler.alive():
                return
    except KeyboardInterrupt:
        return

