"""Runs one corpus program plain and under `scaf run`, with a competing client, and compares.

A run ("plain" or "scaf") gets a fresh directory with freshly generated inputs, runs the
program's steps in order with that directory as cwd, and keeps each step's exit status, stdout
and stderr (in files beside the directory, so a chatty program never blocks on a pipe).

The scaf run has a competitor: one of our workloads (`ep --size S`) started over and over under
`scaf run` on the same daemon, with short pauses, so that the daemon sees a second client arrive
and leave a few times a second and the program's share changes while it runs. The plain run is
the program alone, as the user runs it today (SCAF_CORPUS_COMPETE_PLAIN=1 also runs the
competitor, unmodified, beside the plain run: a like-for-like timing, slower on small machines,
where unmodified programs time-slice against it).

While a scaf step runs, the daemon's status (the JSON `scaf status --json` prints, read through
the same request in-process so that polling costs no interpreter start every 0.15 s) is polled
and every client that descends from this step's `scaf run` process is recorded: regions, team
sizes, the verdict fields. The daemon's --log (one line per allocation change) adds every
allocation the program was given, also those between two polls.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Self

import psutil
from scaf.lib import alloclog, paths

POLL_S = 0.15
COMPETITOR = ("ep", "--size", "S")
COMPETITOR_GAP_S = 0.3
PACKAGES_TXT = Path(__file__).resolve().with_name("packages.txt")
REQUIREMENTS_TXT = Path(__file__).resolve().parents[2] / "requirements.txt"


@dataclass
class Program:
    """One row of the corpus table (tests/corpus/programs.py)."""

    name: str
    packages: tuple[str, ...]  # Debian packages (packages.txt)
    # Command lines run in order, cwd = the run directory. Paths relative to it.
    steps: tuple[tuple[str, ...], ...]
    inputs: Callable[[Path], None]
    # Files compared byte for byte between the runs (relative paths; glob patterns allowed,
    # the sorted match lists must then be equal too).
    outputs: tuple[str, ...] = ()
    # (regex, why) pairs: matches are replaced by "<masked>" in stdout before comparing.
    stdout_masks: tuple[tuple[str, str], ...] = ()
    # (significant digits, why): decimal numbers in the output files are compared rounded to this
    # many digits, for a program whose own floating-point sums differ between two plain runs.
    output_digits: tuple[int, str] | None = None
    # stderr is compared only where it is deterministic plain (progress bars and timings are not).
    compare_stderr: bool = False
    stderr_masks: tuple[tuple[str, str], ...] = ()
    env: dict[str, str] = field(default_factory=dict)
    pattern: str = ""  # the OpenMP pattern the program uses, where known
    why: str = ""  # why it is in the corpus
    does: str = ""  # what it does in the test, one line
    # Extra check of the plain run's result (e.g. numpy: which BLAS it really loaded).
    check: Callable[[StepResult], None] | None = None
    # pip packages from requirements.txt that `make` installs into build/venv, for programs run
    # by the venv's python (scikit-learn, pip's numpy) rather than from a Debian package.
    pip: tuple[str, ...] = ()
    # False for a program whose only parallelism is a thread pool outside any OpenMP region
    # (pip's numpy: OpenBLAS's pthread pool). The daemon shows such a client with regions 0 and
    # its pool's size as last_team (docs/layer.md, "A client without regions"). None: either (a BLAS library
    # built with OpenMP opens no region while its share is 1: it runs each call on the calling thread).
    regions: bool | None = True
    # True: the competitor is a second copy of the program (its last step, in a directory of its own, started
    # over and over) instead of `ep`: a pair of the same program, as two users' jobs meet on a node.
    # `client_name` is the name the daemon gives both (their command name), which tells the copy from the
    # program only while it runs (a client no poll saw is then left out).
    pair: bool = False
    client_name: str = ""

    def binary(self) -> str:
        return self.steps[0][0]


@dataclass
class StepResult:
    argv: tuple[str, ...]
    rc: int
    stdout: bytes
    stderr: bytes
    seconds: float


@dataclass
class RunResult:
    mode: str
    dir: Path
    steps: list[StepResult]
    seconds: float
    clients: dict[int, dict] = field(default_factory=dict)  # pid -> what the polls saw
    competitor_runs: int = 0


def known_packages() -> list[str]:
    """The corpus's Debian packages, from packages.txt (also read by tools/deps)."""
    out = []
    for line in PACKAGES_TXT.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            out.append(line)
    return out


