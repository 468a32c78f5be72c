"""`scaf check`: does a program give the same results when scaf changes its team sizes?"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from scaf.lib import paths, rules
from scaf.lib.launch import append_preload, resolve, strip_layer

EXIT_MALLEABLE = 0
EXIT_NOT_MALLEABLE = 1
EXIT_USAGE = 2
EXIT_NONDETERMINISTIC = 3
EXIT_NOT_EXERCISED = 4
EXIT_SCAF = 125

# Set by the check for each run; a value inherited from the caller would change what a run means.
OWN_VARS = ("SCAF_CHECK_SEED", "SCAF_REPORT", "SCAF_MALLEABLE", "SCAF_DISABLE", "SCAF_SOCKET")

DESCRIPTION = """\
Test whether PROG gives the same results when scaf changes the number of
threads of its parallel regions, that is, whether it is malleable.

  1. PROG runs twice without scaf (no layer). If those two runs differ, PROG
     is not deterministic as it is: the check says where, suggests --ignore,
     and stops (exit 3).
  2. A private scafd is started (your own daemon, if any, is not used).
  3. PROG runs under the layer once per seed (--seeds K: seeds 1..K) with
     SCAF_CHECK_SEED=seed: every outermost parallel region that leaves its
     team size to the runtime gets a pseudo-random team between 1 and what
     PROG would get plainly (OMP_NUM_THREADS, or the CPUs it may use), a
     different sequence per seed. The layer's evidence rule is switched off
     for these runs and no serial experiments are made.
  4. PROG runs once more under the layer as `scaf run` would run it (auto
     mode), to learn what the layer's own rule decides, and why.
  5. Every run under scaf is compared with the first plain run: exit status,
     stdout (lines matching an --ignore REGEX masked), and each --output
     FILE (byte for byte; line by line, with the same masking, when both
     versions are text).

The verdict is "malleable" when every run gave the same results, "not
malleable" otherwise, with the first difference as evidence and what the
layer's rule says. When the rule and the check disagree, the check says so:
`--save` (or `scaf run --fixed`/`--malleable`) then records what you know.

Limits (read these before trusting a "malleable"):
  - It tests ONE input (the ARGS you give) with K team sequences. A program
    may depend on its team size only on other inputs, only at other sizes,
    or only with other team sequences than the K tried.
  - Identical output does not prove malleability; a difference does prove
    that the results depend on the team size (or on something else that the
    two plain runs happened not to show).
  - Floating-point reductions (reduction(+:x) over doubles, or sums split by
    thread) round differently for different team sizes. A program printing
    such a sum to full precision comes out "not malleable". That is the
    truth about its bits; whether the last digits matter is your call
    (--ignore the line, or keep it fixed for bitwise-reproducible results).
    With more than two threads, libgomp adds the threads' partial sums in
    the order they finish, so such a program may differ between two plain
    runs already (exit 3): it is not reproducible even without scaf.
  - Only what you name is compared: stdout, the exit status and the --output
    files. stderr is not compared.
  - A program whose team cannot change is not exercised (exit 4): one CPU
    or OMP_NUM_THREADS=1 (use --threads N), or regions that all set their
    own team with num_threads(...), which scaf keeps.

PROG runs in the current directory with stdin from /dev/null, once with each
seed and three more times; give it an input that takes seconds, not hours.
"""

EPILOG = """\
exit status:
  0    malleable: every run under scaf gave the plain run's results
  1    not malleable: a run under scaf gave a different result (evidence printed)
  2    usage error (bad option, PROG not found or not executable)
  3    PROG is nondeterministic even without scaf (two plain runs differ)
  4    the check could not exercise PROG: it opened no parallel region under
       the layer, its team could not vary (one CPU, num_threads clauses), or
       the plain run timed out
  125  scaf's own failure (the layer or scafd not built, the daemon would not
       start), or --save could not write its rule (the rules file is not
       writable, or PROG is a script whose regions ran in another program)

