"""Run a program plainly and under the layer, and compare what the runs printed and wrote (`scaf check`'s engine)."""

from __future__ import annotations

import contextlib
import json
import os
import re
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from scaf.lib import paths, procs, runtimes
from scaf.lib.daemon import DaemonError, PrivateDaemon
from scaf.lib.launch import append_preload, strip_layer

EXIT_MALLEABLE = 0
EXIT_NOT_MALLEABLE = 1
EXIT_USAGE = 2
EXIT_NONDETERMINISTIC = 3
EXIT_NOT_EXERCISED = 4
EXIT_SCAF = 125

# Set by the check for each run; a value inherited from the caller would change what a run means.
OWN_VARS = ("SCAF_CHECK_SEED", "SCAF_REPORT", "SCAF_MALLEABLE", "SCAF_DISABLE", "SCAF_SOCKET", "SCAF_MEMORY",
            "SCAF_START_TEAM", "SCAF_START_PARENT")


class CannotRun(Exception):
    """PROG could not be started."""


@dataclass
class Diff:
    what: str  # "exit" | "timeout" | "stdout" | "output"
    summary: str  # short, for the run's line: "stdout line 3"
    detail: list[str] = field(default_factory=list)  # lines for the evidence
    file: str | None = None
    line: int | None = None
    offset: int | None = None
    reference: str | None = None
    got: str | None = None

    def as_json(self) -> dict:
        return {k: v for k, v in (("what", self.what), ("summary", self.summary), ("file", self.file),
                                  ("line", self.line), ("offset", self.offset),
                                  ("reference", self.reference), ("got", self.got)) if v is not None}


@dataclass
class Run:
    name: str  # "plain 1", "seed 3", "auto"
    kind: str  # "plain" | "seed" | "auto"
    seed: int | None = None
    pid: int = 0
    exit: int | None = None  # shell style; None when it timed out
    timed_out: bool = False
    wall_s: float = 0.0
    stdout: bytes = b""
    outputs: list[bytes | None] = field(default_factory=list)
    written: list[bool] = field(default_factory=list)
    reports: list[dict] = field(default_factory=list)
    diffs: list[Diff] = field(default_factory=list)

    @property
    def regions(self) -> int:
        return sum(r.get("regions", 0) for r in self.reports if isinstance(r.get("regions"), int))

    @property
    def teams(self) -> list[int]:
        out: set[int] = set()
        for r in self.reports:
            out.update(t for t in r.get("teams", []) if isinstance(t, int))
        return sorted(out)

    def layer_verdict(self) -> dict | None:
        """The report of the process that ran the most regions (the program, not a helper it ran)."""
        if not self.reports:
            return None
        return max(self.reports, key=lambda r: r.get("regions", 0) if isinstance(r.get("regions"), int) else 0)

    def as_json(self) -> dict:
        d: dict = {"name": self.name, "kind": self.kind, "exit": self.exit, "timed_out": self.timed_out,
                   "wall_s": round(self.wall_s, 3)}
        if self.seed is not None:
            d["seed"] = self.seed
        if self.kind != "plain":
            d["teams"] = self.teams
            d["regions"] = self.regions
        if self.kind == "auto" and self.layer_verdict():
            lv = self.layer_verdict() or {}
            d["layer"] = {k: lv.get(k) for k in ("verdict", "source", "reason")}
        d["same"] = not self.diffs
        d["differences"] = [x.as_json() for x in self.diffs]
        return d


