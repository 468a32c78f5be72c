"""The configurations a pair of programs runs under (docs/bench.md explains each)."""

from __future__ import annotations

from dataclasses import dataclass, replace

from scaf.lib import paths, runtimes


@dataclass(frozen=True)
class Config:
    name: str
    summary: str
    policy: str | None = None  # a private scafd with this policy runs the pair
    daemon_args: tuple[str, ...] = ()  # added to that scafd's command line
    env: tuple[tuple[str, str], ...] = ()  # added to each program's environment
    warm: bool = False  # primed: the pair runs once first, and the measured run's daemon recalls that run


WARM = "-warm"  # a scaf configuration's name + WARM: the same, with the daemon's memory warm

_COLD: tuple[Config, ...] = (
    Config("unmodified", "plain libgomp, default thread count (one per CPU of the bench's set)"),
    Config("omp-dynamic", "OMP_DYNAMIC=true: libgomp lowers team sizes by the load average"),
    Config("static", "equal shares by thread count: OMP_NUM_THREADS and every other runtime's own count = the "
           "program's share of the CPUs, no pinning"),
    Config("partition", "static halves: each program pinned to its half of the CPUs"),
    Config("share2", "oversubscribed: OMP_NUM_THREADS = 2 x CPUs for each program"),
    Config("equipartition", "scaf, equipartition policy (private scafd)", policy="equipartition"),
    Config("speedup", "scaf, speedup policy (private scafd)", policy="speedup"),
    Config("scaf", "scaf as a user gets it from `scaf run`: scafd's default policy (speedup), memory cold "
           "(a fresh, empty state directory)", policy="speedup"),
    Config("scaf-cpuset", "scaf as `scaf run` gives it, with fixed teams that fit pinned to CPU sets of exactly "
           "their size instead of left where the kernel puts them (scafd --placement cpuset)",
           policy="speedup", daemon_args=("--placement", "cpuset")),
    Config("consumption", "scaf, consumption policy (private scafd): contexts whose modelled speedup gain "
           "is below --min-gain (scafd's default) stay idle", policy="consumption"),
    Config("fixed-gang", "scaf, every program declared fixed (--fixed); fixed teams that do not fit "
           "take turns (gangs, scafd's default)", policy="speedup", env=(("SCAF_MALLEABLE", "no"),)),
    Config("fixed-unconfined", "scaf, every program declared fixed (--fixed); fixed teams that do not "
           "fit run unconfined (scafd --gang-quantum 0)", policy="speedup",
           daemon_args=("--gang-quantum", "0"), env=(("SCAF_MALLEABLE", "no"),)),
)


def _with_warm(configs: tuple[Config, ...]) -> dict[str, Config]:
    """Every configuration by name, each of scaf's followed by its warm twin (NAME-warm)."""
    out: dict[str, Config] = {}
    for c in configs:
        out[c.name] = c
        if c.policy is not None:
            out[c.name + WARM] = replace(c, name=c.name + WARM, warm=True,
                                         summary=f"{c.name} with the memory warm: its daemon recalls a "
                                                 "priming run of the same pair")
    return out


CONFIGS: dict[str, Config] = _with_warm(_COLD)

# What a user can do without scaf: scaf's configurations are measured against the best of these
# (report.vs_best). share2 is left out: it is the oversubscription study's setting, not
# anyone's best guess.
BASELINES = ("unmodified", "omp-dynamic", "static", "partition")

# The fixed-* configurations answer one question (what scaf does with programs it must not
# reshape), consumption another (what leaving contexts idle saves): ask for them by name. So are
# scaf (speedup, named as a user gets it: the pair of columns cold and warm) and every warm
# configuration (each runs its pair twice).
DEFAULT_CONFIGS = [c for c in CONFIGS if not c.startswith("fixed-") and c not in ("consumption", "scaf", "scaf-cpuset")
                   and not CONFIGS[c].warm]


def warm_of(name: str) -> str | None:
    """The warm twin of configuration NAME, or None (not one of scaf's, or warm already)."""
    twin = name + WARM
    return twin if twin in CONFIGS else None


def _no_memory(daemon_args: list[str]) -> bool:
    return any(a == "--no-memory" or (len(a) >= 6 and "--no-memory".startswith(a)) for a in daemon_args)


