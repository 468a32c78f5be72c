"""`scaf bench overhead`: one workload alone, plain libgomp vs the layer (+daemon), alternating."""

from __future__ import annotations

import argparse
import sys

from scaf import paths
from scaf.bench import common, machine, runner, store
from scaf.bench.common import Unit
from scaf.bench.runner import BenchError

# name -> (uses the layer, talks to the private daemon, extra environment)
VARIANTS: dict[str, tuple[bool, bool, dict[str, str]]] = {
    "plain": (False, False, {}),
    "inert": (True, False, {}),
    "scaf": (True, True, {}),
}
# With --feedback: estimation off entirely, and experiments forced although the client is alone.
FEEDBACK_VARIANTS: dict[str, tuple[bool, bool, dict[str, str]]] = {
    "scaf-noestimate": (True, True, {"SCAF_ESTIMATE": "0"}),
    "scaf-eager": (True, True, {"SCAF_LAZY": "0"}),
}
NOWHERE = "/nonexistent/scaf-bench/none.sock"


def overhead_unit(variant: str, spec: tuple[bool, bool, dict[str, str]], rnd: int, workload: str,
                  size: str, cpus: list[int], tag: str, timeout: float,
                  daemon: list[runner.PrivateDaemon | None]) -> Unit:
    layer, with_daemon, extra = spec

    def run() -> dict:
        env = runner.base_env(tag)
        settings = dict(extra)
        if layer:
            settings["LD_PRELOAD"] = str(paths.layer())
            settings["SCAF_SOCKET"] = NOWHERE
            if with_daemon:
                d = daemon[0]
                assert d is not None
                settings["SCAF_SOCKET"] = d.socket
        env.update(settings)
        prog = runner.Program(workload, common.workload_argv(workload, size), env, cpus, settings)
        record = {"kind": "overhead", "variant": variant, "round": rnd, "workload": workload,
                  "size": size, "error": None,
                  "programs": runner.run_together([prog], [0.0], timeout)}
        d = daemon[0]
        if with_daemon and d is not None:
            if not d.alive():
                record["error"] = f"private scafd died: {d.stderr()[-400:]}"
            p = record["programs"][0]
            p["scaf_client"] = p.get("pid") in runner.clients_in_log(d.log)
            if p["error"] is None and not p["scaf_client"]:
                p["error"] = "never appeared as a client of the private scafd (layer inert?)"
        return record

    return Unit(("overhead", variant, rnd), f"overhead {variant} round {rnd + 1}", run,
                common.describe_programs)


def cmd_overhead(args: argparse.Namespace) -> int:
    from scaf.bench import report

    variants = dict(VARIANTS)
    if args.feedback:
        variants.update(FEEDBACK_VARIANTS)
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
    daemon: list[runner.PrivateDaemon | None] = [None]
    # Alternate the variants round by round (ABCABC...) so that drift of the machine hits all alike.
    units = [overhead_unit(v, spec, r, workloads[0], args.size, cpus, tag, args.timeout, daemon)
             for r in range(args.rounds) for v, spec in variants.items()]
    print(f"scaf bench overhead: {workloads[0]} size {args.size}, {args.rounds} rounds of "
          f"{', '.join(variants)} -> {results.dir}", file=sys.stderr)
    restricted = args.cpus is not None or args.taskset is not None
    try:
        try:
            # Without --lookout the daemon ignores other load, so that the program gets the same
            # team as plain libgomp and the ratio measures the layer's cost, not a smaller team.
            extra = list(args.daemon_arg or []) + ([] if args.lookout else ["--no-lookout"])
            daemon[0] = runner.PrivateDaemon(args.policy, cpus, len(cpus) if restricted else None,
                                             results.dir / "overhead.alloc.jsonl", extra, tag)
            common.execute(results, units)
        finally:
            if daemon[0] is not None:
                daemon[0].stop()
    except BenchError as e:
        print(f"scaf bench overhead: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"\nscaf bench overhead: interrupted; finished rounds are in {results.path}",
              file=sys.stderr)
        return 130
    if args.no_report:
        return 0
    return report.render(results.dir)


def register(sub: argparse._SubParsersAction, epilog: str) -> None:
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
    p.add_argument("--rounds", type=common.positive_int, default=10, metavar="N",
                   help="rounds (default 10)")
    p.add_argument("--feedback", action="store_true",
                   help="also measure estimation off and eager experiments")
    p.add_argument("--policy", default="speedup", help="the private daemon's policy (default speedup)")
    p.add_argument("--lookout", action="store_true",
                   help="let the daemon count other processes' load (default --no-lookout, so that "
                        "the program gets the same team as plain libgomp)")
    p.add_argument("--daemon-arg", action="append", metavar="ARG", help="extra scafd option (repeatable)")
    p.add_argument("--size", choices=common.SIZES, default="W", help="workload size (default W)")
    p.add_argument("--out", type=common.Path, metavar="DIR",
                   help="output folder (default results/overhead-YYYYmmdd-HHMMSS); an existing one is resumed")
    p.add_argument("--cpus", type=int, metavar="N", help="use only the first N CPUs")
    p.add_argument("--taskset", metavar="LIST", help="use only these CPUs")
    p.add_argument("--timeout", type=common.positive_float, default=900, metavar="S", help="per-run limit (default 900)")
    p.add_argument("--retry-failed", action="store_true", help="rerun failed rounds when resuming")
    p.add_argument("--no-report", action="store_true", help="do not render the tables at the end")
    p.set_defaults(func=cmd_overhead)