def pinned_pip_packages() -> dict[str, str]:
    """requirements.txt's pins, name -> version (names lower-cased, as pip compares them)."""
    out = {}
    for line in REQUIREMENTS_TXT.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if "==" in line:
            name, version = line.split("==", 1)
            out[name.strip().lower()] = version.strip()
    return out


def venv_python() -> Path:
    return paths.build_dir() / "venv" / "bin" / "python"


def pip_versions(names: tuple[str, ...]) -> dict[str, str]:
    """The versions build/venv holds ("" for a package it lacks, or when there is no venv). Asked
    of the venv's python, which runs the programs, not of whichever python runs the tests."""
    if not names:
        return {}
    script = ("import importlib.metadata as m, sys\n"
              "for n in sys.argv[1:]:\n"
              "    try:\n        print(n, m.version(n))\n"
              "    except m.PackageNotFoundError:\n        print(n)\n")
    try:
        r = subprocess.run([str(venv_python()), "-c", script, *names], capture_output=True, text=True, check=False)
    except OSError:
        return dict.fromkeys(names, "")
    got = dict((ln.split() + [""])[:2] for ln in r.stdout.splitlines()) if r.returncode == 0 else {}
    return {n: got.get(n, "") for n in names}


def missing_packages(prog: Program) -> list[str]:
    """The Debian packages prog needs that dpkg does not have, and its pip packages build/venv lacks
    (as "pip:NAME")."""
    missing = []
    for p in prog.packages:
        r = subprocess.run(["dpkg-query", "-W", "-f=${Status}", p], capture_output=True, text=True, check=False)
        if "install ok installed" not in r.stdout:
            missing.append(p)
    missing += [f"pip:{n}" for n, v in pip_versions(prog.pip).items() if not v]
    return missing


def package_versions(prog: Program) -> dict[str, str]:
    """Debian package -> version; a pip package is keyed "NAME (pip)"."""
    out = {}
    for p in prog.packages:
        r = subprocess.run(["dpkg-query", "-W", "-f=${Version}", p], capture_output=True, text=True, check=False)
        out[p] = r.stdout.strip() if r.returncode == 0 else ""
    out.update({f"{n} (pip)": v for n, v in pip_versions(prog.pip).items()})
    return out


def plain_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """This process's environment without the layer, scaf settings or OMP_NUM_THREADS: each
    program picks its default team (one thread per CPU it may use). The same in both runs."""
    env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD" and not k.startswith("SCAF_")}
    env.pop("OMP_NUM_THREADS", None)
    env["LC_ALL"] = "C"
    env.update(extra or {})
    return env


_DECIMAL = re.compile(rb"-?\d+\.\d+(?:[eE][-+]?\d+)?")


def rounded(data: bytes, digits: tuple[int, str] | None) -> bytes:
    """Every decimal number in data rounded to digits[0] significant digits (None: data as is)."""
    if digits is None:
        return data
    n = digits[0]
    return _DECIMAL.sub(lambda m: f"{float(m.group()):.{n}g}".encode(), data)


def masked(data: bytes, masks: tuple[tuple[str, str], ...]) -> bytes:
    for pattern, _why in masks:
        data = re.sub(pattern.encode(), b"<masked>", data, flags=re.MULTILINE)
    return data


