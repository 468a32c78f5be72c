"""`scaf sim`: simulate a multiprogrammed machine driven by the daemon's own policy code.

Submodules: model (machine, programs, curves), scenario (TOML format and
validation), engine (the simulation loop), oracle (reference allocators),
report (table, JSON, CSV, PNG), sweep (machine sizes x noise).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from typing import Any

EPILOG = """\
configurations:
  unmodified      every program runs one thread per context; the OS time-slices them
  equipartition   the real equipartition policy (libscaf_policy.so)
  speedup         the real speedup policy, fed noisy filtered efficiency reports
  consumption     the real consumption policy (--min-gain): it may leave contexts idle
  oracle-static   the best fixed partition, by exhaustive search (2-3 programs)
  oracle-dynamic  greedy marginal gain on the true curves at every tick; a team
                  fixed at start gets its greedy share once, at its arrival, and
                  keeps it (never squeezed); foreign programs' threads left out
  static          asked for by name: the static split, OMP_NUM_THREADS = an equal
                  share for each program from its start, a pool's share split
                  between its workers (a foreign program keeps its own count)
  framework       asked for by name: each pool's own rule (rule = "loky":
                  cpu_count() // workers threads per worker; "dask": one), the
                  other programs plain; a pool's makespan is compared with it

A program with foreign = true is not under scaf in any configuration: it runs its
own count, and the daemon sees it only as foreign load, through scafd's lookout.

examples:
  scaf sim list
  scaf sim run cg-lu-36
  scaf sim run three-way-64 --json
  scaf sim run my.toml --out results/sim --configs equipartition,speedup
  scaf sim run pools-dask-16 --contexts 64 --configs framework,speedup,oracle-dynamic
  scaf sim check my.toml
  scaf sim sweep cg-lu-36 --contexts 16,32,64,128,256 --noise 0,0.05,0.1
  scaf sim sweep all --contexts 16,32,64,128,256

