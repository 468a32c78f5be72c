"""`scaf bench solo|pairs|report|overhead`: measure workloads alone, in pairs under each configuration, and scaf's overhead."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

from scaf.lib.bench import (
    common,
    configs,
    machine,
    overhead,
    pairs,
    pools,
    runner,
    solo,
    stability,
    store,
    userprog,
)
from scaf.lib.bench import render as bench_render
from scaf.lib.bench.common import SIZES, Unit
from scaf.lib.bench.errors import BenchError
from scaf.lib.daemon import PrivateDaemon

EPILOG = """\
examples:
  scaf bench solo --workloads ep,cg --threads 1,2 --size S
  scaf bench pairs --size W                          every pair, every configuration
  scaf bench pairs --workloads ep,crit --configs unmodified,equipartition --size S --out /tmp/b
  scaf bench pairs --out /tmp/b ...                  the same --out again resumes an interrupted run
  scaf bench pairs --taskset 0-7 --daemon-arg=--no-lookout
  scaf bench pairs --program gm="gm convert -size 512x4096 gradient: -blur 0x20 out.ppm" \\
                   --program im="convert -size 256x4096 gradient: -blur 0x6 out.ppm" \\
                   --output gm=out.ppm --output im=out.ppm --configs unmodified,speedup
                                                     your own programs (here GraphicsMagick and
                                                     ImageMagick, both OpenMP): timed by wall clock,
                                                     judged by exit status, stdout and out.ppm
  scaf bench pairs --workloads crit,xgbhist,dtgroup --program xgboost-hist --program datatable \\
                   --configs unmodified,omp-dynamic,static,scaf,scaf-warm
                                                     scaf with its memory cold and warm against the
                                                     best a user could do without it
  scaf bench report /tmp/b                           tables, CSV and PNGs again from results.json
  scaf bench overhead --rounds 20                    plain libgomp vs layer+daemon, alternating
  scaf bench stability --workloads ep,crit --cpus 4  allocation changes per minute, mean threads
  scaf bench pools --frameworks loky,dask --sizes 3,2,2,1,1 --rounds 3
                                                     tasks of unequal length over a process pool

configurations (pairs):
  unmodified     plain libgomp, default threads (one per CPU of the bench's set)
  omp-dynamic    OMP_DYNAMIC=true: libgomp's own load-average heuristic
  static         OMP_NUM_THREADS = each program's half of the CPUs (an odd CPU goes to
                 the first), not pinned: the static split any user can type
  partition      static halves: each program pinned to half of the CPUs
  share2         OMP_NUM_THREADS = 2 x CPUs for each program (the oversubscription study)
  equipartition  a private scafd with the equipartition policy; programs run with the layer
  speedup        a private scafd with the speedup policy; programs run with the layer
  scaf           scaf as `scaf run` gives it: scafd's default policy (speedup), memory
                 cold; the runs of speedup, named for the table of cold against warm
                 (not in the default list)
  scaf-cpuset    scaf with scafd --placement cpuset: fixed teams that fit run pinned to
                 CPU sets of exactly their size, not where the kernel puts them (not in
                 the default list)
  consumption    the same with --policy consumption (not in the default list)
  fixed-gang     as speedup, both programs declared fixed: their teams kept, taking turns
                 when they do not fit (not in the default list)
  fixed-unconfined
                 the same with scafd --gang-quantum 0: fixed teams side by side,
                 unconfined (not in the default list)
  NAME-warm      any of scaf's configurations (equipartition, speedup, scaf, scaf-cpuset, consumption,
                 fixed-gang, fixed-unconfined) with the daemon's memory warm: the pair runs
                 once first, and the measured run's daemon reads what that run left
                 (`scaf bench pairs --help`; not in the default list)