output: a line per run (seed, the team sizes the layer gave it, exit status,
same or different), then the verdict with its evidence and the layer's rule.
--json prints one JSON object instead (fields: docs/cli.md).

environment:
  OMP_NUM_THREADS   kept (and set by --threads): the largest team tried
  SCAF_RULES, XDG_CONFIG_HOME, HOME
                    where the layer's rules files are (see `scaf rules --help`);
                    the auto run obeys them, --save writes to the first
  SCAF_CHECK_SEED, SCAF_REPORT, SCAF_MALLEABLE, SCAF_DISABLE, SCAF_SOCKET
                    set by the check for each run; values of your own are dropped

examples:
  scaf check -- ./my_solver input.dat
  scaf check --threads 4 -- ./my_solver input.dat     teams 1..4 on a 2-core machine
  scaf check --ignore '^time' --ignore 'elapsed' -- ./bench --small
                                                      mask lines that hold times
  scaf check --output result.csv -- ./sim --out result.csv
                                                      compare a file it writes too
  scaf check --save -- ./my_solver input.dat          record the verdict as a rule
  scaf check --json --seeds 8 -- ./prog | jq .verdict
"""


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "check",
        help="test whether a program's results depend on its team sizes (is it malleable?)",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        usage="scaf check [-h] [--seeds K] [--threads N] [--ignore REGEX]... [--output FILE]...\n"
              "                  [--timeout S] [--json] [--keep] [--save] -- PROG [ARGS...]",
    )
    p.add_argument("--seeds", type=int, default=4, metavar="K",
                   help="runs under scaf with seeded random teams, seeds 1..K (default 4)")
    p.add_argument("--threads", type=int, metavar="N",
                   help="set OMP_NUM_THREADS=N for every run, plain ones included: teams up to N are "
                        "tried even on a machine with fewer CPUs")
    p.add_argument("--ignore", action="append", default=[], metavar="REGEX",
                   help="mask lines matching REGEX (Python re, searched anywhere in the line) in stdout "
                        "and in text --output files before comparing; repeatable")
    p.add_argument("--output", action="append", default=[], metavar="FILE",
                   help="a file PROG writes; compared after each run (PROG overwrites it each time; the "
                        "plain version is kept for comparison, the last run's stays in place); repeatable")
    p.add_argument("--timeout", type=float, default=300.0, metavar="S",
                   help="seconds per run (default 300); a run past it is killed, with everything it "
                        "started, and reported")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of the report")
    p.add_argument("--keep", action="store_true",
                   help="keep each run's stdout, stderr, layer report and --output copies in a "
                        "directory, and print where")
    p.add_argument("--save", action="store_true",
                   help="write the verdict as a rule (`malleable PATH` or `fixed PATH`, for PROG's "
                        "absolute path) into your rules file, and say which file and line (not for a script: "
                        "its regions run in another program)")
    p.add_argument("argv", nargs=argparse.REMAINDER, metavar="-- PROG ARGS", help="the program and its arguments")
    p.set_defaults(func=main, _parser=p)


# ---- one run ---------------------------------------------------------------------------------


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
    def __init__(self, args: argparse.Namespace, argv: list[str], exe: str, workdir: str):
        self.args = args
        self.argv = argv
        self.exe = exe
        self.workdir = workdir
        self.ignore = [re.compile(r) for r in args.ignore]
        self.outputs = [os.path.abspath(f) for f in args.output]
        self.daemon = None
        self.out = sys.stdout
        self.warnings: list[str] = []
        self.runs: list[Run] = []

    # -- environments --
    def base_env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if k not in OWN_VARS}
        if self.args.threads:
            env["OMP_NUM_THREADS"] = str(self.args.threads)
        pre = strip_layer(env.get("LD_PRELOAD", ""))
        if pre:
            env["LD_PRELOAD"] = pre
        else:
            env.pop("LD_PRELOAD", None)
        return env

    def scaf_env(self, extra: dict[str, str]) -> dict[str, str]:
        env = self.base_env()
        env["LD_PRELOAD"] = append_preload(env.get("LD_PRELOAD"), str(paths.layer()))
        assert self.daemon is not None
        env["SCAF_SOCKET"] = self.daemon.socket
        env.update(extra)
        return env

    def bound(self) -> int:
        """The team PROG gets plainly: OMP_NUM_THREADS's first value, else its CPUs."""
        v = self.base_env().get("OMP_NUM_THREADS", "").split(",")[0].strip()
        if v.isdigit() and int(v) > 0:
            return int(v)
        return len(os.sched_getaffinity(0))

    # -- running --
    def execute(self, run: Run, env: dict[str, str]) -> Run:
        from scaf.lib.bench import runner

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
                proc = runner.spawn(self.argv, env, None, stdout=out, stderr=err)
            except OSError as e:  # found at the start, gone or not executable now
                raise CannotRun(f"cannot run {self.argv[0]}: {e.strerror or e}") from e
        run.pid = proc.pid
        try:
            proc.wait(timeout=self.args.timeout)
        except subprocess.TimeoutExpired:
            run.timed_out = True
        run.wall_s = time.monotonic() - t0
        runner.kill_group(proc, grace=1.0)  # a timed-out run, and anything a finished one left behind
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
            if self.args.keep and data is not None:
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
            diffs.append(Diff("timeout", f"no end within {self.args.timeout:g} s",
                              [(f"it did not finish within {self.args.timeout:g} s "
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


# ---- the command -----------------------------------------------------------------------------


def _err(msg: str) -> None:
    print(f"scaf check: {msg}", file=sys.stderr, flush=True)


def _usage(args: argparse.Namespace, msg: str) -> int:
    args._parser.print_usage(sys.stderr)
    print(f"scaf check: error: {msg}", file=sys.stderr)
    return EXIT_USAGE


def main(args: argparse.Namespace) -> int:
    argv = list(args.argv)
    if argv and argv[0] == "--":
        argv = argv[1:]
    if not argv:
        return _usage(args, "no program given; put it after --, e.g. scaf check -- ./my_omp_program")
    if args.seeds < 1:
        return _usage(args, f"--seeds must be at least 1, not {args.seeds}")
    if args.threads is not None and args.threads < 1:
        return _usage(args, f"--threads must be at least 1, not {args.threads}")
    if not args.timeout > 0:
        return _usage(args, f"--timeout must be more than 0 seconds, not {args.timeout:g}")
    for r in args.ignore:
        try:
            re.compile(r)
        except re.error as e:
            return _usage(args, f"--ignore {r!r} is not a regular expression: {e}")
    path, code = resolve(argv[0], os.environ.get("PATH"))
    if path is None:
        what = ("No such file or directory" if "/" in argv[0] else "command not found") if code == 127 \
            else "Permission denied (not an executable file)"
        return _usage(args, f"{argv[0]}: {what}")
    exe = os.path.realpath(path)
    for need, what in ((paths.layer(), "the layer"), (paths.scafd(), "the daemon")):
        if not Path(need).is_file():
            _err(f"{what} {need} is missing; run make")
            return EXIT_SCAF

    from scaf.lib.bench import runner

    workdir = tempfile.mkdtemp(prefix="scaf-check-", dir="/tmp")
    ck = Checker(args, argv, exe, workdir)
    try:
        with runner.interruptible():
            result = _check(ck)
    except CannotRun as e:
        _err(str(e))
        return EXIT_USAGE
    finally:
        if ck.daemon is not None:
            ck.daemon.stop()
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)
    code = result["exit"]
    if args.save and code in (EXIT_MALLEABLE, EXIT_NOT_MALLEABLE):
        code = _save(ck, result, code)
    elif args.save:
        result["saved"] = None
        if not args.json:
            print("--save: nothing saved (no verdict)")
    if args.keep:
        result["kept"] = workdir
        if not args.json:
            print(f"outputs of each run kept in {workdir} (NAME.stdout, .stderr, .exit, .report.jsonl, "
                  ".outputN-FILE)")
    if args.json:
        result["exit"] = code
        json.dump(result, sys.stdout, indent=2)
        sys.stdout.write("\n")
    return code


def _line(ck: Checker, run: Run, note: str) -> None:
    if ck.args.json:
        return
    if run.name == "plain 1":
        print(f"{'RUN':<8}  {'EXIT':>7}  {'TIME':>8}  {'TEAMS':<10} {'REGIONS':>7}  RESULT")
    status = "timeout" if run.timed_out else str(run.exit)
    teams = regions = "-"
    if run.kind != "plain":
        teams = ",".join(map(str, run.teams)) or "none"
        regions = str(run.regions)
    if len(teams) > 10:
        teams = teams[:7] + "..."
    print(f"{run.name:<8}  {status:>7}  {run.wall_s:6.2f} s  {teams:<10} {regions:>7}  {note}", flush=True)


def _check(ck: Checker) -> dict:
    args = ck.args
    result: dict = {"program": ck.exe, "argv": ck.argv, "seeds": args.seeds, "threads": args.threads,
                    "bound": ck.bound(), "runs": [], "verdict": None, "exit": None, "evidence": [],
                    "layer": None, "disagreement": None, "warnings": ck.warnings}

    def finish(verdict: str, code: int) -> dict:
        result["verdict"] = verdict
        result["exit"] = code
        return result

    if not args.json:
        threads = f"OMP_NUM_THREADS={args.threads}, " if args.threads else ""
        print(f"scaf check: {shlex.join(ck.argv)}  ({threads}teams 1..{result['bound']}, "
              f"{args.seeds} seed{'s' if args.seeds != 1 else ''}, timeout {args.timeout:g} s)", flush=True)

    # 1. Plain, twice.
    plain = ck.execute(Run("plain 1", "plain"), ck.base_env())
    result["runs"].append(plain.as_json())
    _line(ck, plain, "reference" if not plain.timed_out else "")
    if plain.timed_out:
        _say(ck, f"verdict: not exercised: the plain run did not finish within {args.timeout:g} s: raise --timeout, or give it "
                 "a smaller input")
        return finish("not exercised", EXIT_NOT_EXERCISED)
    for f, w, data in zip(ck.outputs, plain.written, plain.outputs, strict=True):
        if data is None:
            ck.warnings.append(f"{f} does not exist after the plain run: is it a file PROG writes?")
        elif not w:
            ck.warnings.append(f"{f} was not rewritten by the plain run: is it a file PROG writes?")
    for w in ck.warnings:
        _say(ck, f"warning: {w}")
    again = ck.execute(Run("plain 2", "plain"), ck.base_env())
    again.diffs = ck.compare(plain, again, "run 1", "run 2")
    result["runs"].append(again.as_json())
    _line(ck, again, "same" if not again.diffs else "DIFFERENT: " + ", ".join(d.summary for d in again.diffs))
    if again.diffs:
        result["evidence"] = [d.as_json() for d in again.diffs]
        _say(ck, "verdict: nondeterministic: two runs WITHOUT scaf already differ, so a difference under scaf "
                 "would prove nothing:")
        for d in again.diffs:
            for ln in d.detail:
                _say(ck, "  " + ln)
        _say(ck, "If those lines do not matter (times, addresses, process ids), mask them with --ignore "
                 "REGEX (repeatable), e.g. --ignore 'time'.")
        return finish("nondeterministic", EXIT_NONDETERMINISTIC)

    # 2. A private daemon.
    from scaf.lib.bench import runner

    try:
        ck.daemon = runner.PrivateDaemon("equipartition", None, None, Path(ck.workdir, "scafd.jsonl"), [],
                                         f"check-{os.getpid()}")
    except (runner.BenchError, OSError) as e:
        _err(f"cannot start a private daemon: {e}")
        return finish("error", EXIT_SCAF)

    # 3. Seeded teams; 4. auto.
    runs: list[Run] = []
    for s in range(1, args.seeds + 1):
        run = ck.execute(Run(f"seed {s}", "seed", seed=s), ck.scaf_env({"SCAF_CHECK_SEED": str(s)}))
        runs.append(run)
        run.diffs = ck.compare(plain, run)
        result["runs"].append(run.as_json())
        _line(ck, run, _note(run))
    auto = ck.execute(Run("auto", "auto"), ck.scaf_env({"SCAF_MALLEABLE": "auto"}))
    auto.diffs = ck.compare(plain, auto)
    result["runs"].append(auto.as_json())
    lv = auto.layer_verdict()
    _line(ck, auto, _note(auto) + (f"  (layer: {lv.get('verdict')}, by {lv.get('source')})" if lv else ""))
    if lv:
        result["layer"] = {k: lv.get(k) for k in ("verdict", "source", "reason")}
    if ck.daemon is not None and not ck.daemon.alive():
        _err(f"the private daemon died during the check: {ck.daemon.stderr().strip()[-400:]}")
        return finish("error", EXIT_SCAF)

    # Could the check exercise it?
    seeded = [r for r in runs if r.regions > 0]
    if not seeded:
        _say(ck, "verdict: not exercised: PROG never opened a parallel region under the layer, so scaf never changed "
                 "a team. Is it a GNU OpenMP program (gcc, g++, gfortran)? Statically linked, or with its "
                 "own OpenMP runtime (clang's libomp, Intel's), the layer cannot reach it; a script that "
                 "runs the program is fine.")
        if any(r.diffs for r in runs):
            _say(ck, "(yet a run differed: the program is not deterministic in a way the two plain runs "
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
        _say(ck, f"verdict: not exercised: every region ran with {size} thread{'' if size == 1 else 's'}, {why}, so nothing was "
                 f"varied; {hint}")
        return finish("not exercised", EXIT_NOT_EXERCISED)

    differing = [r for r in [*runs, auto] if r.diffs]
    verdict_fixed = lv is not None and lv.get("verdict") == "fixed"
    rule_says = _rule_says(lv)
    if differing:
        first = differing[0]
        result["evidence"] = [d.as_json() | {"run": first.name} for d in first.diffs]
        _say(ck, f"verdict: not malleable ({len(differing)} of {len(runs) + 1} runs under scaf differ: "
                 "its results depend on its team size)")
        _say(ck, f"  evidence, {first.name}" + (f" (teams {','.join(map(str, first.teams))}):"
                                                 if first.teams else ":"))
        for d in first.diffs:
            for ln in d.detail:
                _say(ck, "    " + ln)
        _say(ck, f"  the layer's rule says: {rule_says}")
        if lv is not None and not verdict_fixed:
            if lv.get("source") == "rules":
                msg = ("a rules file says it is malleable, but the check found a difference: change that rule, "
                       "or use --save (a rule for this path, placed first) or `scaf run --fixed`")
            else:
                msg = ("the rule would steer it but the check found a difference: use --save or "
                       "`scaf run --fixed`")
            result["disagreement"] = msg
            _say(ck, f"  DISAGREEMENT: {msg}")
        elif verdict_fixed:
            _say(ck, "  the layer agrees: it keeps this program's team fixed (steered by CPU affinity)")
        return finish("not malleable", EXIT_NOT_MALLEABLE)

    _say(ck, f"verdict: malleable (every run under scaf gave the plain run's results; teams "
             f"{','.join(map(str, teams))} tried, on this input only)")
    _say(ck, f"  the layer's rule says: {rule_says}")
    if verdict_fixed:
        if lv is not None and lv.get("source") == "rules":
            msg = ("a rules file keeps it fixed, but the check found no difference: if this input is "
                   "representative, change that rule, or use --save or `scaf run --malleable`")
        else:
            msg = ("the rule keeps its team fixed but the check found no difference: if this input is "
                   "representative, --save or `scaf run --malleable` lets scaf resize its team")
        result["disagreement"] = msg
        _say(ck, f"  DISAGREEMENT: {msg}")
    return finish("malleable", EXIT_MALLEABLE)


def _note(run: Run) -> str:
    return "same" if not run.diffs else "DIFFERENT: " + ", ".join(d.summary for d in run.diffs)


def _rule_says(lv: dict | None) -> str:
    if lv is None:
        return "unknown (the auto run opened no parallel region under the layer)"
    return f"{lv.get('verdict', '?')} — {lv.get('reason', '')} (decided by: {lv.get('source', '?')})"


def _say(ck: Checker, msg: str) -> None:
    if not ck.args.json:
        print(msg, flush=True)


def _program_with_regions(ck: Checker) -> tuple[str | None, str]:
    """The executable whose regions the check saw (what a rule must name), or None and why not.

    The layer matches rules against /proc/self/exe of the process that runs the
    regions: PROG itself, unless PROG is a script or a launcher (sh -c, taskset,
    env) that runs another program.
    """
    reports = [r for run in ck.runs if run.kind != "plain" for r in run.reports]
    exes = {os.path.realpath(r["exe"]) for r in reports if isinstance(r.get("exe"), str) and r["exe"]}
    if exes:  # the layer names it
        if len(exes) > 1:
            return None, f"several programs ran the parallel regions ({', '.join(sorted(exes))})"
        return exes.pop(), ""
    pids = {r.get("pid") for r in reports}
    if pids and not any(run.pid in pids for run in ck.runs):
        return None, f"the parallel regions ran in another process than {ck.argv[0]} (a script or a launcher?)"
    try:
        with open(ck.exe, "rb") as f:
            script = f.read(2) == b"#!"
    except OSError:
        script = False
    if script:
        return None, f"{ck.argv[0]} is a script: the parallel regions ran in a program it started"
    return ck.exe, ""


def _save(ck: Checker, result: dict, code: int) -> int:
    verdict = "malleable" if code == EXIT_MALLEABLE else "fixed"
    target = rules.save_target()
    if target is None:
        _err("--save: no rules file to write (HOME and XDG_CONFIG_HOME are unset)")
        return EXIT_SCAF
    exe, why = _program_with_regions(ck)
    if exe is None:
        _err(f"--save: not saved: {why}; a rule for {ck.argv[0]} would not reach them: write a rule for "
             "that program yourself (see scaf rules --help)")
        return EXIT_SCAF
    pattern = rules.pattern_for_path(exe)
    try:
        line = rules.set_rule(target, verdict, pattern, exe=exe)
    except (OSError, ValueError) as e:
        _err(f"--save: cannot write {target}: {getattr(e, 'strerror', None) or e}")
        return EXIT_SCAF
    result["saved"] = {"file": target, "line": line, "rule": f"{verdict} {pattern}"}
    if not ck.args.json:
        print(f"saved: {target}:{line}: {verdict} {pattern}")
    winner = rules.first_match(rules.load(), exe)
    if winner is None or (winner.file, winner.line) != (target, line):
        msg = f"{winner.where()}: {winner.text()}" if winner else "none"
        _err(f"--save: warning: the layer would still pick another rule ({msg})")
    if os.environ.get("SCAF_MALLEABLE", "").strip().lower() not in ("", "auto"):
        _err(f"--save: note: SCAF_MALLEABLE={os.environ['SCAF_MALLEABLE']} in your environment beats any rule")
    return code