def parse_configs(text: str, daemon_args: list[str] | None = None) -> list[str]:
    """The configurations named in TEXT (comma-separated), each once, in order. ValueError saying what is
    wrong: an unknown name, the warm twin of a configuration without a daemon, or a warm configuration whose
    daemons are told to keep no memory (DAEMON_ARGS: the bench's --daemon-arg)."""
    names = list(dict.fromkeys(c.strip() for c in text.split(",") if c.strip()))
    if not names:
        raise ValueError(f"no configuration given; choose from {', '.join(CONFIGS)}")
    warm_ones = ", ".join(n for n in CONFIGS if CONFIGS[n].warm)
    for c in names:
        if c in CONFIGS:
            continue
        base = c[:-len(WARM)]
        if c.endswith(WARM) and base in CONFIGS:
            raise ValueError(f"configuration {c}: {base} runs no scaf daemon, so it has no memory to warm "
                             f"(the warm configurations: {warm_ones})")
        raise ValueError(f"unknown configuration {c}; choose from {', '.join(CONFIGS)}")
    warm = [c for c in names if CONFIGS[c].warm]
    if warm and _no_memory(daemon_args or []):
        raise ValueError(f"{', '.join(warm)}: a warm configuration needs the daemon's memory, which "
                         "--daemon-arg=--no-memory turns off")
    return names


def partition(cpus: list[int], slot: int, nslots: int) -> list[int]:
    """Slot's contiguous share of cpus (earlier slots get the remainder); all of them if too few."""
    if len(cpus) < nslots:
        return list(cpus)
    base, extra = divmod(len(cpus), nslots)
    start = slot * base + min(slot, extra)
    return cpus[start:start + base + (1 if slot < extra else 0)]


def count_env(n: int, count_var: str | None = None) -> dict[str, str]:
    """The variables that give a program N threads in every runtime, as a careful user sets them:
    OMP_NUM_THREADS, every other runtime's own variable (the start environment's one table,
    include/scaf/startenv.h, through startteam.counts), and COUNT_VAR, the program's own count for the
    runtimes that have none (a program the bench knows)."""
    from scaf.lib import startteam

    env = {"OMP_NUM_THREADS": str(n), **startteam.counts(n)}
    if count_var:
        env[count_var] = str(n)
    return env


def program_settings(config: str, slot: int, nslots: int, cpus: list[int],
                     count_var: str | None = None) -> tuple[dict[str, str], list[int]]:
    """(environment additions, CPU set) for one program of a pair under `config`. Under scaf's
    configurations the additions are the configuration's own (SCAF_MALLEABLE=no for fixed-*): the
    rest, what `scaf run` adds, is made when the program starts (runenv.environment, with
    scaf_choice's layer), because it asks the daemon what it remembers of the program then.
    COUNT_VAR: the program's own count variable (count_env)."""
    env: dict[str, str] = {}
    mine = list(cpus)
    if config == "omp-dynamic":
        env["OMP_DYNAMIC"] = "true"
    elif config == "static":
        # partition's split as a thread count in every runtime, which any user can set; nothing pins the
        # threads, so the kernel may still move them anywhere in the set.
        env.update(count_env(max(1, len(partition(cpus, slot, nslots))), count_var))
    elif config == "partition":
        mine = partition(cpus, slot, nslots)
    elif config == "share2":
        env["OMP_NUM_THREADS"] = str(2 * len(cpus))
    elif CONFIGS[config].policy is not None:
        env.update(dict(CONFIGS[config].env))
    return env, mine


def scaf_choice(workload: str, program: str | None = None) -> runtimes.Choice:
    """The layer a program gets under scaf: a workload's follows its build (name@clang and the libiomp5
    builds: libscaf_omp.so); a user's PROGRAM (its resolved executable) gets what `scaf run` would
    preload: the layer by its runtime, and libscaf_tcm.so before it for oneTBB."""
    if program is not None:
        try:
            return runtimes.choose(program)
        except (ValueError, KeyError, IndexError, AssertionError, OSError) as e:  # as scaf run: the old default
            return runtimes.Choice("gomp", "GNU libgomp (default)", f"its ELF headers could not be read ({e})")
    kind = paths.workload_layer(workload)
    return runtimes.Choice(kind, "LLVM libomp or Intel libiomp5" if kind == "omp" else "GNU libgomp",
                           f"the workload's build ({workload})")


def candidate(configs: list[str], wanted: str | None = None) -> str | None:
    """The configuration whose improvement over the others the summary reports."""
    if wanted:
        return wanted if wanted in configs else None
    for name in ("speedup", "scaf", "equipartition"):
        if name in configs:
            return name
    return None