class Competitor:
    """Starts the competitor over and over, with a pause between runs, until stopped."""

    def __init__(self, socket: str | None, env: dict[str, str], enabled: bool = True,
                 argv: list[str] | None = None, cwd: Path | None = None):
        argv = argv or [str(paths.workload(COMPETITOR[0])), *COMPETITOR[1:]]
        self.argv = argv if socket is None else [str(paths.build_dir() / "bin" / "scaf"), "run", "--socket", socket,
                                                 "--", *argv]
        self.env = env
        self.cwd = cwd
        self.stop_event = threading.Event()
        self.proc: subprocess.Popen[bytes] | None = None
        self.runs = 0
        self.failures: list[int] = []
        self.lock = threading.Lock()
        self.enabled = enabled
        self.thread = threading.Thread(target=self._loop, daemon=True)

    def _loop(self) -> None:
        while not self.stop_event.is_set():
            with self.lock:
                if self.stop_event.is_set():
                    return
                self.proc = subprocess.Popen(self.argv, env=self.env, cwd=self.cwd, stdout=subprocess.DEVNULL,
                                             stderr=subprocess.DEVNULL)
            rc = self.proc.wait()
            if not self.stop_event.is_set():
                self.runs += 1
                if rc != 0:
                    self.failures.append(rc)
            self.stop_event.wait(COMPETITOR_GAP_S)

    def __enter__(self) -> Self:
        if self.enabled:
            self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        with self.lock:
            self.stop_event.set()
            if self.proc is not None and self.proc.poll() is None:
                self.proc.terminate()
        if self.enabled:
            self.thread.join(timeout=30)
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def _descends_from(pid: int, ancestor: int) -> bool | None:
    """True/False when pid is alive and its ancestry known; None when it is already gone."""
    try:
        return any(p.pid == ancestor for p in psutil.Process(pid).parents())
    except psutil.Error:
        return None


def _record(seen: dict[int, dict], c: dict) -> None:
    rec = seen.setdefault(c["pid"], {"pid": c["pid"], "name": c.get("name"), "polls": 0, "regions": 0,
                                     "experiments": 0, "threads": [], "share": [], "last_team": [], "cpusets": []})
    rec["polls"] += 1
    rec["regions"] = max(rec["regions"], int(c.get("regions") or 0))
    rec["experiments"] = max(rec["experiments"], int(c.get("experiments") or 0))
    for key, seq in (("threads", rec["threads"]), ("share", rec["share"]), ("last_team", rec["last_team"])):
        v = c.get(key)
        if v is not None and v not in seq:
            seq.append(v)
    cs = c.get("cpuset")
    if cs is not None and cs not in rec["cpusets"]:
        rec["cpusets"].append(cs)
    for key in ("malleable", "max_threads", "estimate", "efficiency", "verdict", "verdict_source", "reason"):
        rec[key] = c.get(key)  # None while the daemon does not report it; the latest value wins


def _watch(proc: subprocess.Popen[bytes], daemon, seen: dict[int, dict], competitor_name: str) -> None:
    """Polls the daemon until proc exits; records the clients in proc's process tree."""
    ours: dict[int, bool] = {}
    while proc.poll() is None:
        try:
            st = daemon.status()
        except Exception:  # noqa: BLE001 -- a poll racing the program's exit; the next one decides
            st = {"clients": []}
        for c in st.get("clients", []):
            pid = c["pid"]
            if pid not in ours:
                d = _descends_from(pid, proc.pid)
                if d is None:  # already gone: only the competitor's name tells them apart
                    d = c.get("name") != competitor_name
                ours[pid] = d
            if ours[pid]:
                _record(seen, c)
        try:
            proc.wait(timeout=POLL_S)  # returns at once when it exits: the step's time stays exact
        except subprocess.TimeoutExpired:
            pass


def run_mode(prog: Program, mode: str, base: Path, inputs_dir: Path, daemon=None) -> RunResult:
    """mode "plain": the program and competitor unmodified. mode "scaf": both under scaf run."""
    d = base / mode
    shutil.copytree(inputs_dir, d)
    env = plain_env(prog.env)
    socket = daemon.socket if mode == "scaf" else None
    scaf = str(paths.build_dir() / "bin" / "scaf")
    res = RunResult(mode=mode, dir=d, steps=[], seconds=0.0)
    compete = mode == "scaf" or os.environ.get("SCAF_CORPUS_COMPETE_PLAIN") == "1"
    rival, rival_dir = None, None
    if prog.pair:
        rival, rival_dir = list(prog.steps[-1]), base / f"{mode}.pair"
        shutil.copytree(inputs_dir, rival_dir)
    with Competitor(socket, env, enabled=compete, argv=rival, cwd=rival_dir) as comp:
        if compete:
            time.sleep(0.2)  # let the first competitor arrive, so the program starts with a share of one
        t0 = time.monotonic()
        for k, argv in enumerate(prog.steps):
            cmd = list(argv) if mode != "scaf" else [scaf, "run", "--socket", socket, "--", *argv]
            out_path, err_path = base / f"{mode}.{k}.stdout", base / f"{mode}.{k}.stderr"
            t = time.monotonic()
            with out_path.open("wb") as out, err_path.open("wb") as err:
                proc = subprocess.Popen(cmd, cwd=d, env=env, stdout=out, stderr=err, stdin=subprocess.DEVNULL)
                if daemon is not None and mode == "scaf":
                    _watch(proc, daemon, res.clients, competitor_name(prog))
                proc.wait(timeout=600)
            res.steps.append(StepResult(tuple(argv), proc.returncode, out_path.read_bytes(), err_path.read_bytes(),
                                        time.monotonic() - t))
            if proc.returncode != 0:
                break
        res.seconds = time.monotonic() - t0
    res.competitor_runs = comp.runs
    assert not comp.failures, f"the competitor {comp.argv} failed ({comp.failures}) during the {mode} run"
    return res


