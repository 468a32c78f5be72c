"""The measurements of `scaf bench pairs`: every pair of workloads, staggered, under each configuration, a warm one after its priming run."""

from __future__ import annotations

import itertools
import shutil
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from scaf.lib import runenv, runtimes
from scaf.lib.bench import common, configs, energy, runner
from scaf.lib.bench.common import Unit
from scaf.lib.bench.errors import BenchError
from scaf.lib.daemon import memory_chosen

if TYPE_CHECKING:
    from scaf.lib.bench.userprog import UserProgram


def _under_scaf(prog: runner.Program, base: dict[str, str], socket: str, choice: runtimes.Choice,
                count: int) -> None:
    """Makes PROG start as `scaf run --socket SOCKET` would start it: the environment is made just before it
    starts (runenv.environment), so that the daemon's recall, and the start team it offers a program
    remembered fixed, is the one of that moment, beside the programs that run then."""

    def prepare() -> tuple[dict[str, str], dict[str, str], dict]:
        env, recall = runenv.environment(prog.argv[0], list(prog.argv), base, socket, choice, count=count)
        settings = {k: v for k, v in env.items() if base.get(k) != v}
        return env, settings, {"recall": recall.as_json() if recall is not None else None}

    prog.prepare = prepare


def _run_pair(a: str, b: str, config: str, size: str, stagger: float, cpus: list[int], restricted: bool,
              out: Path, log_name: str, tag: str, timeout: float, daemon_args: list[str],
              programs: dict[str, UserProgram] | None, state_dir: str | None) -> dict:
    """One run of the pair under CONFIG: its programs' records, the daemon's, the run's error. Under scaf's
    configurations a private scafd (its memory in STATE_DIR, else a fresh empty one) logs to logs/LOG_NAME."""
    policy = configs.CONFIGS[config].policy
    daemon = None
    log = None
    record: dict = {"error": None}
    try:
        if policy:
            logs = out / "logs"
            logs.mkdir(exist_ok=True)
            log = logs / log_name
            log.unlink(missing_ok=True)  # scafd appends; a retried run starts afresh
            daemon = runner.start_daemon(policy, cpus, len(cpus) if restricted else None, log,
                                         [*daemon_args, *configs.CONFIGS[config].daemon_args], tag, state_dir)
            record["alloc_log"] = str(log.relative_to(out))
        progs = []
        for slot, name in enumerate((a, b)):
            user = (programs or {}).get(name)
            extra, mine = configs.program_settings(config, slot, 2, cpus, user.count_var if user else None)
            env = runner.base_env(tag)
            env.update(extra)
            prog = common.bench_program(name, size, env, mine, extra, programs)
            if daemon is not None:
                _under_scaf(prog, env, daemon.socket, configs.scaf_choice(name, user.argv[0] if user else None),
                            len(mine))
            progs.append(prog)
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
        try:
            clients = runner.clients_in_log(log)
            memory = runner.memory_in_log(log)
        except BenchError as e:
            record["error"] = record["error"] or str(e)
            clients, memory = set(), {}
        for p in record["programs"]:
            p["scaf_client"] = p.get("pid") in clients
            # What the daemon remembered of its program at its arrival, and the share it offered.
            p["memory"] = memory.get(p.get("pid"))
            if p["error"] is None and not p["scaf_client"]:
                # The layer stayed inert: this was not a measurement of the configuration.
                p["error"] = "never appeared as a client of the private scafd (layer inert?)"
    return record


def _prime_failure(prime: dict) -> str | None:
    """Why a priming run cannot warm the memory it was for, or None."""
    if prime.get("error"):
        return str(prime["error"])
    bad = [f"{p.get('workload')}: {p['error']}" for p in prime.get("programs", []) if p.get("error")]
    return "; ".join(bad) or None


def pair_unit(a: str, b: str, config: str, repeat: int, size: str, stagger: float,
              cpus: list[int], restricted: bool, out: Path, tag: str, timeout: float,
              daemon_args: list[str], programs: dict[str, UserProgram] | None = None) -> Unit:
    """Runs a, then b `stagger` seconds later, under `config`; a private scafd if it needs one.

    A warm configuration first runs the pair once (the priming run, not measured: kept in the record as
    `prime`) on a daemon whose memory is a fresh state directory, stops that daemon (which writes its memory
    to disk), and measures the pair on a fresh daemon started on the same directory: the memory is read from
    disk, as after a restart or on the next day. A cold one's daemon starts on an empty memory of its own."""
    cfg = configs.CONFIGS[config]

    def run() -> dict:
        base: dict = {"kind": "pair", "pair": [a, b], "config": config, "repeat": repeat, "size": size,
                      "stagger_s": stagger}
        name = f"{a}+{b}.{config}.r{repeat}"
        if not cfg.warm:
            return {**base, **_run_pair(a, b, config, size, stagger, cpus, restricted, out, f"{name}.alloc.jsonl",
                                        tag, timeout, daemon_args, programs, None)}
        # The caller's --daemon-arg=--state-dir: both runs use it (a memory they chose, warm or not).
        state = None if memory_chosen(daemon_args) else tempfile.mkdtemp(prefix="scaf-w-", dir="/tmp")
        try:
            # Nothing is measured of the priming run; it is kept in the record as it ran.
            prime = _run_pair(a, b, config, size, stagger, cpus, restricted, out, f"{name}.prime.alloc.jsonl",
                              tag, timeout, daemon_args, programs, state)
            why = _prime_failure(prime)
            if why is None and state is not None:
                prime["memory_files"] = sorted(f.name for f in Path(state).glob("memory-*.bin"))
                if not prime["memory_files"]:
                    why = "it left no memory in its state directory"
            if why is not None:
                # A memory warmed by a failed run is not the one a user's second run would find: not measured.
                return {**base, "error": f"the priming run failed: {why}", "programs": [], "prime": prime}
            measured = _run_pair(a, b, config, size, stagger, cpus, restricted, out, f"{name}.alloc.jsonl",
                                 tag, timeout, daemon_args, programs, state)
        finally:
            if state is not None:
                shutil.rmtree(state, ignore_errors=True)
        return {**base, **measured, "prime": prime}

    return Unit(("pair", a, b, config, repeat), f"{a}+{b} {config} #{repeat + 1}", run,
                common.describe_programs)


def pairs_of(workloads: list[str]) -> list[tuple[str, str]]:
    """Every unordered pair, a workload with itself included, in a stable order."""
    return list(itertools.combinations_with_replacement(workloads, 2))