Scenario format and the model: docs/simulator.md in scaf's source tree.
"""


def _list_ints(text: str) -> list[int]:
    try:
        vals = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {text!r}") from None
    if not vals or any(v < 1 or v > 4096 for v in vals):
        raise argparse.ArgumentTypeError(f"expected integers in [1, 4096], got {text!r}")
    return vals


def _contexts(text: str) -> int:
    vals = _list_ints(text)
    if len(vals) != 1:
        raise argparse.ArgumentTypeError(f"expected one integer in [1, 4096], got {text!r}")
    return vals[0]


def _list_floats(text: str) -> list[float]:
    try:
        vals = [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated numbers, got {text!r}") from None
    if not vals or any(not 0 <= v <= 10 for v in vals):
        raise argparse.ArgumentTypeError(f"expected numbers in [0, 10], got {text!r}")
    return vals


def _configs(text: str) -> list[str]:
    from scaf.lib.sim.model import CONFIGS, EXTRA_CONFIGS

    vals = [x.strip() for x in text.split(",") if x.strip()]
    bad = [v for v in vals if v not in (*CONFIGS, *EXTRA_CONFIGS)]
    if not vals or bad:
        raise argparse.ArgumentTypeError(f"unknown configuration {', '.join(bad) or text!r}; "
                                         f"choose from {', '.join((*CONFIGS, *EXTRA_CONFIGS))}")
    return vals


def _seeds(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        v = 0
    if not 1 <= v <= 100:
        raise argparse.ArgumentTypeError(f"expected a whole number from 1 to 100, got {text!r}")
    return v


def _min_gain(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        v = math.nan
    if not 0.001 <= v <= 1:  # NaN fails too
        raise argparse.ArgumentTypeError(f"expected a number from 0.001 to 1, got {text!r}")
    return v


def register(sub: Any) -> None:
    p = sub.add_parser(
        "sim",
        help="simulate scaf's policies on a modelled machine (16-256 contexts)",
        description="Simulate programs sharing a modelled machine under each configuration, with the "
                    "daemon's own policy code, and compare them (and the original's numbers).",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    s = p.add_subparsers(dest="sim_command", metavar="ACTION")

    q = s.add_parser("list", help="the shipped scenarios", epilog="example:\n  scaf sim list",
                     formatter_class=argparse.RawDescriptionHelpFormatter)
    q.set_defaults(func=cmd_list)

    q = s.add_parser("check", help="validate a scenario file", epilog="example:\n  scaf sim check my.toml",
                     formatter_class=argparse.RawDescriptionHelpFormatter)
    q.add_argument("scenario", metavar="NAME|FILE.toml")
    q.set_defaults(func=cmd_check)

    q = s.add_parser("run", help="simulate one scenario under every configuration", epilog=EPILOG,
                     formatter_class=argparse.RawDescriptionHelpFormatter)
    q.add_argument("scenario", metavar="NAME|FILE.toml", help="a shipped scenario's name or a TOML file")
    q.add_argument("--json", action="store_true", help="print results as JSON on stdout")
    q.add_argument("--out", metavar="DIR", type=Path,
                   help="write results.json, timeline.csv and timeline.png into DIR")
    q.add_argument("--configs", type=_configs, metavar="LIST", help="comma-separated subset of configurations")
    q.add_argument("--seed", type=int, help="override the scenario's noise seed")
    q.add_argument("--contexts", type=_contexts, metavar="N",
                   help="run the scenario on a machine of N contexts instead of its own, as the sweep scales it "
                        "(default teams follow the machine, explicit ones are capped)")
    q.add_argument("--min-gain", type=_min_gain, default=0.5, metavar="G",
                   help="the consumption configuration's threshold: the least marginal speedup a context "
                        "must add (scafd's option of the same name; 0.001 to 1, default 0.5)")
    q.set_defaults(func=cmd_run)

    q = s.add_parser("sweep", help="scenarios across machine sizes and noise levels",
                     epilog="examples:\n  scaf sim sweep cg-lu-36 --contexts 16,32,64,128,256 --noise 0,0.05,0.1\n"
                            "  scaf sim sweep all --contexts 16,32,64,128,256\n"
                            "  scaf sim sweep smt-pair-16 --seeds 6   the mean and worst gap over 6 noise seeds\n\n"
                            "Default teams follow the machine size; --noise replaces every program's noise.\n"
                            "Where no two programs ever run together (a program alone), the sweep compares\n"
                            "the speedup over the time a program ran instead of Σspeedup.",
                     formatter_class=argparse.RawDescriptionHelpFormatter)
    q.add_argument("scenario", metavar="NAME|FILE.toml", nargs="+",
                   help="one or more shipped scenarios' names or TOML files; all: every shipped scenario")
    q.add_argument("--contexts", type=_list_ints, default=[16, 32, 64, 128, 256], metavar="LIST",
                   help="machine sizes (default 16,32,64,128,256)")
    q.add_argument("--noise", type=_list_floats, default=None, metavar="LIST",
                   help="efficiency-report noise levels (default: each program's own)")
    q.add_argument("--configs", type=_configs, metavar="LIST",
                   help="comma-separated configurations (default equipartition,speedup,consumption; "
                        "oracle-dynamic, the reference, is always run)")
    q.add_argument("--min-gain", type=_min_gain, default=0.5, metavar="G",
                   help="the consumption configuration's threshold (as for run; default 0.5)")
    q.add_argument("--seeds", type=_seeds, default=1, metavar="N",
                   help="run each point with N noise seeds, the scenario's own and the N-1 after it, and report "
                        "the mean gap and the worst (default 1: the scenario's seed alone)")
    q.add_argument("--json", action="store_true", help="print rows as JSON on stdout")
    q.set_defaults(func=cmd_sweep)

    p.set_defaults(func=lambda a: (p.print_help(sys.stderr), 2)[1])


def _fail(msg: str, code: int = 2) -> int:
    print(f"scaf sim: {msg}", file=sys.stderr)
    return code


def _load(arg: str, seed: int | None = None, contexts: int | None = None) -> Any:
    import dataclasses

    from scaf.lib.sim import scenario, sweep

    sc = scenario.load(arg)
    if contexts is not None:
        sc = dataclasses.replace(sweep.scaled(sc, contexts, None), name=sc.name)
    return dataclasses.replace(sc, seed=seed) if seed is not None else sc


def _guard(fn: Any) -> Any:
    """Scenario errors and a missing policy library become a message and an exit code, not a traceback."""

    def wrapped(args: argparse.Namespace) -> int:
        from scaf.lib.sim.scenario import ScenarioError

        try:
            return fn(args)
        except ScenarioError as e:
            return _fail(str(e))
        except RuntimeError as e:  # scaf.policy.PolicyLibraryMissing
            return _fail(str(e), 1)
        except OSError as e:
            return _fail(str(e), 1)

    return wrapped


def _console() -> Any:
    """Rich's console; wide when stdout is not a terminal, so that tables do not wrap in files."""
    from rich.console import Console

    return Console() if sys.stdout.isatty() else Console(width=200)


