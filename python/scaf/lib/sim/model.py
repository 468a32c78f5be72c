"""The simulator's model: machine, programs, speedup curves, and the rate a program progresses at."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # numpy is imported inside functions: `scaf --help` must stay fast
    import numpy as np

# Configurations `scaf sim run` compares, in table order. "fixed" (a given
# partition held for the whole run) is an API-only configuration that the
# static oracle and the tests use.
CONFIGS = ("unmodified", "equipartition", "speedup", "consumption", "oracle-static", "oracle-dynamic")
POLICY_CONFIGS = ("equipartition", "speedup", "consumption")
# Configurations that can be asked for by name but are not in the default table: "static" is the static split a
# user would set by hand (OMP_NUM_THREADS = an equal share of the machine for each program, from its start);
# "framework" is each pool's own rule (its `rule`: loky's cpu_count() // workers threads per worker, Dask's one),
# every other program its default team, as the user runs them without scaf.
EXTRA_CONFIGS = ("static", "framework")
# A pool's own rule for its workers' threads: joblib/loky gives each cpu_count() // workers; a Dask
# LocalCluster(threads_per_worker=1) one (its nanny sets OMP_NUM_THREADS to the worker's threads).
POOL_RULES = ("loky", "dask")

# What a program does with its team (docs/simulator.md, "Programs"): steered at every outermost region; fixed
# once started (the layer's verdict, or the user's word); or a runtime that reads its count once, at start (a
# pool of polars, onnxruntime, the JVM), which scaf starts with its share.
TEAM_KINDS = ("malleable", "fixed", "runtime")
FIXED_BY = ("evidence", "user")
MEMORY_KINDS = ("cold", "warm")

# Calibrated in docs/simulator.md ("Calibration"): the value that brings the
# unmodified Σspeedup of cg-lu-36 and three-way-64 closest (least squares on
# the ratio) to the original's 12.5X and 31.5X. tools/experiments/fit_oversub_k.py redoes it.
DEFAULT_OVERSUB_SLOWDOWN = 0.58

# The layer's RC filter time constant (SCAF_RC_TAU_S) default.
DEFAULT_TAU_S = 1.0

CURVE_KINDS = ("amdahl", "usl", "points")


@dataclass(frozen=True)
class Curve:
    """Speedup S(p) of a program on p contexts, relative to one thread."""

    kind: str
    parallel_fraction: float = 1.0  # amdahl
    sigma: float = 0.0  # usl contention
    kappa: float = 0.0  # usl coherency (makes the curve fall)
    points: tuple[tuple[float, float], ...] = ()  # (threads, speedup), (1, 1) implied

    def speedup(self, p: Any) -> Any:
        """S(p) for an array (or scalar) of p >= 0; S(0) = 0, linear between 0 and 1."""
        import numpy as np

        p = np.asarray(p, dtype=float)
        q = np.maximum(p, 1.0)
        if self.kind == "amdahl":
            f = self.parallel_fraction
            s = 1.0 / ((1.0 - f) + f / q)
        elif self.kind == "usl":
            s = q / (1.0 + self.sigma * (q - 1.0) + self.kappa * q * (q - 1.0))
        elif self.kind == "points":
            xs = [1.0] + [x for x, _ in self.points if x > 1.0]
            ys = [1.0] + [y for x, y in self.points if x > 1.0]
            s = np.interp(q, xs, ys)  # flat beyond the last point
        else:
            raise ValueError(f"unknown curve kind {self.kind!r}")
        # Below one context a program gets a fraction of one thread's time.
        return np.where(p < 1.0, p * 1.0, s)


@dataclass(frozen=True)
class Phase:
    """A stretch of a program's work with its own curve: it holds until the program has done `until_s`
    serial seconds in all (None: to the end)."""

    until_s: float | None
    curve: Curve


@dataclass(frozen=True)
class Program:
    name: str
    curve: Curve  # the curve of its first phase (its only one unless `phases` is given)
    work_s: float  # total serial work: its run time on one thread
    arrival_s: float = 0.0
    threads: int = 0  # default team (what OpenMP would start); 0 = machine contexts
    region_s: float = 0.1  # serial work per outermost region: allocations change only between regions
    noise: float = 0.0  # standard deviation of the noise added to each efficiency report
    oversub_slowdown: float | None = None  # None = the machine's
    source: str = ""
    phases: tuple[Phase, ...] = ()  # () = one phase, `curve`, for the whole work
    team_kind: str = "malleable"  # TEAM_KINDS
    fixed_by: str = "evidence"  # a fixed team: found by the layer at its first region, or said by the user (--fixed)
    memory: str = "cold"  # "warm": the daemon remembers it from a previous run of the same scenario
    workers: int = 0  # > 0: a process pool of that many worker clients beside a parent client that waits
    tasks: int = 0  # a pool's work in this many tasks, each handed to the first free worker
    task_sizes: tuple[float, ...] = ()  # their relative sizes in the order handed out; () = all equal
    rule: str = "loky"  # POOL_RULES: the threads the pool's own rule gives each worker (the `framework` configuration)
    task_gap_s: float = 0.0  # a pool worker's pause between two tasks (no region, next to no CPU)
    # Not started under scaf: it runs its own team whatever the daemon decides, and the daemon sees it only as
    # foreign load (the lookout's, once a second), the contexts it leaves out of the clients' allocation.
    foreign: bool = False

    def task_work(self) -> list[float]:
        """Each task's serial seconds, in the order the pool hands them out: work_s split by task_sizes."""
        sizes = self.task_sizes or (1.0,) * self.tasks
        total = sum(sizes)
        return [self.work_s * s / total for s in sizes]

    @property
    def malleable(self) -> bool:
        """Its team follows the daemon's count at every outermost region."""
        return self.team_kind == "malleable" and not self.foreign

    def curves(self) -> list[Curve]:
        """The curve of each phase in order."""
        return [ph.curve for ph in self.phases] if self.phases else [self.curve]

    def bounds(self) -> list[float]:
        """The serial work at which each phase but the last ends."""
        return [float(ph.until_s) for ph in self.phases[:-1] if ph.until_s is not None]


