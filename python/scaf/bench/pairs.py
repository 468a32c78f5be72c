"""`scaf bench pairs`: every pair of workloads, staggered, under each configuration."""

from __future__ import annotations

import argparse
import itertools
import sys
from pathlib import Path

from scaf.bench import common, configs, machine, runner, store
from scaf.bench.common import Unit
from scaf.bench.runner import BenchError


def pair_unit(a: str, b: str, config: str, repeat: int, size: str, stagger: float,
              cpus: list[int], restricted: bool, out: Path, tag: str, timeout: float,
              daemon_args: list[str]) -> Unit:
    """Runs a, then b `stagger` seconds later, under `config`; a private scafd if it needs one."""

    def run() -> dict:
        policy = configs.CONFIGS[config].policy
        daemon = None
        log = None
        record: dict = {"kind": "pair", "pair": [a, b], "config": config, "repeat": repeat,
                        "size": size, "stagger_s": stagger, "error": None}
        try:
            if policy:
                logs = out / "logs"
                logs.mkdir(exist_ok=True)
                log = logs / f"{a}+{b}.{config}.r{repeat}.alloc.jsonl"
                log.unlink(missing_ok=True)  # scafd appends; a retried run starts afresh
                daemon = runner.PrivateDaemon(policy, cpus, len(cpus) if restricted else None,
                                              log, [*daemon_args, *configs.CONFIGS[config].daemon_args], tag)
                record["alloc_log"] = str(log.relative_to(out))
            progs = []
            for slot, name in enumerate((a, b)):
                extra, mine = configs.program_settings(config, slot, 2, cpus,
                                                       daemon.socket if daemon else None)
                env = runner.base_env(tag)
                env.update(extra)
                progs.append(runner.Program(name, common.workload_argv(name, size), env, mine, extra))
            record["programs"] = runner.run_together(progs, [0.0, stagger], timeout)
        except BenchError as e:
            record["error"] = str(e)
            record.setdefault("programs", [])
        finally:
            if daemon is not None:
                record["daemon"] = daemon.stop()
        if daemon is not None and log is not None and record["programs"]:
            if not record["daemon"]["alive_at_end"]:
                record["error"] = (f"private scafd died during the run (status "
                                   f"{record['daemon']['returncode']}): {record['daemon']['stderr_tail']}")
            clients = runner.clients_in_log(log)
            for p in record["programs"]:
                p["scaf_client"] = p.get("pid") in clients
                if p["error"] is None and not p["scaf_client"]:
                    # The layer stayed inert: this was not a measurement of the configuration.
                    p["error"] = "never appeared as a client of the private scafd (layer inert?)"
        return record

    return Unit(("pair", a, b, config, repeat), f"{a}+{b} {config} #{repeat + 1}", run,
                common.describe_programs)


def pairs_of(workloads: list[str]) -> list[tuple[str, str]]:
    """Every unordered pair, a workload with itself included, in a stable order."""
    return list(itertools.combinations_with_replacement(workloads, 2))


def cmd_pairs(args: argparse.Namespace) -> int:
    from scaf.bench import report

    try:
        wanted = configs.parse_configs(args.configs)
        workloads = common.resolve_workloads(args.workloads)
        cpus = common.bench_cpus(args.cpus, args.taskset)
        common.check_built(any(configs.CONFIGS[c].policy for c in wanted))
        out = args.out or common.default_out("bench")
        params = {"size": args.size, "stagger_s": args.stagger, "cpus": machine.format_cpulist(cpus)}
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
            units.append(common.solo_unit(w, 1, r, args.size, cpus, tag, args.timeout))
    daemon_args = list(args.daemon_arg or [])
    for r in range(args.repeat):
        for a, b in pairs_of(workloads):
            # Configurations of one pair back to back: slow drift of the machine hits them alike.
            for c in wanted:
                units.append(pair_unit(a, b, c, r, args.size, args.stagger, cpus, restricted,
                                       results.dir, tag, args.timeout, daemon_args))
    print(f"scaf bench pairs: {len(pairs_of(workloads))} pairs x {len(wanted)} configurations x "
          f"{args.repeat} on CPUs {machine.format_cpulist(cpus)}, size {args.size}, "
          f"stagger {args.stagger:g} s -> {results.dir}", file=sys.stderr)
    return common.execute_then_report("pairs", results, units, args.no_report,
                                      lambda: report.render(results.dir, candidate_name=args.candidate))


def register(sub: argparse._SubParsersAction, epilog: str) -> None:
    p = sub.add_parser(
        "pairs",
        help="every pair of workloads under each configuration; speedup sums and wins/losses",
        description=(
            "Run every pair of workloads (unordered, a workload with itself included): the second "
            "starts STAGGER seconds after the first. Each pair runs under each configuration. "
            "Per program, speedup = its serial time (1 thread, alone) / its time in the pair; "
            "the summary compares the sum of the two speedups under the candidate configuration "
            "(speedup, else equipartition) with each other configuration."
        ),
        epilog=epilog,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    common.add_common(p, "workloads to pair (default: every built workload)")
    p.add_argument("--configs", default=",".join(configs.DEFAULT_CONFIGS), metavar="C,C,...",
                   help=f"configurations (default: {','.join(configs.DEFAULT_CONFIGS)}; also "
                        f"{','.join(c for c in configs.CONFIGS if c not in configs.DEFAULT_CONFIGS)}: "
                        "every program declared fixed, with gangs or unconfined)")
    p.add_argument("--stagger", type=common.nonneg_float, default=1.0, metavar="S",
                   help="seconds between the first and the second program's start (default 1)")
    p.add_argument("--candidate", metavar="C",
                   help="configuration compared with the others (default speedup, else equipartition)")
    p.add_argument("--daemon-arg", action="append", metavar="ARG",
                   help="extra scafd option for the private daemons (repeatable), "
                        "e.g. --daemon-arg=--no-lookout")
    p.set_defaults(func=cmd_pairs)
