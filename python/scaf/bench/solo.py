"""`scaf bench solo`: each workload alone at each thread count (speedup curves)."""

from __future__ import annotations

import argparse
import sys

from scaf.bench import common, machine, store
from scaf.bench.runner import BenchError


def default_threads(n: int) -> list[int]:
    """1, 2, 4, ... up to n, and n itself."""
    out = []
    t = 1
    while t < n:
        out.append(t)
        t *= 2
    out.append(n)
    return out


def parse_threads(text: str) -> list[int]:
    try:
        vals = [int(t) for t in text.split(",") if t.strip()]
    except ValueError:
        raise BenchError(f"--threads wants a list of positive integers like 1,2,4, not {text!r}") from None
    if not vals or any(v < 1 or v > 4096 for v in vals):
        raise BenchError(f"--threads wants positive integers (at most 4096), not {text!r}")
    return sorted(set(vals))


def cmd_solo(args: argparse.Namespace) -> int:
    from scaf.bench import report

    try:
        workloads = common.resolve_workloads(args.workloads)
        cpus = common.bench_cpus(args.cpus, args.taskset)
        threads = parse_threads(args.threads) if args.threads else default_threads(len(cpus))
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
    return common.execute_then_report("solo", results, units, args.no_report,
                                      lambda: report.render(results.dir))


def register(sub: argparse._SubParsersAction, epilog: str) -> None:
    p = sub.add_parser(
        "solo",
        help="each workload alone at each thread count: speedup curves",
        description=("Run each workload alone with OMP_NUM_THREADS=T for each T, and report the "
                     "speedup over one thread as a table, solo.csv and solo_speedup.png."),
        epilog=epilog,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    common.add_common(p, "workloads to measure (default: every built workload)")
    p.add_argument("--threads", metavar="1,2,...",
                   help="thread counts (default 1, 2, 4, ... up to the number of CPUs)")
    p.set_defaults(func=cmd_solo)