output folder (--out): results.json (every raw run and the machine), report.json (every
figure of the tables), summary.csv, pairs.csv, improvement.csv, best_baseline.csv,
solo.csv, overhead.csv, resources.csv, report.md, and PNGs.
Formulas, resume semantics and thresholds: docs/bench.md in scaf's source tree.
"""


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "bench",
        help="benchmark workloads alone, in pairs under each configuration, or scaf's overhead",
        description=("Measure whether scaf helps on this machine: speedup curves of each workload "
                     "alone, every pair of workloads under each configuration, and the overhead "
                     "of the layer and daemon."),
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    kinds = p.add_subparsers(dest="bench_command", metavar="KIND")
    register_solo(kinds, EPILOG)
    register_pairs(kinds, EPILOG)
    register_report(kinds, EPILOG)
    register_overhead(kinds, EPILOG)
    register_stability(kinds, EPILOG)
    register_pools(kinds, EPILOG)

    def no_kind(args: argparse.Namespace) -> int:
        p.print_help(sys.stderr)
        return 2

    p.set_defaults(func=no_kind)


def _parsed(text: str, cast: type[int | float], what: str) -> float:
    try:
        return cast(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not {what}: {text!r}") from None


def positive_int(text: str) -> int:
    v = int(_parsed(text, int, "an integer"))
    if v < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {v}")
    return v


def nonneg_float(text: str) -> float:
    v = _parsed(text, float, "a number")
    if not 0 <= v <= 3600:
        raise argparse.ArgumentTypeError(f"must be between 0 and 3600, not {v}")
    return v


def positive_float(text: str) -> float:
    v = _parsed(text, float, "a number")
    if not v > 0:
        raise argparse.ArgumentTypeError(f"must be positive, not {v}")
    return v


def add_common(p: argparse.ArgumentParser, workloads_help: str) -> None:
    p.add_argument("--workloads", metavar="A,B,...", help=workloads_help)
    p.add_argument("--size", choices=SIZES, default="W", help="workload size (default W)")
    p.add_argument("--repeat", type=positive_int, default=1, metavar="R",
                   help="repetitions of each measurement (default 1); medians are reported")
    p.add_argument("--out", metavar="DIR", type=Path,
                   help="output folder (default results/<kind>-YYYYmmdd-HHMMSS); "
                        "an existing one is resumed")
    p.add_argument("--cpus", type=int, metavar="N", help="use only the first N CPUs of the set")
    p.add_argument("--taskset", metavar="LIST", help="use only these CPUs (e.g. 0-7)")
    p.add_argument("--timeout", type=positive_float, default=900, metavar="S",
                   help="kill a program that runs longer than S seconds (default 900)")
    p.add_argument("--retry-failed", action="store_true",
                   help="when resuming, run failed measurements again instead of keeping them")
    p.add_argument("--no-report", action="store_true", help="do not render tables and plots at the end")


def execute_then_report(command: str, results: store.Results, units: list[Unit], no_report: bool,
                        render: Callable[[], int]) -> int:
    """The end of solo and pairs: run what is left, say how to resume after Ctrl-C, then report."""
    try:
        common.execute(results, units)
    except KeyboardInterrupt:
        print(f"\nscaf bench {command}: interrupted; finished runs are in {results.path}; "
              f"rerun with --out {results.dir} to resume", file=sys.stderr)
        return 130
    return 0 if no_report else render()


def cmd_solo(args: argparse.Namespace) -> int:
    try:
        workloads = common.resolve_workloads(args.workloads)
        cpus = common.bench_cpus(args.cpus, args.taskset)
        threads = solo.parse_threads(args.threads) if args.threads else solo.default_threads(len(cpus))
        if 1 not in threads:
            threads = [1, *threads]  # speedups are relative to one thread
        out = args.out or common.default_out("solo")
        params = {"size": args.size, "cpus": machine.format_cpulist(cpus)}
        results = store.Results(out, params, machine.describe(), args.retry_failed)
    except (BenchError, store.ResultsError) as e:
        print(f"scaf bench solo: {e}", file=sys.stderr)
        return 2
    tag = common.new_tag()
    units = [common.solo_unit(w, t, r, args.size, cpus, tag, args.timeout)
             for r in range(args.repeat) for w in workloads for t in threads]
    print(f"scaf bench solo: {len(workloads)} workloads x threads {','.join(map(str, threads))} x "
          f"{args.repeat} on CPUs {machine.format_cpulist(cpus)}, size {args.size} -> {results.dir}",
          file=sys.stderr)
    return execute_then_report("solo", results, units, args.no_report,
                               lambda: bench_render.render(results.dir))


def register_solo(sub: argparse._SubParsersAction, epilog: str) -> None:
    p = sub.add_parser(
        "solo",
        help="each workload alone at each thread count: speedup curves",
        description=("Run each workload alone with OMP_NUM_THREADS=T for each T, and report the "
                     "speedup over one thread as a table, solo.csv and solo_speedup.png."),
        epilog=epilog,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_common(p, "workloads to measure (default: every built workload)")
    p.add_argument("--threads", metavar="1,2,...",
                   help="thread counts (default 1, 2, 4, ... up to the number of CPUs)")
    p.set_defaults(func=cmd_solo)


def bench_workloads(args: argparse.Namespace, programs: dict) -> list[str]:
    """The built workloads asked for (all by default, none when --program is given) and the programs."""
    if programs and not args.workloads:
        return list(programs)
    return [*common.resolve_workloads(args.workloads), *programs]


def cmd_pairs(args: argparse.Namespace) -> int:
    try:
        wanted = configs.parse_configs(args.configs, args.daemon_arg)
        programs = userprog.from_args(args, common.available_workloads)
        workloads = bench_workloads(args, programs)
        cpus = common.bench_cpus(args.cpus, args.taskset)
        common.check_built(any(configs.CONFIGS[c].policy for c in wanted))
        out = args.out or common.default_out("bench")
        params = {"size": args.size, "stagger_s": args.stagger, "cpus": machine.format_cpulist(cpus),
                  "programs": {n: p.text for n, p in programs.items()} or None}
        results = store.Results(out, params, machine.describe(), args.retry_failed)
    except (BenchError, store.ResultsError, ValueError) as e:
        print(f"scaf bench pairs: {e}", file=sys.stderr)
        return 2
    restricted = args.cpus is not None or args.taskset is not None
    tag = common.new_tag()
    units: list[Unit] = []
    # Serial times first: speedup = serial time / time in the pair.
    for r in range(args.repeat):
        for w in workloads:
            units.append(common.solo_unit(w, 1, r, args.size, cpus, tag, args.timeout, programs))
    daemon_args = list(args.daemon_arg or [])
    for r in range(args.repeat):
        for a, b in pairs.pairs_of(workloads):
            # Configurations of one pair back to back: slow drift of the machine hits them alike.
            for c in wanted:
                units.append(pairs.pair_unit(a, b, c, r, args.size, args.stagger, cpus, restricted,
                                       results.dir, tag, args.timeout, daemon_args, programs))
    print(f"scaf bench pairs: {len(pairs.pairs_of(workloads))} pairs x {len(wanted)} configurations x "
          f"{args.repeat} on CPUs {machine.format_cpulist(cpus)}, size {args.size}, "
          f"stagger {args.stagger:g} s -> {results.dir}", file=sys.stderr)
    return execute_then_report("pairs", results, units, args.no_report,
                               lambda: bench_render.render(results.dir, candidate_name=args.candidate))


# Wrapped by hand: the formatter keeps the epilog's layout, and so this text's.
PAIRS_DESCRIPTION = """\
Run every pair of workloads (unordered, a workload with itself included): the
second starts STAGGER seconds after the first. Each pair runs under each
configuration. Per program, speedup = its serial time (1 thread, alone) / its
time in the pair; a pair's sum of speedups adds its two programs'.

