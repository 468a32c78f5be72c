"""The configurations a pair of programs runs under (docs/bench.md explains each)."""

from __future__ import annotations

from dataclasses import dataclass

from scaf import paths


@dataclass(frozen=True)
class Config:
    name: str
    summary: str
    policy: str | None = None  # a private scafd with this policy runs the pair


CONFIGS: dict[str, Config] = {c.name: c for c in (
    Config("unmodified", "plain libgomp, default thread count (one per CPU of the bench's set)"),
    Config("omp-dynamic", "OMP_DYNAMIC=true: libgomp lowers team sizes by the load average"),
    Config("partition", "static halves: each program pinned to its half of the CPUs"),
    Config("share2", "oversubscribed: OMP_NUM_THREADS = 2 x CPUs for each program"),
    Config("equipartition", "scaf, equipartition policy (private scafd)", policy="equipartition"),
    Config("speedup", "scaf, speedup policy (private scafd)", policy="speedup"),
)}

DEFAULT_CONFIGS = list(CONFIGS)


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
                     socket: str | None) -> tuple[dict[str, str], list[int]]:
    """(environment additions, CPU set) for one program of a pair under `config`."""
    env: dict[str, str] = {}
    mine = list(cpus)
    if config == "omp-dynamic":
        env["OMP_DYNAMIC"] = "true"
    elif config == "partition":
        mine = partition(cpus, slot, nslots)
    elif config == "share2":
        env["OMP_NUM_THREADS"] = str(2 * len(cpus))
    elif CONFIGS[config].policy is not None:
        assert socket is not None
        env["LD_PRELOAD"] = str(paths.layer())
        env["SCAF_SOCKET"] = socket
    return env, mine


def candidate(configs: list[str], wanted: str | None = None) -> str | None:
    """The configuration whose improvement over the others the summary reports."""
    if wanted:
        return wanted if wanted in configs else None
    for name in ("speedup", "equipartition"):
        if name in configs:
            return name
    return None