class Checker:
    """Runs PROG plainly or under the layer, keeps what each run did, and compares runs.

    IGNORE: regular expressions of stdout and text-output lines to mask;
    OUTPUTS: files PROG writes; THREADS: OMP_NUM_THREADS for every run (None:
    inherited); TIMEOUT: seconds before a run is killed; KEEP: also copy each
    run's outputs into WORKDIR. `daemon` is the private daemon the runs under
    the layer talk to, set by the caller.
    """

    def __init__(self, argv: list[str], exe: str, workdir: str, *, ignore: list[str], outputs: list[str],
                 threads: int | None, timeout: float, keep: bool):
        self.argv = argv
        self.exe = exe
        self.workdir = workdir
        self.ignore = [re.compile(r) for r in ignore]
        self.outputs = [os.path.abspath(f) for f in outputs]
        self.threads = threads
        self.timeout = timeout
        self.keep = keep
        self.daemon: PrivateDaemon | None = None
        self.warnings: list[str] = []
        self.runs: list[Run] = []

    # -- environments --
    def base_env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if k not in OWN_VARS}
        if self.threads:
            env["OMP_NUM_THREADS"] = str(self.threads)
        pre = strip_layer(env.get("LD_PRELOAD", ""))
        if pre:
            env["LD_PRELOAD"] = pre
        else:
            env.pop("LD_PRELOAD", None)
        return env

    def scaf_env(self, extra: dict[str, str]) -> dict[str, str]:
        env = self.base_env()
        try:  # the layer for PROG's OpenMP runtime, as `scaf run` picks it
            kind = runtimes.choose(self.exe).layer or "gomp"
        except (ValueError, KeyError, IndexError, AssertionError, OSError):
            kind = "gomp"
        env["LD_PRELOAD"] = append_preload(env.get("LD_PRELOAD"), str(paths.layer(kind)))
        assert self.daemon is not None
        env["SCAF_SOCKET"] = self.daemon.socket
        # The check's runs are tests, not runs: nothing of them is recalled (no start team) or learned.
        env["SCAF_MEMORY"] = "0"
        env.update(extra)
        return env

    def start_daemon(self) -> PrivateDaemon:
        """The private scafd the runs under the layer talk to: equipartition, on a socket of its own, its
        allocations logged to WORKDIR/scafd.jsonl, in a process group of its own that procs ends on Ctrl-C,
        without the layer or scaf's own variables in its environment.

        Raises DaemonError saying why when it is not built, exits at start or does not answer."""
        binary = paths.scafd()
        if not binary.exists():
            raise DaemonError(f"{binary} is not built (run `make`)", "")
        env = {k: v for k, v in os.environ.items() if k not in OWN_VARS and k != "LD_PRELOAD"}
        d = PrivateDaemon(
            ["--policy", "equipartition"], binary=binary, log=Path(self.workdir, "scafd.jsonl"), env=env,
            spawn=lambda argv, env, out: procs.spawn(argv, env, None, stdout=out, stderr=out))
        d.start_or_discard()
        return d

    def bound(self) -> int:
        """The team PROG gets plainly: OMP_NUM_THREADS's first value, else its CPUs."""
        v = self.base_env().get("OMP_NUM_THREADS", "").split(",")[0].strip()
        if v.isdigit() and int(v) > 0:
            return int(v)
        return len(os.sched_getaffinity(0))

    def check(self, seeds: int, line: Callable[[Run, str], None], say: Callable[[str], None],
              err: Callable[[str], None]) -> dict:
        """Run the plain runs, the seeded runs and the auto run, and decide the verdict.

        Returns the result (what --json prints): the runs, the verdict, its exit status
        (EXIT_*), the evidence and the layer's rule. LINE is called after each run with a
        note on it, SAY with each line of the verdict, ERR with scaf's own failures.
        """
        result: dict = {"program": self.exe, "argv": self.argv, "seeds": seeds, "threads": self.threads,
                        "bound": self.bound(), "runs": [], "verdict": None, "exit": None, "evidence": [],
                        "layer": None, "disagreement": None, "warnings": self.warnings}

        def finish(verdict: str, code: int) -> dict:
            result["verdict"] = verdict
            result["exit"] = code
            return result

        # 1. Plain, twice.
        plain = self.execute(Run("plain 1", "plain"), self.base_env())
        result["runs"].append(plain.as_json())
        line(plain, "reference" if not plain.timed_out else "")
        if plain.timed_out:
            say(f"verdict: not exercised: the plain run did not finish within {self.timeout:g} s: raise --timeout, or give it "
                     "a smaller input")
            return finish("not exercised", EXIT_NOT_EXERCISED)
        for f, w, data in zip(self.outputs, plain.written, plain.outputs, strict=True):
            if data is None:
                self.warnings.append(f"{f} does not exist after the plain run: is it a file PROG writes?")
            elif not w:
                self.warnings.append(f"{f} was not rewritten by the plain run: is it a file PROG writes?")
        for w in self.warnings:
            say(f"warning: {w}")
        again = self.execute(Run("plain 2", "plain"), self.base_env())
        again.diffs = self.compare(plain, again, "run 1", "run 2")
        result["runs"].append(again.as_json())
        line(again, "same" if not again.diffs else "DIFFERENT: " + ", ".join(d.summary for d in again.diffs))
        if again.diffs:
            result["evidence"] = [d.as_json() for d in again.diffs]
            say("verdict: nondeterministic: two runs WITHOUT scaf already differ, so a difference under scaf "
                     "would prove nothing:")
            for d in again.diffs:
                for ln in d.detail:
                    say("  " + ln)
            say("If those lines do not matter (times, addresses, process ids), mask them with --ignore "
                     "REGEX (repeatable), e.g. --ignore 'time'.")
            return finish("nondeterministic", EXIT_NONDETERMINISTIC)

        # 2. A private daemon.
        try:
            self.daemon = self.start_daemon()
        except (DaemonError, OSError) as e:
            err(f"cannot start a private daemon: {e}")
            return finish("error", EXIT_SCAF)

        # 3. Seeded teams; 4. auto.
        runs: list[Run] = []
        for s in range(1, seeds + 1):
            run = self.execute(Run(f"seed {s}", "seed", seed=s), self.scaf_env({"SCAF_CHECK_SEED": str(s)}))
            runs.append(run)
            run.diffs = self.compare(plain, run)
            result["runs"].append(run.as_json())
            line(run, _note(run))
        auto = self.execute(Run("auto", "auto"), self.scaf_env({"SCAF_MALLEABLE": "auto"}))
        auto.diffs = self.compare(plain, auto)
        result["runs"].append(auto.as_json())
        lv = auto.layer_verdict()
        line(auto, _note(auto) + (f"  (layer: {lv.get('verdict')}, by {lv.get('source')})" if lv else ""))
        if lv:
            result["layer"] = {k: lv.get(k) for k in ("verdict", "source", "reason")}
        if self.daemon is not None and not self.daemon.alive():
            err(f"the private daemon died during the check: {self.daemon.stderr().strip()[-400:]}")
            return finish("error", EXIT_SCAF)

        # Could the check exercise it?
        seeded = [r for r in runs if r.regions > 0]
        if not seeded:
            say("verdict: not exercised: PROG never opened a parallel region under the layer, so scaf never changed "
                     "a team. Is it a GNU OpenMP program (gcc, g++, gfortran)? Statically linked, or with its "
                     "own OpenMP runtime (clang's libomp, Intel's), the layer cannot reach it; a script that "
                     "runs the program is fine.")
            if any(r.diffs for r in runs):
                say("(yet a run differed: the program is not deterministic in a way the two plain runs "
                         "did not show)")
            return finish("not exercised", EXIT_NOT_EXERCISED)
        teams = sorted({t for r in seeded for t in r.teams})
        bound = result["bound"]
        # One team size everywhere is no test: either the plain team itself, or the team that the
        # regions set themselves (num_threads clauses are kept), which the auto run shows too.
        if not teams or (len(teams) == 1 and (teams[0] == bound or (auto.regions > 0 and auto.teams == teams))):
            size = teams[0] if teams else "?"
            if bound == 1:
                why, hint = "the team it gets without scaf", "use --threads N (N > 1) to try larger teams"
            elif teams and teams[0] != bound:
                why, hint = ("in every run, seeded or not: its regions choose their own team (num_threads), "
                             "which scaf keeps"), "scaf cannot change its teams"
            else:
                why, hint = "the team it gets without scaf", "use more --seeds, or a larger --threads"
            say(f"verdict: not exercised: every region ran with {size} thread{'' if size == 1 else 's'}, {why}, so nothing was "
                     f"varied; {hint}")
            return finish("not exercised", EXIT_NOT_EXERCISED)

        differing = [r for r in [*runs, auto] if r.diffs]
        verdict_fixed = lv is not None and lv.get("verdict") == "fixed"
        rule_says = _rule_says(lv)
        if differing:
            first = differing[0]
            result["evidence"] = [d.as_json() | {"run": first.name} for d in first.diffs]
            say(f"verdict: not malleable ({len(differing)} of {len(runs) + 1} runs under scaf differ: "
                     "its results depend on its team size)")
            say(f"  evidence, {first.name}" + (f" (teams {','.join(map(str, first.teams))}):"
                                                     if first.teams else ":"))
            for d in first.diffs:
                for ln in d.detail:
                    say("    " + ln)
            say(f"  the layer's rule says: {rule_says}")
            if lv is not None and lv.get("verdict") == "undecided":
                # Not a disagreement: the rule holds what it has not decided at the program's own team; a
                # longer run of the program would have settled it one way or the other.
                say("  the layer had not decided when the program ended; meanwhile it keeps such regions at "
                    "the program's own team. --save or `scaf run --fixed` records the check's verdict")
            elif lv is not None and not verdict_fixed:
                if lv.get("source") == "rules":
                    msg = ("a rules file says it is malleable, but the check found a difference: change that rule, "
                           "or use --save (a rule for this path, placed first) or `scaf run --fixed`")
                else:
                    msg = ("the rule would steer it but the check found a difference: use --save or "
                           "`scaf run --fixed`")
                result["disagreement"] = msg
                say(f"  DISAGREEMENT: {msg}")
            elif verdict_fixed:
                say("  the layer agrees: it keeps this program's team fixed (steered by CPU affinity)")
            return finish("not malleable", EXIT_NOT_MALLEABLE)

        say(f"verdict: malleable (every run under scaf gave the plain run's results; teams "
                 f"{','.join(map(str, teams))} tried, on this input only)")
        say(f"  the layer's rule says: {rule_says}")
        if verdict_fixed:
            if lv is not None and lv.get("source") == "rules":
                msg = ("a rules file keeps it fixed, but the check found no difference: if this input is "
                       "representative, change that rule, or use --save or `scaf run --malleable`")
            else:
                msg = ("the rule keeps its team fixed but the check found no difference: if this input is "
                       "representative, --save or `scaf run --malleable` lets scaf resize its team")
            result["disagreement"] = msg
            say(f"  DISAGREEMENT: {msg}")
        return finish("malleable", EXIT_MALLEABLE)

    def program_with_regions(self) -> tuple[str | None, str]:
        """The executable whose regions the check saw (what a rule must name), or None and why not.

        The layer matches rules against /proc/self/exe of the process that runs the
        regions: PROG itself, unless PROG is a script or a launcher (sh -c, taskset,
        env) that runs another program.
        """
        reports = [r for run in self.runs if run.kind != "plain" for r in run.reports]
        exes = {os.path.realpath(r["exe"]) for r in reports if isinstance(r.get("exe"), str) and r["exe"]}
        if exes:  # the layer names it
            if len(exes) > 1:
                return None, f"several programs ran the parallel regions ({', '.join(sorted(exes))})"
            return exes.pop(), ""
        pids = {r.get("pid") for r in reports}
        if pids and not any(run.pid in pids for run in self.runs):
            return None, f"the parallel regions ran in another process than {self.argv[0]} (a script or a launcher?)"
        try:
            with open(self.exe, "rb") as f:
                script = f.read(2) == b"#!"
        except OSError:
            script = False
        if script:
            return None, f"{self.argv[0]} is a script: the parallel regions ran in a program it started"
        return self.exe, ""

    def program_key(self) -> tuple[int, str] | None:
        """(key, name) the layer reported for the process that ran the regions (SCAF_REPORT's "key" and
        "program": the key the daemon's memory knows it by, whatever launched it), when every report of the
        runs under scaf names one and the same nonzero key; None otherwise (an older layer, several programs)."""
        reports = [r for run in self.runs if run.kind != "plain" for r in run.reports]
        keys = {(r["key"], str(r.get("program", ""))) for r in reports if isinstance(r.get("key"), str)}
        if len(keys) != 1:
            return None
        text, name = keys.pop()
        try:
            key = int(text, 16)
        except ValueError:
            return None
        return (key, name) if key else None

    # -- running --
    def execute(self, run: Run, env: dict[str, str]) -> Run:
        tag = run.name.replace(" ", "-")
        out_path = os.path.join(self.workdir, f"{tag}.stdout")
        err_path = os.path.join(self.workdir, f"{tag}.stderr")
        report = os.path.join(self.workdir, f"{tag}.report.jsonl")
        if run.kind != "plain":
            env = dict(env, SCAF_REPORT=report)
        before = [_stamp(f) for f in self.outputs]
        with open(out_path, "wb") as out, open(err_path, "wb") as err:
            t0 = time.monotonic()
            try:
                proc = procs.spawn(self.argv, env, None, stdout=out, stderr=err)
            except OSError as e:  # found at the start, gone or not executable now
                raise CannotRun(f"cannot run {self.argv[0]}: {e.strerror or e}") from e
        run.pid = proc.pid
        try:
            proc.wait(timeout=self.timeout)
        except subprocess.TimeoutExpired:
            run.timed_out = True
        run.wall_s = time.monotonic() - t0
        procs.kill_group(proc, grace=1.0)  # a timed-out run, and anything a finished one left behind
        if not run.timed_out:
            code = proc.returncode
            run.exit = 128 - code if code < 0 else code
        run.stdout = Path(out_path).read_bytes()
        for f, b in zip(self.outputs, before, strict=True):
            after = _stamp(f)
            run.written.append(after is not None and after != b)
            try:
                data = Path(f).read_bytes()
            except OSError:
                data = None
            run.outputs.append(data)
            if self.keep and data is not None:
                Path(self.workdir, f"{tag}.output{len(run.outputs)}-{os.path.basename(f)}").write_bytes(data)
        if run.kind != "plain":
            try:
                text = Path(report).read_text(errors="replace")
            except OSError:
                text = ""
            for line in text.splitlines():
                with contextlib.suppress(ValueError):
                    rec = json.loads(line)
                    if isinstance(rec, dict):
                        run.reports.append(rec)
        Path(self.workdir, f"{tag}.exit").write_text("timeout\n" if run.timed_out else f"{run.exit}\n")
        self.runs.append(run)
        return run

    # -- comparing --
    def mask(self, data: bytes) -> list[str]:
        lines = data.decode("utf-8", errors="surrogateescape").split("\n")
        if self.ignore:
            lines = ["<ignored>" if any(r.search(ln) for r in self.ignore) else ln for ln in lines]
        return lines

    def compare(self, ref: Run, run: Run, ref_name: str = "plain", run_name: str = "scaf") -> list[Diff]:
        diffs: list[Diff] = []
        if run.timed_out and not ref.timed_out:
            diffs.append(Diff("timeout", f"no end within {self.timeout:g} s",
                              [(f"it did not finish within {self.timeout:g} s "
                               f"(the plain run took {ref.wall_s:.2f} s)")]))
            return diffs
        if run.exit != ref.exit:
            diffs.append(Diff("exit", f"exit status {run.exit}",
                              [f"exit status: {ref_name} {ref.exit}, {run_name} {run.exit}"],
                              reference=str(ref.exit), got=str(run.exit)))
        d = self.compare_text(ref.stdout, run.stdout, "stdout", None, ref_name, run_name)
        if d:
            diffs.append(d)
        for i, f in enumerate(self.outputs):
            a, b = ref.outputs[i], run.outputs[i]
            if a == b:
                continue
            if a is None or b is None:
                diffs.append(Diff("output", f"{os.path.basename(f)} missing",
                                  [(f"{f}: {'no file' if a is None else 'written'} ({ref_name}), "
                                   f"{'no file' if b is None else 'written'} ({run_name})")], file=f))
                continue
            if _is_text(a) and _is_text(b):
                d = self.compare_text(a, b, os.path.basename(f), f, ref_name, run_name)
            else:
                d = _compare_bytes(a, b, f, ref_name, run_name)
            if d:
                diffs.append(d)
        return diffs

    def compare_text(self, a: bytes, b: bytes, label: str, file: str | None,
                     ref_name: str, run_name: str) -> Diff | None:
        la, lb = self.mask(a), self.mask(b)
        if la == lb:
            return None
        where = file or "stdout"
        for i, (x, y) in enumerate(zip(la, lb)):
            if x != y:
                return Diff("output" if file else "stdout", f"{label} line {i + 1}",
                            [f"{where} line {i + 1}:", f"  {ref_name + ':':<7} {_show(x)}",
                             f"  {run_name + ':':<7} {_show(y)}"],
                            file=file, line=i + 1, reference=x, got=y)
        # One is a prefix of the other.
        n = min(len(la), len(lb))
        na, nb = _count_lines(a), _count_lines(b)
        extra, who = (la[n], ref_name) if len(la) > n else (lb[n], run_name)
        if extra == "" and abs(len(la) - len(lb)) == 1:
            return Diff("output" if file else "stdout", f"{label} final newline",
                        [f"{where}: the same lines, but only the {who} version ends with a newline"],
                        file=file, line=n + 1)
        return Diff("output" if file else "stdout", f"{label} line {n + 1}",
                    [f"{where}: {ref_name} has {na} lines, {run_name} {nb}; line {n + 1} only in {who}:",
                     f"  {_show(extra)}"],
                    file=file, line=n + 1,
                    reference=la[n] if len(la) > n else None, got=lb[n] if len(lb) > n else None)


