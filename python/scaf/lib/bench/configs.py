"""The configurations a pair of programs runs under (docs/bench.md explains each)."""

from __future__ import annotations

import os
from dataclasses import dataclass

from scaf.lib import paths, runtimes


@dataclass(frozen=True)
class Config:
    name: str
    summary: str
    policy: str | None = None  # a private scafd with this policy runs the pair
    daemon_args: tuple[str, ...] = ()  # added to that scafd's command line
    env: tuple[tuple[str, str], ...] = ()  # added to each program's environment


CONFIGS: dict[str, Config] = {c.name: c for c in (
    Config("unmodified", "plain libgomp, default thread count (one per CPU of the bench's set)"),
    Config("omp-dynamic", "OMP_DYNAMIC=true: libgomp lowers team sizes by the load average"),
    Config("static", "equal shares by thread count: OMP_NUM_THREADS = the program's share of the CPUs, "
           "no pinning"),
    Config("partition", "static halves: each program pinned to its half of the CPUs"),
    Config("share2", "oversubscribed: OMP_NUM_THREADS = 2 x CPUs for each program"),
    Config("equipartition", "scaf, equipartition policy (private scafd)", policy="equipartition"),
    Config("speedup", "scaf, speedup policy (private scafd)", policy="speedup"),
    Config("consumption", "scaf, consumption policy (private scafd): contexts whose modelled speedup gain "
           "is below --min-gain (scafd's default) stay idle", policy="consumption"),
    Config("fixed-gang", "scaf, every program declared fixed (--fixed); fixed teams that do not fit "
           "take turns (gangs, scafd's default)", policy="speedup", env=(("SCAF_MALLEABLE", "no"),)),
    Config("fixed-unconfined", "scaf, every program declared fixed (--fixed); fixed teams that do not "
           "fit run unconfined (scafd --gang-quantum 0)", policy="speedup",
           daemon_args=("--gang-quantum", "0"), env=(("SCAF_MALLEABLE", "no"),)),
)}

# What a user can do without scaf: scaf's configurations are measured against the best of these
# (report.vs_best). share2 is left out: it is the oversubscription study's setting, not
# anyone's best guess.
BASELINES = ("unmodified", "omp-dynamic", "static", "partition")

# The fixed-* configurations answer one question (what scaf does with programs it must not
# reshape), consumption another (what leaving contexts idle saves); ask for them by name.
DEFAULT_CONFIGS = [c for c in CONFIGS if not c.startswith("fixed-") and c != "consumption"]


def parse_configs(text: str) -> list[str]:
    names = [c.strip() for c in text.split(",") if c.strip()]
    bad = [c for c in names if c not in CONFIGS]
    if bad or not names:
        raise ValueError(f"unknown configuration {', '.join(bad) or '(none)'}; "
                         f"choose from {', '.join(CONFIGS)}")
    return list(dict.fromkeys(names))


def partition(cpus: list[int], slot: int, nslots: int) -> list[int]:
    """Slot's contiguous share of cpus (earlier slots get the remainder); all of them if too few."""
    if len(cpus) < nslots:
        return list(cpus)
    base, extra = divmod(len(cpus), nslots)
    start = slot * base + min(slot, extra)
    return cpus[start:start + base + (1 if slot < extra else 0)]


def program_settings(config: str, slot: int, nslots: int, cpus: list[int],
                     socket: str | None, workload: str = "",
                     program: str | None = None) -> tuple[dict[str, str], list[int]]:
    """(environment additions, CPU set) for one program of a pair under `config`; the layer follows the
    workload's build (name@clang and the libiomp5 builds: libscaf_omp.so), or for a user's PROGRAM (its
    resolved executable) what `scaf run` would preload: the layer by its runtime, and libscaf_tcm.so
    before it for oneTBB."""
    env: dict[str, str] = {}
    mine = list(cpus)
    if config == "omp-dynamic":
        env["OMP_DYNAMIC"] = "true"
    elif config == "static":
        # partition's split as a thread count, which any user can set; nothing pins the threads,
        # so the kernel may still move them anywhere in the set.
        env["OMP_NUM_THREADS"] = str(max(1, len(partition(cpus, slot, nslots))))
    elif config == "partition":
        mine = partition(cpus, slot, nslots)
    elif config == "share2":
        env["OMP_NUM_THREADS"] = str(2 * len(cpus))
    elif CONFIGS[config].policy is not None:
        assert socket is not None
        kind = paths.workload_layer(workload)
        preload = [str(paths.layer(kind))]
        if program is not None:
            choice = runtimes.choose(program)
            kind = choice.layer or "gomp"
            preload = ([str(paths.tcm_provider())] if choice.tcm else []) + [str(paths.layer(kind))]
        env["LD_PRELOAD"] = ":".join(preload)
        env["SCAF_SOCKET"] = socket
        env.update(paths.wait_defaults(dict(os.environ), kind))
        env.update(dict(CONFIGS[config].env))
    return env, mine


def candidate(configs: list[str], wanted: str | None = None) -> str | None:
    """The configuration whose improvement over the others the summary reports."""
    if wanted:
        return wanted if wanted in configs else None
    for name in ("speedup", "equipartition"):
        if name in configs:
            return name
    return None