The summary compares the sum of speedups under the candidate configuration
(speedup, else scaf, else equipartition; --candidate) with each other
configuration but its warm twin (below): per pair the factor sum(candidate) /
sum(baseline), the pairs it wins (>= 1.05) and loses (< 0.95), and the
geometric mean of each class.

Another table sets the candidate against the best a user could do without
scaf. Per pair: the best baseline (the highest sum of unmodified, omp-dynamic,
static and partition, among those that ran and worked), its sum and the
candidate's, the factors sum(candidate) / sum(best) and sum(candidate) /
sum(unmodified), and BELOW where the candidate is more than 5% under the best;
its last row gives the geometric means of both factors over the pairs. The
summary counts wins and losses against that best too (baseline "best").

memory, cold and warm:
  The daemon remembers programs between runs: a program it learned is fixed
  starts with its share, a site it learned is clean is steered from its first
  region. Each private scafd of the bench keeps that memory in a temporary
  state directory of its own, removed after it (unless --daemon-arg names
  --state-dir or --no-memory): a bench never reads or writes your memory, and
  your own past runs never warm a measurement.

  cold   (every scaf configuration) the daemon starts on an empty memory, as
         for a program's first run. Two copies of one program in a pair share
         what the daemon learns: a second copy that starts after the first
         one left finds it.
  warm   (NAME-warm) the pair first runs once under the same configuration
         (the priming run: recorded as `prime` in results.json, not measured)
         on a daemon with a fresh state directory; that daemon is stopped,
         which writes its memory to disk, and a fresh daemon started on the
         same directory runs the measured pair: the memory is read from disk,
         as after a restart or on the next day. A priming run that failed,
         or left no memory, fails the measurement (it is not run).

  Under scaf's configurations each program starts as `scaf run` starts it:
  the layer for its runtime (and oneTBB's TCM), the runtime's waiting
  settings and, when the daemon remembers it fixed (or it is declared fixed),
  OMP_NUM_THREADS=T and SCAF_START_TEAM=T, T its share when it starts: the
  daemon is asked at that moment, beside the program already running.
  results.json keeps per program what was recalled (`recall`: team and why)
  and what the daemon remembered of it at its arrival (`memory`).

  With the candidate's warm twin in the run (scaf and scaf-warm, speedup and
  speedup-warm, ...), the table against the best baseline has both: the sum,
  the factor over the best and over unmodified for cold and for warm, WARM
  BELOW where warm is more than 5% under the best, and COLD < PLAIN where cold
  is under unmodified. The warm twin is not one of the summary's baselines.