def competitor_name(prog: Program) -> str:
    """The name the daemon gives the competitor's client: ep's, or for a pair the program's own."""
    return prog.client_name if prog.pair else COMPETITOR[0]


def read_log(log: str, polled: dict[int, dict], competitor_name: str = COMPETITOR[0]) -> dict[int, dict]:
    """Adds what the daemon's --log saw to the polled client records: every `threads` value each
    client was given, in order ("allocations"), and the clients no poll caught (a process that
    lived between two polls; recognised by not being the competitor, as only the program and
    the competitor use this private daemon; marked "from_log")."""
    out = {pid: dict(rec, allocations=[]) for pid, rec in polled.items()}
    for st in alloclog.read(log, missing_ok=True):
        for c in st["clients"]:
            pid = c.get("pid")
            if pid not in out:
                if c.get("name") == competitor_name or pid in polled:
                    continue
                tmp: dict[int, dict] = {}
                _record(tmp, c)
                out[pid] = dict(tmp[pid], allocations=[], from_log=True)
            elif out[pid].get("from_log"):
                _record(out, c)
            seq = out[pid]["allocations"]
            if not seq or seq[-1] != c.get("threads"):
                seq.append(c.get("threads"))
    return out


def expand_outputs(prog: Program, d: Path) -> list[str]:
    """The output paths of prog in run directory d (glob patterns expanded, sorted)."""
    out: list[str] = []
    for pat in prog.outputs:
        if any(ch in pat for ch in "*?["):
            out.extend(sorted(str(p.relative_to(d)) for p in d.glob(pat) if p.is_file()))
        else:
            out.append(pat)
    return out


def differences(prog: Program, plain: RunResult, scaf: RunResult) -> list[str]:
    """Every way the scaf run's observable results differ from the plain run's (empty: identical)."""
    diffs = []
    if len(plain.steps) != len(scaf.steps):
        diffs.append(f"plain ran {len(plain.steps)} steps, scaf {len(scaf.steps)}")
    for k, (a, b) in enumerate(zip(plain.steps, scaf.steps, strict=False)):
        if a.rc != b.rc:
            diffs.append(f"step {k}: exit status {a.rc} plain, {b.rc} under scaf; stderr: {b.stderr[-2000:]!r}")
        if masked(a.stdout, prog.stdout_masks) != masked(b.stdout, prog.stdout_masks):
            diffs.append(f"step {k}: stdout differs (files {plain.dir.parent}/plain.{k}.stdout and scaf.{k}.stdout)")
        if prog.compare_stderr and masked(a.stderr, prog.stderr_masks) != masked(b.stderr, prog.stderr_masks):
            diffs.append(f"step {k}: stderr differs (files {plain.dir.parent}/plain.{k}.stderr and scaf.{k}.stderr)")
    want, got = expand_outputs(prog, plain.dir), expand_outputs(prog, scaf.dir)
    if want != got:
        diffs.append(f"output files differ: plain {want}, scaf {got}")
    for rel in want:
        pa, pb = plain.dir / rel, scaf.dir / rel
        if not pb.exists():
            diffs.append(f"{rel}: missing under scaf")
        elif rounded(pa.read_bytes(), prog.output_digits) != rounded(pb.read_bytes(), prog.output_digits):
            diffs.append(f"{rel}: differs ({pa} vs {pb})")
    return diffs
