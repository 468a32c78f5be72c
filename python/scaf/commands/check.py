"""`scaf check`: does a program give the same results when scaf changes its team sizes?"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import shutil
import sys
import tempfile
from pathlib import Path

from scaf.lib import autostart, paths, procs, progkey, proto, rules, sockpath
from scaf.lib.check import (
    EXIT_MALLEABLE,
    EXIT_NOT_MALLEABLE,
    EXIT_SCAF,
    EXIT_USAGE,
    CannotRun,
    Checker,
    Run,
)
from scaf.lib.launch import resolve

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

The daemon remembers the verdict for PROG as `scaf run -- PROG ARGS` would
name it (its build ID, and an interpreter's script; a new build is another
program), and later runs of PROG use it (docs/memory.md in scaf's source
tree):
  - malleable: the layer takes it as your word, as it takes a `malleable`
    rule. PROG starts with its own count (not a share) and its regions are
    steered from the first one, whatever the layer's evidence rule would
    have said (a num_threads clause of another count still stands), and
    `scaf status -v` says "scaf check found it malleable (remembered)". Your
    own word still wins: `scaf run --fixed`, SCAF_MALLEABLE=no or a `fixed`
    rule keep its team, and `scaf run --no-memory` (SCAF_MEMORY=0) recalls
    nothing, so the evidence decides as before. Record it only when the
    input you check is representative: malleable on one input is not a
    proof (see the limits below).
  - not malleable: PROG is started with its share of the machine by later
    `scaf run`s (and by the layer at its first OpenMP call), and keeps it.
It is recorded for the program that ran the parallel regions, as the layer
named it: R's engine running the script for `Rscript S.R`, the program a
shell script or `sh -c` execs. No later run's evidence replaces what the
check recorded; check again to change it. The runs of the check themselves
are not remembered.
--no-memory records nothing; `scaf forget -- PROG` forgets it. When no
daemon answers on your own socket, one is started to record it (as scaf run
starts one); on another socket none is.

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
--json prints one JSON object instead (fields: docs/cli.md in scaf's source tree).

environment:
  OMP_NUM_THREADS   kept (and set by --threads): the largest team tried
  SCAF_RULES, XDG_CONFIG_HOME, HOME
                    where the layer's rules files are (see `scaf rules --help`);
                    the auto run obeys them, --save writes to the first
  SCAF_CHECK_SEED, SCAF_REPORT, SCAF_MALLEABLE, SCAF_DISABLE, SCAF_SOCKET, SCAF_MEMORY
                    set by the check for each run; values of your own are dropped
                    (SCAF_SOCKET: the daemon the verdict is recorded with)

examples:
  scaf check -- ./my_solver input.dat
  scaf check --threads 4 -- ./my_solver input.dat     teams 1..4 on a 2-core machine
  scaf check --ignore '^time' --ignore 'elapsed' -- ./bench --small
                                                      mask lines that hold times
  scaf check --output result.csv -- ./sim --out result.csv
                                                      compare a file it writes too
  scaf check --save -- ./my_solver input.dat          record the verdict as a rule
  scaf check --no-memory -- ./my_solver input.dat     do not record the verdict in the daemon's memory
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
              "                  [--timeout S] [--json] [--keep] [--save] [--no-memory] -- PROG [ARGS...]",
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
    p.add_argument("--no-memory", action="store_true",
                   help="do not record the verdict in the daemon's memory (by default it is, for the program "
                        "that ran the parallel regions)")
    p.add_argument("argv", nargs=argparse.REMAINDER, metavar="-- PROG ARGS", help="the program and its arguments")
    p.set_defaults(func=main, _parser=p)


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

    workdir = tempfile.mkdtemp(prefix="scaf-check-", dir="/tmp")
    ck = Checker(argv, exe, workdir, ignore=args.ignore, outputs=args.output, threads=args.threads,
                 timeout=args.timeout, keep=args.keep)
    try:
        with procs.interruptible():
            if not args.json:
                threads = f"OMP_NUM_THREADS={args.threads}, " if args.threads else ""
                print(f"scaf check: {shlex.join(ck.argv)}  ({threads}teams 1..{ck.bound()}, "
                      f"{args.seeds} seed{'s' if args.seeds != 1 else ''}, timeout {args.timeout:g} s)", flush=True)
            result = ck.check(args.seeds, lambda run, note: _line(args, run, note), lambda msg: _say(args, msg),
                              _err)
    except CannotRun as e:
        _err(str(e))
        return EXIT_USAGE
    finally:
        if ck.daemon is not None:
            ck.daemon.finish()
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)
    code = result["exit"]
    if args.save and code in (EXIT_MALLEABLE, EXIT_NOT_MALLEABLE):
        code = _save(ck, args, result, code)
    elif args.save:
        result["saved"] = None
        if not args.json:
            print("--save: nothing saved (no verdict)")
    if code in (EXIT_MALLEABLE, EXIT_NOT_MALLEABLE) and not args.no_memory:
        result["remembered"] = _remember(ck, args, path, argv, code)
    else:
        result["remembered"] = None
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


def _line(args: argparse.Namespace, run: Run, note: str) -> None:
    if args.json:
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


def _say(args: argparse.Namespace, msg: str) -> None:
    if not args.json:
        print(msg, flush=True)


def _remember(ck: Checker, args: argparse.Namespace, path: str, argv: list[str], code: int) -> dict | None:
    """REMEMBER the verdict with the daemon (its memory, docs/memory.md), for PROG as scaf run would start it.
    Returns what was recorded, or None with one line on stderr saying why not; never changes the exit status."""
    verdict = "malleable" if code == EXIT_MALLEABLE else "fixed"
    key: progkey.ProgKey | None = None
    named: Exception | None = None
    try:
        exe, words = progkey.command(path, argv)
        key = progkey.key_of(exe, words)
    except (OSError, progkey.KeyLibraryMissing) as e:
        named = e
    # The verdict is of the program that ran the regions: its key as the layer itself reported it, so that
    # the record is found whatever starts the program (a launcher, a shell script, Rscript).
    reported = ck.program_key()
    if reported is not None:
        number, name = reported
        forget = f"scaf forget -- {shlex.join(argv)}" if key is not None and key.key == number else "scaf forget"
    else:
        if key is None:
            _err(f"not remembered: {argv[0]} cannot be named ({named})")
            return None
        ran, why = ck.program_with_regions()
        if ran is None or os.path.realpath(ran) != os.path.realpath(exe):
            _err(f"not remembered: {why or f'the parallel regions ran in {ran}, not in {exe}'}")
            return None
        if key.key == 0:
            _err(f"not remembered: {key.name} cannot be named (its code comes from stdin or a terminal)")
            return None
        number, name, forget = key.key, key.name, f"scaf forget -- {shlex.join(argv)}"
    sock = sockpath.default_socket()
    got = autostart.daemon_for(sock, autostart.own_socket(sock))
    if got.problem:
        _err(f"not remembered: {got.message}")
        return None
    if got.started:
        _err(f"{autostart.started_line(got.started)} (to record the verdict)")
    try:
        r = proto.memory(sock, proto.MEMORY_REMEMBER, key=number,
                         verdict=proto.VERDICT_MALLEABLE if verdict == "malleable" else proto.VERDICT_FIXED,
                         name=name.encode())
    except (proto.DaemonUnavailable, proto.UntrustedDaemon) as e:
        _err(f"not remembered: {e}")
        return None
    if r.status != proto.MEMORY_OK:
        said = "keeps no memory" if r.status == proto.MEMORY_OFF else f"could not record it (status {r.status})"
        _err(f"not remembered: the daemon on {sock} {said}")
        return None
    if not args.json:
        after = ("scaf run starts it with its share from now on" if verdict == "fixed" else
                 "its later runs are steered as a `malleable` rule would steer them; --fixed still wins")
        print(f"remembered: {name} {verdict} ({after}; {forget} forgets it)")
    return {"name": name, "key": f"{number:016x}", "verdict": verdict, "socket": sock}


def _save(ck: Checker, args: argparse.Namespace, result: dict, code: int) -> int:
    verdict = "malleable" if code == EXIT_MALLEABLE else "fixed"
    target = rules.save_target()
    if target is None:
        _err("--save: no rules file to write (HOME and XDG_CONFIG_HOME are unset)")
        return EXIT_SCAF
    exe, why = ck.program_with_regions()
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
    if not args.json:
        print(f"saved: {target}:{line}: {verdict} {pattern}")
    winner = rules.find(exe)
    if winner is None or (winner.file, winner.line) != (target, line):
        msg = f"{winner.where()}: {winner.text()}" if winner else "none"
        _err(f"--save: warning: the layer would still pick another rule ({msg})")
    if os.environ.get("SCAF_MALLEABLE", "").strip().lower() not in ("", "auto"):
        _err(f"--save: note: SCAF_MALLEABLE={os.environ['SCAF_MALLEABLE']} in your environment beats any rule")
    return code
