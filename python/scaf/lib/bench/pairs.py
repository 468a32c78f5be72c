"""The measurements of `scaf bench pairs`: every pair of workloads, staggered, under each configuration."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import TYPE_CHECKING

from scaf.lib.bench import common, configs, energy, runner
from scaf.lib.bench.common import Unit
from scaf.lib.bench.errors import BenchError

if TYPE_CHECKING:
    from scaf.lib.bench.userprog import UserProgram


def pair_unit(a: str, b: str, config: str, repeat: int, size: str, stagger: float,
              cpus: list[int], restricted: bool, out: Path, tag: str, timeout: float,
              daemon_args: list[str], programs: dict[str, UserProgram] | None = None) -> Unit:
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
                daemon = runner.start_daemon(policy, cpus, len(cpus) if restricted else None,
                                            log, [*daemon_args, *configs.CONFIGS[config].daemon_args], tag)
                record["alloc_log"] = str(log.relative_to(out))
            progs = []
            for slot, name in enumerate((a, b)):
                user = (programs or {}).get(name)
                extra, mine = configs.program_settings(config, slot, 2, cpus,
                                                       daemon.socket if daemon else None, name,
                                                       user.argv[0] if user is not None else None)
                env = runner.base_env(tag)
                env.update(extra)
                progs.append(common.bench_program(name, size, env, mine, extra, programs))
            before = energy.read_uj()
            record["programs"] = runner.run_together(progs, [0.0, stagger], timeout)
            record["energy_j"] = energy.joules_between(before, energy.read_uj())
        except BenchError as e:
            record["error"] = str(e)
            record.setdefault("programs", [])
        finally:
            if daemon is not None:
                record["daemon"] = daemon.finish()
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