@dataclass(frozen=True)
class Machine:
    contexts: int
    smt: int = 1
    chunk: int = 0  # 0 = smt
    rate_hz: float = 4.0
    oversub_slowdown: float = DEFAULT_OVERSUB_SLOWDOWN
    gangs: bool = True  # scafd --gang-quantum > 0: fixed teams that do not fit take turns

    @property
    def effective_chunk(self) -> int:
        """The chunk the policy is given: `chunk`, or the SMT width when it is 0."""
        return self.chunk or self.smt


@dataclass(frozen=True)
class Feedback:
    tau_s: float = DEFAULT_TAU_S
    lazy: bool = True  # no estimate while a program is the only one (the layer's SCAF_LAZY)


@dataclass
class Scenario:
    name: str
    machine: Machine
    programs: list[Program]
    feedback: Feedback = field(default_factory=Feedback)
    description: str = ""
    source: str = ""
    seed: int = 1
    max_time_s: float = 0.0  # 0 = derived: last arrival + 4 x total work
    # expect[config] = {"sum_speedup": x, program name: x}: the original's numbers
    expect: dict[str, dict[str, float]] = field(default_factory=dict)
    expect_source: str = ""
    path: str = ""

    def horizon(self) -> float:
        if self.max_time_s > 0:
            return self.max_time_s
        last = max((p.arrival_s for p in self.programs), default=0.0)
        return last + 4.0 * sum(p.work_s for p in self.programs)

    def team(self, p: Program) -> int:
        return p.threads or self.machine.contexts


def oversub_penalty(ratio: Any, k: Any) -> Any:
    """Progress factor of threads time-sliced at `ratio` runnable threads per context.

    1 at ratio <= 1, 1 / (1 + k (ratio - 1)) above: the cost of spinning
    threads preempted at barriers and locks grows with the oversubscription.
    """
    import numpy as np

    return 1.0 / (1.0 + np.asarray(k) * np.maximum(np.asarray(ratio, dtype=float) - 1.0, 0.0))


def speedup_tables(sc: Scenario) -> np.ndarray:
    """S_j(p) for p = 0..contexts (rows = programs; the first phase's curve), for interpolation at fractional
    shares."""
    import numpy as np

    n = sc.machine.contexts
    ps = np.arange(n + 1, dtype=float)
    return np.stack([pr.curve.speedup(ps) for pr in sc.programs]) if sc.programs else np.zeros((0, n + 1))


def phase_tables(sc: Scenario) -> tuple[np.ndarray, np.ndarray]:
    """(tabs, bounds): tabs[j, k] is S_j(p) for p = 0..contexts in phase k, and bounds[j, k] the serial
    work at which phase k ends (inf for the last). Programs with fewer phases repeat their last one, so
    that the engine switches phase by indexing, with no per-program Python."""
    import numpy as np

    n = sc.machine.contexts
    ps = np.arange(n + 1, dtype=float)
    k = max((len(p.curves()) for p in sc.programs), default=1)
    tabs = np.zeros((len(sc.programs), k, n + 1))
    bounds = np.full((len(sc.programs), k), np.inf)
    for j, pr in enumerate(sc.programs):
        curves = pr.curves()
        for i in range(k):
            tabs[j, i] = curves[min(i, len(curves) - 1)].speedup(ps)
        b = pr.bounds()
        bounds[j, :len(b)] = b
    return tabs, bounds


def interp_rows(tab: np.ndarray, x: np.ndarray) -> np.ndarray:
    """tab[j] evaluated at fractional x[j], linear between integer columns."""
    import numpy as np

    n = tab.shape[1] - 1
    x = np.clip(x, 0.0, float(n))
    i = np.minimum(x.astype(np.int64), max(n - 1, 0))
    frac = x - i
    rows = np.arange(tab.shape[0])
    if n == 0:
        return tab[:, 0]
    return tab[rows, i] * (1.0 - frac) + tab[rows, i + 1] * frac


def fixed_rate(sc: Scenario, tab: np.ndarray, j: int, p: int, resizable: bool = False) -> float:
    """Progress rate of program j alone on p contexts with no other oversubscription (`resizable`: its team
    follows p even when it is fixed)."""
    pr = sc.programs[j]
    if p <= 0:
        return 0.0
    s = float(tab[j, min(p, sc.machine.contexts)])
    team = sc.team(pr)
    malleable = pr.malleable or resizable
    if not malleable and team > p:
        k = pr.oversub_slowdown if pr.oversub_slowdown is not None else sc.machine.oversub_slowdown
        s /= 1.0 + k * (team / p - 1.0)
    elif malleable:
        s = float(tab[j, min(p, team, sc.machine.contexts)])
    return s
