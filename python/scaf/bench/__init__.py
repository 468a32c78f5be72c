"""`scaf bench`: measure workloads alone, in pairs under each configuration, and scaf's overhead."""

from __future__ import annotations

import argparse
import sys

EPILOG = """\
examples:
  scaf bench solo --workloads ep,cg --threads 1,2 --size S
  scaf bench pairs --size W                          every pair, every configuration
  scaf bench pairs --workloads ep,crit --configs unmodified,equipartition --size S --out /tmp/b
  scaf bench pairs --out /tmp/b ...                  the same --out again resumes an interrupted run
  scaf bench pairs --taskset 0-7 --daemon-arg=--no-lookout
  scaf bench report /tmp/b                           tables, CSV and PNGs again from results.json
  scaf bench overhead --rounds 20                    plain libgomp vs layer+daemon, alternating

configurations (pairs):
  unmodified     plain libgomp, default threads (one per CPU of the bench's set)
  omp-dynamic    OMP_DYNAMIC=true: libgomp's own load-average heuristic
  partition      static halves: each program pinned to half of the CPUs
  share2         OMP_NUM_THREADS = 2 x CPUs for each program (the oversubscription study)
  equipartition  a private scafd with the equipartition policy; programs run with the layer
  speedup        a private scafd with the speedup policy; programs run with the layer

output folder (--out): results.json (every raw run and the machine), summary.csv,
pairs.csv, improvement.csv, solo.csv, overhead.csv, report.md, and PNGs.
Formulas, resume semantics and thresholds: docs/bench.md.
"""


def register(sub: argparse._SubParsersAction) -> None:
    from scaf.bench import overhead, pairs, report, solo

    p = sub.add_parser(
        "bench",
        help="benchmark workloads alone, in pairs under each configuration, or scaf's overhead",
        description=("Measure whether scaf helps on this machine: speedup curves of each workload "
                     "alone, every pair of workloads under six configurations, and the overhead "
                     "of the layer and daemon."),
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    kinds = p.add_subparsers(dest="bench_command", metavar="KIND")
    solo.register(kinds, EPILOG)
    pairs.register(kinds, EPILOG)
    report.register(kinds, EPILOG)
    overhead.register(kinds, EPILOG)

    def no_kind(args: argparse.Namespace) -> int:
        p.print_help(sys.stderr)
        return 2

    p.set_defaults(func=no_kind)