"""


def register_pairs(sub: argparse._SubParsersAction, epilog: str) -> None:
    p = sub.add_parser(
        "pairs",
        help="every pair of workloads under each configuration; speedup sums and wins/losses",
        description=PAIRS_DESCRIPTION,
        epilog=epilog,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_common(p, "workloads to pair (default: every built workload; none with --program)")
    userprog.add_arguments(p)
    p.add_argument("--configs", default=",".join(configs.DEFAULT_CONFIGS), metavar="C,C,...",
                   help=f"configurations (default: {','.join(configs.DEFAULT_CONFIGS)}; also "
                        f"{','.join(c for c in configs.CONFIGS if c not in configs.DEFAULT_CONFIGS)}; "
                        "each is described below)")
    p.add_argument("--stagger", type=nonneg_float, default=1.0, metavar="S",
                   help="seconds between the first and the second program's start (default 1)")
    p.add_argument("--candidate", metavar="C",
                   help="configuration compared with the others (default speedup, else scaf, else "
                        "equipartition); its warm twin, when it ran, has columns of its own")
    p.add_argument("--daemon-arg", action="append", metavar="ARG",
                   help="extra scafd option for the private daemons (repeatable), "
                        "e.g. --daemon-arg=--no-lookout")
    p.set_defaults(func=cmd_pairs)


def cmd_report(args: argparse.Namespace) -> int:
    try:
        return bench_render.render(args.dir, args.candidate)
    except store.ResultsError as e:
        print(f"scaf bench report: {e}", file=sys.stderr)
        return 2


def register_report(sub: argparse._SubParsersAction, epilog: str) -> None:
    p = sub.add_parser(
        "report",
        help="re-render every table, CSV and plot of a bench folder from its results.json",
        description=("Re-render the tables (printed and report.md), summary.csv, pairs.csv, "
                     "improvement.csv, solo.csv, overhead.csv and the PNGs of a bench folder "
                     "from its results.json alone, without running anything."),
        epilog=epilog,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("dir", type=Path, metavar="DIR", help="a folder written by scaf bench")
    p.add_argument("--candidate", metavar="C",
                   help="configuration compared with the others (default speedup, else equipartition)")
    p.set_defaults(func=cmd_report)


def cmd_overhead(args: argparse.Namespace) -> int:
    variants = dict(overhead.VARIANTS)
    if args.feedback:
        variants.update(overhead.FEEDBACK_VARIANTS)
    try:
        workloads = common.resolve_workloads(args.workload)
        if len(workloads) != 1:
            raise BenchError("--workload takes one workload")
        common.check_built(True)
        cpus = common.bench_cpus(args.cpus, args.taskset)
        out = args.out or common.default_out("overhead")
        params = {"size": args.size, "cpus": machine.format_cpulist(cpus), "workload": workloads[0]}
        results = store.Results(out, params, machine.describe(), args.retry_failed)
    except (BenchError, store.ResultsError) as e:
        print(f"scaf bench overhead: {e}", file=sys.stderr)
        return 2
    tag = common.new_tag()
    daemon: list[PrivateDaemon | None] = [None]
    # Alternate the variants round by round (ABCABC...) so that drift of the machine hits all alike.
    units = [overhead.overhead_unit(v, spec, r, workloads[0], args.size, cpus, tag, args.timeout, daemon)
             for r in range(args.rounds) for v, spec in variants.items()]
    print(f"scaf bench overhead: {workloads[0]} size {args.size}, {args.rounds} rounds of "
          f"{', '.join(variants)} -> {results.dir}", file=sys.stderr)
    restricted = args.cpus is not None or args.taskset is not None
    try:
        try:
            # Without --lookout the daemon ignores other load, so that the program gets the same
            # team as plain libgomp and the ratio measures the layer's cost, not a smaller team.
            extra = list(args.daemon_arg or []) + ([] if args.lookout else ["--no-lookout"])
            daemon[0] = runner.start_daemon(args.policy, cpus, len(cpus) if restricted else None,
                                           results.dir / "overhead.alloc.jsonl", extra, tag)
            common.execute(results, units)
        finally:
            if daemon[0] is not None:
                daemon[0].finish()
    except BenchError as e:
        print(f"scaf bench overhead: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"\nscaf bench overhead: interrupted; finished rounds are in {results.path}",
              file=sys.stderr)
        return 130
    if args.no_report:
        return 0
    return bench_render.render(results.dir)


def register_overhead(sub: argparse._SubParsersAction, epilog: str) -> None:
    p = sub.add_parser(
        "overhead",
        help="scaf's overhead: one workload alone, plain vs layer vs layer+daemon, alternating",
        description=(
            "Run one workload alone, round after round, once per variant in each round: plain "
            "libgomp; the layer preloaded with no daemon (inert); the layer with a private "
            "daemon (scaf). --feedback adds the layer with estimation off (SCAF_ESTIMATE=0) and "
            "with serial experiments although the program is alone (SCAF_LAZY=0). The report "
            "gives each variant's median time and the median over rounds of its time divided by "
            "the plain time of the same round."
        ),
        epilog=epilog,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--workload", default="regions", help="the workload (default regions)")
    p.add_argument("--rounds", type=positive_int, default=10, metavar="N",
                   help="rounds (default 10)")
    p.add_argument("--feedback", action="store_true",
                   help="also measure estimation off and eager experiments")
    p.add_argument("--policy", default="speedup", help="the private daemon's policy (default speedup)")
    p.add_argument("--lookout", action="store_true",
                   help="let the daemon count other processes' load (default --no-lookout, so that "
                        "the program gets the same team as plain libgomp)")
    p.add_argument("--daemon-arg", action="append", metavar="ARG", help="extra scafd option (repeatable)")
    p.add_argument("--size", choices=SIZES, default="W", help="workload size (default W)")
    p.add_argument("--out", type=Path, metavar="DIR",
                   help="output folder (default results/overhead-YYYYmmdd-HHMMSS); an existing one is resumed")
    p.add_argument("--cpus", type=int, metavar="N", help="use only the first N CPUs")
    p.add_argument("--taskset", metavar="LIST", help="use only these CPUs")
    p.add_argument("--timeout", type=positive_float, default=900, metavar="S", help="per-run limit (default 900)")
    p.add_argument("--retry-failed", action="store_true", help="rerun failed rounds when resuming")
    p.add_argument("--no-report", action="store_true", help="do not render the tables at the end")
    p.set_defaults(func=cmd_overhead)


def cmd_stability(args: argparse.Namespace) -> int:
    import json
    import tempfile

    try:
        workloads = common.resolve_workloads(args.workloads)
        common.check_built(True)
    except (BenchError, ValueError) as e:
        print(f"scaf bench stability: {e}", file=sys.stderr)
        return 2
    rows = []
    with tempfile.TemporaryDirectory(prefix="scaf-stab-") as tmp:
        for r in range(args.repeat):
            try:
                res = stability.measure(workloads, args.policy, args.cpus or 4, args.size, args.settle,
                                        args.seconds, Path(tmp) / f"alloc.{r}.jsonl", list(args.daemon_arg or []))
            except BenchError as e:
                print(f"scaf bench stability: {e}", file=sys.stderr)
                return 1
            rows.append(res)
            means = "  ".join(f"{k} {v:.2f}" for k, v in res["avg_threads"].items())
            print(f"run {r + 1}: {res['seconds']:.1f} s, {res['changes']} changes "
                  f"({res['changes_per_min']:.1f}/min), mean threads: {means}"
                  + ("  (a program ended early)" if res["ended_early"] else ""))
            for name, by_p in res["efficiency"].items():
                print(f"  {name} E by p': " + "  ".join(f"p'={pp}: {v['mean']:.2f} sd {v['sd']:.2f} (n={v['n']})"
                                                       for pp, v in by_p.items()))
    if args.json:
        print(json.dumps(rows))
    return 0


def register_stability(sub: argparse._SubParsersAction, epilog: str) -> None:
    p = sub.add_parser(
        "stability",
        help="programs together under one policy: allocation changes per minute, mean threads each",
        description=("Run the workloads together under a private scafd (--cpus N contexts, no lookout), "
                     "let the estimates settle, then read the daemon's allocation log over a window: "
                     "how often the allocation changed and each program's time-averaged thread count."),
        epilog=epilog,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--workloads", metavar="A,B,...", default="ep,crit", help="programs run together (default ep,crit)")
    p.add_argument("--policy", default="speedup", help="the daemon's policy (default speedup)")
    p.add_argument("--cpus", type=positive_int, metavar="N", help="the daemon's --cpus (default 4)")
    p.add_argument("--size", choices=SIZES, default="A", help="workload size (default A: long enough)")
    p.add_argument("--settle", type=nonneg_float, default=5.0, metavar="S",
                   help="seconds after both are clients before the window opens (default 5)")
    p.add_argument("--seconds", type=positive_float, default=20.0, metavar="S", help="window (default 20)")
    p.add_argument("--repeat", type=positive_int, default=1, metavar="R", help="runs (default 1)")
    p.add_argument("--daemon-arg", action="append", metavar="ARG", help="extra scafd argument (repeatable)")
    p.add_argument("--json", action="store_true", help="also print every run as one JSON line")
    p.set_defaults(func=cmd_stability)


def cmd_pools(args: argparse.Namespace) -> int:
    try:
        fws = [f.strip() for f in args.frameworks.split(",") if f.strip()]
        cfgs = [c.strip() for c in args.configs.split(",") if c.strip()]
        bad = [f for f in fws if f not in pools.FRAMEWORKS] + [c for c in cfgs if c not in pools.CONFIGS]
        if bad or not fws or not cfgs:
            raise BenchError(f"unknown framework or configuration: {', '.join(bad) or '(none given)'}; "
                             f"frameworks {','.join(pools.FRAMEWORKS)}, configurations {','.join(pools.CONFIGS)}")
        sizes = pools.parse_sizes(args.sizes)
        if {"scaf", "scaf-warm"} & set(cfgs):
            common.check_built(True)
    except BenchError as e:
        print(f"scaf bench pools: {e}", file=sys.stderr)
        return 2
    out = args.out or common.default_out("pools")
    print(f"scaf bench pools: {','.join(fws)} x {','.join(cfgs)} x {args.rounds}, {args.task} tasks {args.sizes} "
          f"over {args.workers} workers -> {out}", file=sys.stderr)
    try:
        return pools.measure(fws, cfgs, args.task, args.workers, sizes, args.rounds, out, args.python,
                             args.timeout, common.new_tag())
    except KeyboardInterrupt:
        print(f"\nscaf bench pools: interrupted; finished runs are in {out}/results.json", file=sys.stderr)
        return 130


def register_pools(sub: argparse._SubParsersAction, epilog: str) -> None:
    p = sub.add_parser(
        "pools",
        help="tasks of unequal length over a process pool (loky, Dask, multiprocessing): makespans side by side",
        description=("Run N tasks of unequal length (scikit-learn fits: OpenMP; or numpy products: BLAS) over a "
                     "process pool of K workers, under the framework's default, its guard off, a static split "
                     "and scaf run; report each configuration's median makespan, scaf's ratio to it, and whether "
                     "every run computed what the default did. The pool program needs scikit-learn, joblib and "
                     "dask in the Python that runs it (--python). Configurations: "
                     + "; ".join(f"{k}: {v}" for k, v in pools.CONFIG_HELP.items())),
        epilog=epilog,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--frameworks", default="loky,dask,mp", metavar="F,F,...",
                   help=f"pools to measure (default loky,dask,mp; of {','.join(pools.FRAMEWORKS)})")
    p.add_argument("--configs", default=",".join(pools.DEFAULT_CONFIGS), metavar="C,C,...",
                   help=f"configurations (default {','.join(pools.DEFAULT_CONFIGS)}; of {','.join(pools.CONFIGS)})")
    p.add_argument("--task", choices=("hgb", "matmul"), default="hgb",
                   help="each task: a HistGradientBoosting fit (OpenMP, default) or numpy products (BLAS)")
    p.add_argument("--workers", type=positive_int, default=2, metavar="K", help="pool workers (default 2)")
    p.add_argument("--sizes", default="3,2,2,1,1", metavar="S,S,...",
                   help="task sizes, one task each (default 3,2,2,1,1; 1 is about 0.8 s of one thread here)")
    p.add_argument("--rounds", type=positive_int, default=3, metavar="R", help="rounds (default 3); medians")
    p.add_argument("--python", default=sys.executable, metavar="PY",
                   help="the Python that runs the pool program (default: the one running scaf)")
    p.add_argument("--timeout", type=positive_float, default=600, metavar="S", help="per-run limit (default 600)")
    p.add_argument("--out", metavar="DIR", type=Path, help="output folder (default results/pools-YYYYmmdd-HHMMSS)")
    p.set_defaults(func=cmd_pools)