@_guard
def cmd_list(args: argparse.Namespace) -> int:
    from scaf.lib.sim import scenario

    paths = scenario.shipped()
    if not paths:
        return _fail(f"no scenarios in {scenario.SCENARIO_DIR}", 1)
    width = max(len(p.stem) for p in paths)
    for path in paths:
        sc = scenario.load(path)
        print(f"{path.stem:<{width}}  {sc.machine.contexts:>4} contexts  {len(sc.programs):>2} programs  "
              f"{sc.description}")
    return 0


@_guard
def cmd_check(args: argparse.Namespace) -> int:
    sc = _load(args.scenario)
    print(f"{sc.path}: ok: {sc.name}, {sc.machine.contexts} contexts, {len(sc.programs)} programs")
    return 0


@_guard
def cmd_run(args: argparse.Namespace) -> int:
    from scaf.lib.sim import engine, report
    from scaf.lib.sim.model import CONFIGS

    sc = _load(args.scenario, args.seed, args.contexts)
    configs = args.configs or list(CONFIGS)
    want_files = args.out is not None
    results = engine.run_all(sc, configs, record=want_files, min_gain=args.min_gain)
    data = report.to_json(sc, results)
    if want_files:
        try:
            args.out.mkdir(parents=True, exist_ok=True)
            (args.out / "results.json").write_text(json.dumps(data, indent=2) + "\n")
            report.write_csv(sc, results, args.out / "timeline.csv")
            report.write_png(sc, results, args.out / "timeline.png")
        except OSError as e:
            return _fail(f"cannot write into {args.out}: {e}", 1)
    if args.json:
        print(json.dumps(data, indent=2))
        return 0
    con = _console()
    con.print(report.table(sc, results))
    for line in report.notes(results) + report.closeness(sc, results) + report.pools(sc, results):
        con.print(line, soft_wrap=True)  # one line each, whatever the terminal's width: grep finds them whole
    if sc.expect_source:
        con.print(f"[dim]original numbers: {sc.expect_source}[/dim]")
    if want_files:
        con.print(f"wrote {args.out}/results.json, timeline.csv, timeline.png")
    return 0


@_guard
def cmd_sweep(args: argparse.Namespace) -> int:
    from scaf.lib.sim import scenario, sweep

    names: list[str] = []
    for a in args.scenario:
        names += [p.stem for p in scenario.shipped()] if a == "all" else [a]
    scs = [_load(a) for a in dict.fromkeys(names)]  # every file is validated before anything runs
    if args.configs and "oracle-static" in args.configs:
        return _fail("sweep: oracle-static is not swept (its exhaustive search is per machine size); "
                     f"choose from {', '.join(sweep.SWEEP_CONFIGS)}, unmodified")
    noises: list[float | None] = list(args.noise) if args.noise else [None]
    configs = tuple(args.configs) if args.configs else sweep.SWEEP_CONFIGS
    con = None if args.json else _console()
    out = []
    summary: list[str] = []
    for sc in scs:
        metric, rows = sweep.sweep(sc, args.contexts, noises, configs, min_gain=args.min_gain, seeds=args.seeds)
        out.append({"scenario": sc.name, "reference": sweep.REFERENCE, "metric": metric, "rows": rows})
        summary += sweep.summary(sc.name, metric, rows)
        if con is not None:
            con.print(sweep.table(sc.name, metric, rows))
            for line in sweep.trend(rows):
                con.print(line)
            con.print()
    if args.json:
        print(json.dumps(out[0] if len(out) == 1 else {"reference": sweep.REFERENCE, "scenarios": out}, indent=2))
        return 0
    assert con is not None
    if summary:
        con.print("summary (the speedup policy against oracle-dynamic and equipartition):")
        for line in summary:
            con.print(f"  {line}")
    return 0