def _stamp(path: str) -> tuple[int, int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_ino, st.st_size, st.st_mtime_ns


def _is_text(data: bytes) -> bool:
    if b"\0" in data:
        return False
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _count_lines(data: bytes) -> int:
    return data.count(b"\n") + (0 if data.endswith(b"\n") or not data else 1)


def _show(line: str, limit: int = 160) -> str:
    s = line.encode("utf-8", errors="surrogateescape").decode("utf-8", errors="replace")
    s = "".join(c if c.isprintable() else repr(c)[1:-1] for c in s)
    return s if len(s) <= limit else s[: limit - 3] + "..."


def _first_difference(a: bytes, b: bytes, n: int, block: int = 1 << 16) -> int:
    """The first offset below n where a and b differ, else n (block by block: files can be large)."""
    ma, mb = memoryview(a), memoryview(b)
    for start in range(0, n, block):
        end = min(n, start + block)
        if ma[start:end] != mb[start:end]:
            return next(i for i in range(start, end) if a[i] != b[i])
    return n


def _compare_bytes(a: bytes, b: bytes, f: str, ref_name: str, run_name: str) -> Diff:
    n = min(len(a), len(b))
    off = _first_difference(a, b, n)
    if off < n:
        detail = [(f"{f} byte {off}: {ref_name} 0x{a[off]:02x}, {run_name} 0x{b[off]:02x} "
                  f"(sizes {len(a)} and {len(b)})")]
    else:
        detail = [f"{f}: {ref_name} has {len(a)} bytes, {run_name} {len(b)}; the first {n} are the same"]
    return Diff("output", f"{os.path.basename(f)} byte {off}", detail, file=f, offset=off)


def _note(run: Run) -> str:
    return "same" if not run.diffs else "DIFFERENT: " + ", ".join(d.summary for d in run.diffs)


def _rule_says(lv: dict | None) -> str:
    if lv is None:
        return "unknown (the auto run opened no parallel region under the layer)"
    return f"{lv.get('verdict', '?')} — {lv.get('reason', '')} (decided by: {lv.get('source', '?')})"
