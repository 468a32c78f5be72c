"""The simulation loop: programs progress at their modelled rates while a controller (the daemon's own decide stage, or a reference) allocates contexts."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from scaf.lib.sim import oracle
from scaf.lib.sim.model import (
    CONFIGS,
    EXTRA_CONFIGS,
    POLICY_CONFIGS,
    Scenario,
    interp_rows,
    phase_tables,
    speedup_tables,
)

if TYPE_CHECKING:
    import numpy as np

EPS = 1e-9
# A client's role: a program's one process, a pool's worker, or the pool's parent (which waits on its workers).
MAIN, WORKER, PARENT = 0, 1, 2
# CPU a process burns while it runs no parallel work (a worker between tasks, a parent waiting on its pool), of
# one context: docs/daemon.md, "Idle clients", measured 1-8%.
WAIT_CPU = 0.02


@dataclass
class ProgramResult:
    name: str
    arrival_s: float
    finish_s: float | None  # None: still running at the horizon
    speedup: float  # serial work / (finish - arrival); work done so far when unfinished
    # Its serial work done while it shared the machine (>= 2 programs present)
    # over the time it shared it: its average speedup among others.
    period_speedup: float | None
    mean_threads: float = 0.0  # threads it ran, averaged over its life
    start_team: int = 0  # the team it started with when the start rule gave it its share (0: its own count)


@dataclass
class Timeline:
    """Piecewise-constant state: row i holds from time[i] to time[i + 1] (or end)."""

    time: np.ndarray  # (S,)
    team: np.ndarray  # (S, P) threads each program runs (0 = absent; a pool: its workers' together)
    share: np.ndarray  # (S, P) what the controller decided (cpuset size if not malleable)
    efficiency: np.ndarray  # (S, P) filtered report the policy saw (nan = none)
    speedup: np.ndarray  # (S, P) instantaneous progress rate (serial seconds per second)
    end: float
    phase: np.ndarray | None = None  # (S, P) the phase each program is in (0 = its first)


@dataclass
class Result:
    scenario: str
    config: str
    sum_speedup: float | None  # None when no two programs ever ran together
    multiprogrammed_s: float
    programs: list[ProgramResult]
    timeline: Timeline | None
    partition: list[int] | None = None  # oracle-static / fixed
    note: str = ""
    steps: int = 0
    decisions: int = 0
    extra: dict[str, Any] = field(default_factory=dict)
    cpu_s: float = 0.0  # CPU-seconds the programs' threads used (at most contexts x time)
    end_s: float = 0.0  # when the run ended
    # Serial work done over the time at least one program ran: with one program, its work / life. The
    # comparable figure where sum_speedup is None (no two programs ever ran together).
    lone_speedup: float | None = None


@dataclass
class Memo:
    """What the daemon keeps of one program after a run (docs/memory.md), as the simulator learns it."""

    points: list[tuple[int, float]]  # (team, E) measured, at most 4
    peers: float  # other busy clients beside it, time-weighted mean
    run_s: float  # arrival to departure
    fixed: bool  # the verdict was fixed (by evidence)


def simulate(sc: Scenario, config: str, *, partition: list[int] | None = None, record: bool = True,
             label: str | None = None, min_gain: float = 0.0) -> Result:
    """Run one configuration to the end (every program finished, or the horizon); min_gain: the
    consumption policy's threshold (0 = its default). Programs with `memory = "warm"` get what a first
    run of the same scenario and configuration left the daemon's memory."""
    memory = None
    if config in POLICY_CONFIGS and any(p.memory == "warm" for p in sc.programs):
        prime = Simulation(sc, config, record=False, min_gain=min_gain)
        prime.run()
        memory = prime.learned()
    return Simulation(sc, config, partition=partition, record=record, min_gain=min_gain,
                      memory=memory).run(label)


# Configurations whose every team is set once, at start, as a user sets it without scaf (Simulation.fixed_team).
SET_TEAMS = ("static", "framework")

class Simulation:
    """One configuration of one scenario, stepped from event to event.

    The simulation runs clients, indexed 0..C-1: one per program, or a
    pool's parent and its workers. Every per-client quantity is an array
    over them, so that a step costs a few numpy operations whatever C is;
    results are summed per program (`owner`). The attributes below are the
    whole state between steps.
    """

    def __init__(self, sc: Scenario, config: str, *, partition: list[int] | None = None,
                 record: bool = True, min_gain: float = 0.0, memory: dict[int, Memo] | None = None) -> None:
        import numpy as np

        if config not in (*CONFIGS, *EXTRA_CONFIGS, "fixed") or config == "oracle-static":
            raise ValueError(f"simulate() runs unmodified, static, equipartition, speedup, consumption, "
                             f"oracle-dynamic or fixed, not {config!r}")
        progs = sc.programs
        if partition is not None and len(partition) != len(progs):
            raise ValueError(f"partition has {len(partition)} entries for {len(progs)} programs")
        mach = sc.machine
        self.sc = sc
        self.config = config
        self.partition = partition
        self.record = record
        self.daemon = config in POLICY_CONFIGS
        self.memory = memory or {}
        # The clients: a pool is its parent (first: it starts the workers) and its workers.
        owner, role = [], []
        for j, p in enumerate(progs):
            if p.workers:
                owner += [j] * (p.workers + 1)
                role += [PARENT] + [WORKER] * p.workers
            else:
                owner.append(j)
                role.append(MAIN)
        self.owner = np.array(owner, dtype=np.int64)
        self.role = np.array(role, dtype=np.int64)
        n = len(owner)
        self.n = n
        self.nprog = len(progs)
        # The machine and the controller.
        self.cpus = mach.contexts  # N, the contexts the controller hands out
        self.chunk = mach.effective_chunk
        self.tick = 1.0 / mach.rate_hz
        self.horizon = sc.horizon()
        self.tau = sc.feedback.tau_s
        # What each client is (constant over the run).
        P = [progs[j] for j in owner]
        self.arrival = np.array([p.arrival_s for p in P])
        # Serial seconds to do: a pool's clients never finish by themselves (the pool ends when its tasks do).
        self.work = np.array([p.work_s if r == MAIN else np.inf for p, r in zip(P, role, strict=True)])
        self.region = np.array([p.region_s for p in P])  # serial seconds per parallel region
        self.max_threads = np.array([sc.team(p) for p in P], dtype=np.int64)  # its bound: the count it would read
        # oracle-dynamic knows every curve but no scheduler can resize a team fixed at start: it picks a fixed team
        # (or a runtime's pool) once, at its arrival, as its greedy share of the programs then running, and keeps it.
        self.oracle = config == "oracle-dynamic"
        self.malleable = np.array([p.malleable for p in P])
        self.runtime = np.array([p.team_kind == "runtime" and not self.oracle for p in P])
        # Not under scaf: no client of the daemon and no decision of any controller's; it runs its own count.
        self.foreign = np.array([p.foreign for p in P])
        self.noise = np.array([p.noise for p in P])
        self.oversub = np.array([mach.oversub_slowdown if p.oversub_slowdown is None else p.oversub_slowdown
                                 for p in P])
        # S(p) of each client's current phase (rates() reads it), switched by indexing the per-phase
        # tables when its work done crosses the phase's end.
        tabs, ends = phase_tables(sc)
        self.phase_tabs, self.phase_end = tabs[self.owner], ends[self.owner]
        self.phased = self.phase_tabs.shape[1] > 1
        self.phase = np.zeros(n, dtype=np.int64)
        self.curves = self.phase_tabs[:, 0].copy()
        self.next_bound = self.phase_end[:, 0].copy()
        # Pools: tasks left per program, each task's serial work and the pause between two of a worker's.
        self.queue = np.array([p.tasks if p.workers else 0 for p in progs], dtype=np.int64)
        self.task_work = [p.task_work() if p.workers else [] for p in progs]  # each task's serial seconds, in order
        self.gap_s = np.array([p.task_gap_s for p in progs])
        self.task_end = np.full(n, np.inf)  # a worker's work done at which its task ends
        self.gap_until = np.full(n, np.inf)  # a pausing worker's next task starts then (inf: none is left)
        self.in_gap = self.role != MAIN  # runs no parallel work now (a parent always)
        # Where each client is.
        self.done = np.zeros(n)  # serial work done
        self.finish = np.full(n, np.nan)
        self.present = np.zeros(n, dtype=bool)
        self.team = np.zeros(n, dtype=np.int64)  # threads a malleable client runs now
        self.fixed_team = self.max_threads.copy()  # the team a fixed client (or a runtime's pool) runs
        self.started_with = np.zeros(n, dtype=np.int64)  # the start team the start rule gave it (0: none)
        self.share = np.zeros(n, dtype=np.int64)  # the controller's decision
        self.cpuset = np.full(n, self.cpus, dtype=np.int64)  # cpuset size of a program that is not malleable
        self.gang = np.zeros(n, dtype=np.int64)  # its gang's number (0: in none)
        self.idle_now = np.zeros(n, dtype=bool)  # the daemon counts it idle
        self.woke = np.zeros(n, dtype=bool)  # a WAKE is on its way to the daemon
        self.turn_factor = np.ones(n)  # 1 / the share of time its gang runs
        self.pending = np.zeros(n, dtype=bool)  # malleable, waiting for a region boundary to adopt share
        self.estimate = np.full(n, np.nan)  # the filtered efficiency report (the page's value)
        self.eff_team = np.zeros(n, dtype=np.int64)  # the team the estimate was measured at
        self.armed = np.full(n, np.inf)  # work done at which the first estimate exists
        self.prev = np.zeros(n, dtype=np.int64)
        self.noise_now = np.zeros(n)
        self.cand = np.zeros(n)  # the estimate at a new team size, not published yet
        self.cand_team = np.zeros(n, dtype=np.int64)
        self.cand_age = np.zeros(n)
        # Sums over the time two or more programs shared the machine (per program).
        self.mp_time = 0.0
        self.mp_work = np.zeros(self.nprog)
        self.mp_present = np.zeros(self.nprog)
        # Contexts in use: each client's thread-seconds and CPU-seconds, and the machine's CPU-seconds.
        self.thread_s = np.zeros(n)
        self.proc_cpu_s = np.zeros(n)
        self.cpu_s = 0.0
        self.peer_s = np.zeros(n)  # other busy clients beside it, integrated over time (the memory's peers)
        self.busy_time = 0.0  # time at least one program ran, and the serial work done in it
        self.busy_work = 0.0
        self.rng = np.random.default_rng(sc.seed)
        self.order = sorted(range(n), key=lambda c: (self.arrival[c], c))
        self.rank = np.empty(n, dtype=np.int64)
        self.rank[self.order] = np.arange(n)  # the daemon lists clients in arrival order
        self.arrived = 0  # how many of self.order have arrived
        # The deciders.
        self.turns = None
        self.lookout = None
        if self.daemon:
            from scaf.lib import decide

            self.turns = decide.Turns(config, self.cpus, self.chunk, n, min_gain=min_gain, gang=mach.gangs)
            if self.foreign.any():
                # scafd's lookout (collect/foreignload.c): once a second, the CPU of what is no client.
                self.lookout = decide.Lookout(self.cpus)
        self.next_lookout = decide.LOOKOUT_INTERVAL_S if self.lookout is not None else math.inf
        self.lookout_cpu = np.zeros(n)  # each client's CPU-seconds at the last sample
        self.foreign_load = np.zeros(n)  # each foreign program's smoothed load, as the foreign list keeps it
        self.foreign_seen = np.zeros(n, dtype=bool)  # in the foreign list since an earlier sample
        self.foreign_gone = 0.0  # the smoothed load of the foreign programs that ended since the last sample
        self.greedy_cache: dict[tuple[int, ...], list[int]] = {}
        self.rates_fixed = None
        if config == "oracle-dynamic":
            # rates_fixed: the current phase's, like self.curves; phase_rates[j, k]: every phase's.
            # A fixed client's rows become its start team's when it arrives (_oracle_start_team).
            pr = np.stack([oracle.rate_table(sc, tabs[:, k], resizable=True) for k in range(tabs.shape[1])], axis=1)
            self.phase_rates_free = pr[self.owner]
            self.phase_rates = self.phase_rates_free.copy()
            self.rates_fixed = self.phase_rates[:, 0].copy()
        self.oracle_bound = np.array(oracle.max_threads(sc))[self.owner]  # the oracles' bound per client
        if config == "static":
            # OMP_NUM_THREADS = an equal share of the machine for each program, a pool's split between its workers; a
            # foreign program (not the user's to set) runs its own count, but it is counted in the split.
            share = max(self.cpus // max(self.nprog, 1), 1)
            self.fixed_team = np.array([int(self.max_threads[c]) if progs[j].foreign else
                                        max(share // max(progs[j].workers, 1), 1) for c, j in enumerate(owner)],
                                       dtype=np.int64)
        elif config == "fixed" and partition is not None:
            # A fixed partition is each program's start team (OMP_NUM_THREADS = its part): a fixed team runs it.
            part = [max(partition[j] // max(progs[j].workers, 1), 1) for j in owner]
            self.fixed_team = np.where(self.malleable | self.foreign, self.fixed_team,
                                       np.array(part, dtype=np.int64))
        elif config == "framework":
            # A pool's workers as its own rule starts them; every other program (and a pool's parent) plain.
            self.fixed_team = np.array([
                (1 if progs[j].rule == "dask" else max(self.cpus // progs[j].workers, 1)) if r == WORKER
                else int(self.max_threads[c]) for c, (j, r) in enumerate(zip(owner, role, strict=True))],
                dtype=np.int64)
        # The clock.
        self.t = 0.0
        self.tick_k = 0
        self.steps = 0
        self.decisions = 0
        self.event = True
        self.rec_t: list[float] = []
        self.rec: list[tuple[np.ndarray, ...]] = []

    # --- arrivals and the start team -------------------------------------------------------------------

    def _arrive(self, c: int) -> None:
        """Client c starts: HELLO to the daemon, the start team, a pool worker's first task."""
        import numpy as np

        self.present[c] = True
        j = int(self.owner[c])
        p = self.sc.programs[j]
        if self.role[c] == WORKER:
            self._next_task(c, j)
        if self.foreign[c]:
            return  # no HELLO: it runs its own count, and the daemon sees it only as foreign load
        if self.oracle and not self.malleable[c]:
            self._oracle_start_team(c)
        if not self.daemon:
            return
        from scaf.lib import decide

        assert self.turns is not None
        memo = self.memory.get(j) if p.memory == "warm" and self.role[c] != PARENT else None
        # A pool's parent and workers are one program's processes (the daemon's process tree says so).
        self.turns.arrive(c, int(self.max_threads[c]), self.t, group=j + 1 if p.workers else 0)
        if memo is not None:
            self.turns.set_memory(c, memo.points, self.t)
        # The start team (recall/recall.c: scaf_recall_arrive): the running programs that outlast much of its run,
        # each counted once; its own program's running clients (a pool's other workers) split its share with it.
        others = np.flatnonzero(self.present & ~self.idle_now & ~self.foreign)
        programs: set[int] = set()
        kin = 0
        for o in others:
            if o == c:
                continue
            om = self.memory.get(int(self.owner[o])) if self.sc.programs[int(self.owner[o])].memory == "warm" else None
            held = (not self.malleable[o] and not self.runtime[o]) and self._team_of(int(o)) >= self.cpus
            if decide.start_outlasts(self.t - float(self.arrival[o]), om.run_s if om else 0.0,
                                     memo.run_s if memo else 0.0, held):
                if self.owner[o] == j:
                    kin += 1
                else:
                    programs.add(int(self.owner[o]))
        peers = round(memo.peers) if memo is not None else 0
        st = decide.start_team(max(self._available() // (1 + kin), 1), len(programs), peers, int(self.max_threads[c]))
        if self.runtime[c]:
            team = st  # scaf run gives the runtime's own variable its share
        elif not self.malleable[c]:
            team = decide.start_rule(int(self.max_threads[c]), st, user_fixed=p.fixed_by == "user",
                                     memory_runs=1 if memo is not None else 0,
                                     memory_verdict=decide.VERDICT_FIXED if memo and memo.fixed else
                                     decide.VERDICT_MALLEABLE)
        else:
            team = 0
        if team:
            self.fixed_team[c] = team
            self.started_with[c] = team

    def _available(self) -> int:
        """The contexts the daemon hands its clients now: all of them, less the lookout's foreign load."""
        return self.lookout.available(self.foreign_gone) if self.lookout is not None else self.cpus

    def _oracle_room(self) -> int:
        """The contexts oracle-dynamic hands out: all of them, less the threads foreign programs run now (it knows
        them, as it knows every curve, and cannot steer them)."""
        f = self.present & self.foreign
        return max(self.cpus - int(self.max_threads[f].sum()), 1) if f.any() else self.cpus

    def _lookout_sample(self) -> None:
        """scafd's lookout, once a second: the CPU the foreign programs burned over the last interval, each one's own
        average (the foreign list's) and the machine's (the lookout's), less what ended since the last sample."""
        import numpy as np

        from scaf.lib import decide

        assert self.lookout is not None
        f = np.flatnonzero(self.foreign)
        busy = (self.proc_cpu_s[f] - self.lookout_cpu[f]) / decide.LOOKOUT_INTERVAL_S
        for k, c in enumerate(f):
            if self.present[c] and self.foreign_seen[c]:  # the list starts a process from nothing, then follows it
                self.foreign_load[c] = decide.Lookout.ema(float(self.foreign_load[c]), float(busy[k]))
            self.foreign_seen[c] = self.present[c]
        self.lookout.sample(float(busy.sum()), self.foreign_gone)
        self.foreign_gone = 0.0
        self.lookout_cpu[f] = self.proc_cpu_s[f]

    def _oracle_start_team(self, c: int) -> None:
        """oracle-dynamic's start team for fixed client c: its greedy share beside the clients running now, on the
        true curves (its own as if it followed its share); from then on its rate rows are those of that team."""
        import numpy as np

        run = np.flatnonzero(self.present & ~self.in_gap & ~self.foreign)
        rows = self.rates_fixed[run].copy()  # type: ignore[index]
        i = int(np.flatnonzero(run == c)[0])
        rows[i] = self.phase_rates_free[c, self.phase[c]]
        bound = [int(self.oracle_bound[o]) for o in run]
        bound[i] = int(min(self.max_threads[c], self.cpus))
        least = self._oracle_least(run)
        if least is not None:
            least[i] = 0
        team = max(oracle.greedy(rows, bound, self._oracle_room(), self.chunk, least)[i], 1)
        self.fixed_team[c] = team
        self.started_with[c] = team
        self.phase_rates[c] = oracle.team_rates(self.phase_tabs[c], team, float(self.oversub[c]))
        self.rates_fixed[c] = self.phase_rates[c, self.phase[c]]  # type: ignore[index]
        self.greedy_cache.clear()

    def _oracle_least(self, run: np.ndarray) -> list[int] | None:
        """What oracle-dynamic gives each client of RUN at least: a fixed team its whole team (never squeezed
        onto fewer contexts than threads, as scafd never squeezes), None when every team follows its share."""
        if self.malleable[run].all():
            return None
        return [0 if self.malleable[c] else int(self.fixed_team[c]) for c in run]

    def _team_of(self, c: int) -> int:
        return int(self.fixed_team[c]) if not self.malleable[c] or self.runtime[c] else int(self.team[c])

    def _next_task(self, c: int, j: int) -> None:
        """A pool worker takes the next task, or waits for the pool to end when none is left."""
        if self.queue[j] > 0:
            work = self.task_work[j][len(self.task_work[j]) - int(self.queue[j])]
            self.queue[j] -= 1
            self.task_end[c] = self.done[c] + work
            self.in_gap[c] = False
            if self.idle_now[c]:
                # Its first region finds `idle` on its page and sends a WAKE: the referee is due at once.
                self.woke[c] = True
                self.event = True
        else:
            self.task_end[c] = math.inf
            self.in_gap[c] = True
            self.gap_until[c] = math.inf
            self._pool_check(j)

    def _task_done(self, c: int) -> None:
        """A worker ended a task: it pauses before the next, or waits for the pool to end."""
        j = int(self.owner[c])
        self.done[c] = self.task_end[c]
        self.task_end[c] = math.inf
        self.in_gap[c] = True
        self.gap_until[c] = self.t + float(self.gap_s[j]) if self.queue[j] > 0 else math.inf
        self._pool_check(j)

    def _pool_check(self, j: int) -> None:
        """The pool of program j ends, parent and workers, once no task is left and every worker waits."""
        import numpy as np

        w = (self.owner == j) & (self.role == WORKER)
        if self.queue[j] == 0 and np.isinf(self.gap_until[w]).all() and np.isinf(self.task_end[w]).all():
            mine = self.owner == j
            self.present[mine] = False
            self.finish[mine] = self.t
            self.event = True

    # --- the controller ----------------------------------------------------------------------------------

    def decide(self) -> None:
        """One decision of the controller for the clients present, in the daemon's client order."""
        import numpy as np

        idx = np.flatnonzero(self.present)
        if not len(idx):
            return
        idx = idx[np.argsort(self.rank[idx], kind="stable")]
        if self.config == "unmodified":
            out = self.max_threads[idx]
        elif self.config in SET_TEAMS:
            out = self.fixed_team[idx]
        elif self.config == "fixed":
            assert self.partition is not None
            pt = np.array(self.partition, dtype=np.int64)[self.owner[idx]]
            w = np.array([max(self.sc.programs[j].workers, 1) for j in self.owner[idx]])
            out = np.maximum(pt // w, 1)
        elif self.config == "oracle-dynamic":
            out = self.share[idx].copy()
            mine = ~self.in_gap[idx] & ~self.foreign[idx]
            run = idx[mine]
            room = self._oracle_room()
            key = (*(int(c) for c in run), -room)
            if key not in self.greedy_cache:
                self.greedy_cache[key] = oracle.greedy(self.rates_fixed[run], [int(self.oracle_bound[c]) for c in run],  # type: ignore[index]
                                                       room, self.chunk, self._oracle_least(run))
            out[mine] = self.greedy_cache[key]
        else:
            out = self.share[idx].copy()
            cl = ~self.foreign[idx]
            out[cl] = self._daemon(idx[cl])
        out = np.where(self.foreign[idx], self.max_threads[idx], out)  # a foreign program runs its own count
        self.share[idx] = out
        self.prev[idx] = out
        if not self.daemon and self.config != "unmodified":
            self.cpuset[idx] = np.where(self.malleable[idx], self.cpus, out)  # affinity applies at once
        if not self.sc.feedback.lazy or int((~self.foreign[idx]).sum()) >= 2:  # lazy: another client is there
            fresh = idx[np.isinf(self.armed[idx])]
            # An estimate needs one whole region after the next boundary (the experiment).
            nb = np.ceil(self.done[fresh] / self.region[fresh] - EPS) * self.region[fresh]
            self.armed[fresh] = nb + self.region[fresh]

    def _daemon(self, idx: np.ndarray) -> np.ndarray:
        """The daemon's turn for clients IDX: their pages as the layer would have written them, then scafd's own
        decide stage (scaf_decide_turn)."""
        import numpy as np

        from scaf.lib import decide

        d = self.turns
        assert d is not None
        rep = d.reports
        regions = np.where(self.role[idx] == PARENT, 0, np.floor(self.done[idx] / self.region[idx] + EPS))
        rep["regions"][idx] = regions
        team = np.where(self.malleable[idx], self.team[idx], self.fixed_team[idx])
        rep["last_team"][idx] = np.where(regions > 0, team, 0)
        known = ~np.isnan(self.estimate[idx])
        rep["eff_team"][idx] = np.where(known, self.eff_team[idx], 0)
        rep["efficiency"][idx] = np.where(known, self.estimate[idx], -1.0)
        rep["estimate"][idx] = np.where(known, decide.ESTIMATE_MEASURED, decide.ESTIMATE_NONE)
        # A fixed team: the layer's verdict at its first region, or from the start when its start team says why.
        fixed = ~self.malleable[idx] & ~self.runtime[idx]
        said = self.started_with[idx] > 0
        rep["verdict"][idx] = np.where(fixed & ((regions > 0) | said), decide.VERDICT_FIXED, decide.VERDICT_UNDECIDED)
        rep["source"][idx] = np.where(fixed, decide.SOURCE_EVIDENCE, decide.SOURCE_DEFAULT)
        rep["fixed_team"][idx] = np.where(fixed, self.fixed_team[idx], self.max_threads[idx])
        rep["started_with"][idx] = self.started_with[idx]
        rep["runtime_team"][idx] = np.where(self.runtime[idx] & (self.fixed_team[idx] >= 2), self.fixed_team[idx], 0)
        ticks = (self.proc_cpu_s * d.hz).astype(np.uint64)
        out = d.turn(self.t, idx, self._available(), self.woke, ticks)
        self.woke[idx] = False
        self.gang[idx] = out["gang_slot"]
        self.idle_now[idx] = out["idle"] != 0
        self.cpuset[idx] = np.where(out["control"] == decide.CONTROL_CPUSET, out["threads"], self.cpus)
        return out["threads"].astype(np.int64)

    # --- progress ------------------------------------------------------------------------------------------

    def _threads(self) -> np.ndarray:
        """The threads each client runs now (0 when absent or between tasks)."""
        import numpy as np

        busy = self.present & ~self.in_gap
        fixed = ~self.malleable | self.runtime | (self.config in SET_TEAMS)
        return np.where(fixed, np.minimum(self.fixed_team, self.cpuset), self.team) * busy

    def _rates_of(self, demand: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Progress rates and CPU use of clients running `demand` threads together (the others not at all)."""
        import numpy as np

        cpus = self.cpus
        R = float(demand.sum())
        g = cpus / R if R > cpus else 1.0
        s = interp_rows(self.curves, demand * g)
        pen = 1.0 / (1.0 + self.oversub * max(R / cpus - 1.0, 0.0))
        fixed = ~self.malleable | self.runtime
        inner = np.where(fixed & (self.fixed_team > self.cpuset),
                         1.0 / (1.0 + self.oversub * (self.fixed_team / np.maximum(self.cpuset, 1) - 1.0)), 1.0)
        return s * pen * inner * (demand > 0), demand * g

    def rates(self) -> np.ndarray:
        """Each client's progress rate now (serial seconds per second); sets cpu_rate (CPUs each one burns)."""
        import numpy as np

        demand = self._threads()
        busy = demand > 0
        gangs = int(self.gang[self.present].max()) if self.daemon and busy.any() else 0
        self.turn_factor[:] = 1.0
        if gangs < 2:
            r, self.cpu_rate = self._rates_of(demand)
        else:
            # Gangs take turns of the whole machine (fluid: each gang runs 1/gangs of the time); a client in no
            # gang runs through every turn, beside whichever gang has it.
            r = np.zeros(self.n)
            self.cpu_rate = np.zeros(self.n)
            free = self.gang == 0
            for k in range(1, gangs + 1):
                m = (self.gang == k) | free
                rk, ck = self._rates_of(np.where(m, demand, 0))
                r += rk / gangs
                self.cpu_rate += ck / gangs
            self.turn_factor[busy & ~free] = gangs
        waiting = self.present & self.in_gap
        self.cpu_rate = self.cpu_rate + waiting * WAIT_CPU
        return r

    def _record(self, team: np.ndarray, share: np.ndarray, estimate: np.ndarray, rate: np.ndarray) -> None:
        """One timeline row, summed per program (a pool's workers together)."""
        import numpy as np

        o, P = self.owner, self.nprog

        def per(x: np.ndarray) -> np.ndarray:
            return np.bincount(o, weights=x, minlength=P)

        with np.errstate(invalid="ignore"):
            cnt = np.bincount(o, weights=~np.isnan(estimate), minlength=P)
            est = np.where(cnt > 0, per(np.nan_to_num(estimate)) / np.maximum(cnt, 1), np.nan)
        first = np.zeros(P, dtype=np.int64)
        first[o[::-1]] = np.arange(self.n)[::-1]
        self.rec_t.append(self.t)
        self.rec.append((per(team).astype(np.int64), per(share).astype(np.int64), est, per(rate),
                         self.phase[first].copy()))

    def step(self) -> bool:
        """Advance to the next event (arrival, tick, region boundary, finish, task, horizon); False at the end."""
        import numpy as np

        n, order, arrival = self.n, self.order, self.arrival
        present, mall, team, share, region, done = (self.present, self.malleable, self.team, self.share,
                                                    self.region, self.done)
        if self.arrived < n and not present.any() and arrival[order[self.arrived]] > self.t + EPS:
            # Nobody to run until the next arrival: skip the idle ticks.
            if self.record:
                z = np.zeros(n, dtype=np.int64)
                self._record(z, z, np.full(n, np.nan), np.zeros(n))
            self.t = float(arrival[order[self.arrived]])
        t = self.t
        while self.arrived < n and arrival[order[self.arrived]] <= t + EPS:
            self._arrive(order[self.arrived])
            self.arrived += 1
            self.event = True
        for c in np.flatnonzero(present & self.in_gap & (self.gap_until <= t + EPS)):
            self.gap_until[c] = np.inf
            self._next_task(int(c), int(self.owner[c]))
        if t >= self.next_lookout - EPS:
            from scaf.lib import decide

            self._lookout_sample()
            self.next_lookout = (math.floor(t / decide.LOOKOUT_INTERVAL_S + EPS) + 1) * decide.LOOKOUT_INTERVAL_S
        if t >= self.tick_k * self.tick - EPS:
            self.tick_k = math.floor(t / self.tick + EPS) + 1
            self.noise_now = self.rng.standard_normal(n) * self.noise  # drawn for all: configurations share the noise
            self.event = True
        if self.event:
            self.decide()
            self.decisions += 1
            self.event = False
            newm = present & mall & (team == 0)
            team[newm] = share[newm]  # the first region already runs with the allocation
            self.pending = present & mall & (share != team)
        pend = self.pending
        nb = np.ceil(done / region - EPS) * region
        at_b = pend & (nb - done <= EPS * np.maximum(region, 1.0))
        if at_b.any():
            team[at_b] = share[at_b]
            pend &= ~at_b
            nb = np.ceil(done / region - EPS) * region

        r = self.rates()
        with np.errstate(divide="ignore", invalid="ignore"):
            ends = np.minimum(self.work, self.task_end)
            tf = np.where(present & (r > 0), t + (ends - done) / r, np.inf)
            tb = np.where(pend & (r > 0), t + (nb - done) / r, np.inf)
        t_arr = arrival[order[self.arrived]] if self.arrived < n else np.inf
        t_gap = float(self.gap_until[present & self.in_gap].min()) if (present & self.in_gap).any() else np.inf
        t1 = min(self.tick_k * self.tick, t_arr, float(tf.min()), float(tb.min()), t_gap, self.horizon, self.next_lookout)
        if self.phased:  # a phase change is an event too: rates stay constant within a step
            with np.errstate(divide="ignore", invalid="ignore"):
                tp = np.where(present & (r > 0), t + (self.next_bound - done) / r, np.inf)
            t1 = min(t1, float(tp.min()))
        t1 = max(t1, t)
        dt = t1 - t
        running = self._threads()
        if self.record:
            self._record(running, share * present, np.where(present, self.estimate, np.nan), r)
        done += r * dt
        # The event that ended the step happens even where rounding left the
        # work a hair short of it (or t1 == t at a large t): snap to it.
        fin_now = present & (tf <= t1)
        done[fin_now] = np.minimum(self.work, self.task_end)[fin_now]
        bnd_now = pend & (tb <= t1)
        done[bnd_now] = np.maximum(done[bnd_now], nb[bnd_now])
        if self.phased:
            ph_now = present & (tp <= t1)
            done[ph_now] = np.maximum(done[ph_now], self.next_bound[ph_now])
            self._next_phase()
        self.thread_s += running * dt
        self.proc_cpu_s += self.cpu_rate * dt
        self.cpu_s += min(float(self.cpu_rate.sum()), float(self.cpus)) * dt
        # The memory's peers: the other busy programs, each counted once (recall/recall.c's tally).
        busy_c = present & ~self.idle_now
        busy_programs = np.zeros(self.nprog, dtype=bool)
        busy_programs[self.owner[busy_c]] = True
        self.peer_s += present * (float(busy_programs.sum()) - busy_programs[self.owner]) * dt
        owners = np.unique(self.owner[present])
        if present.any():
            self.busy_time += dt
            self.busy_work += float(r.sum()) * dt
        per_r = np.bincount(self.owner, weights=r, minlength=self.nprog)
        if len(owners) >= 2:
            self.mp_time += dt
            self.mp_work += per_r * dt
            self.mp_present[owners] += dt
        if dt > 0:
            self._feedback(r, dt)
        self.t = t = t1
        self.steps += 1
        fin_task = present & np.isfinite(self.task_end)
        fin_task[fin_task] = self.task_end[fin_task] <= done[fin_task] + EPS * np.maximum(self.task_end[fin_task], 1.0)
        for c in np.flatnonzero(fin_task):
            self._task_done(int(c))
        ended = present & (done >= self.work * (1.0 - EPS))
        if self.lookout is not None and (ended & self.foreign).any():
            # The foreign list sees it gone at the daemon's next turn: its own average leaves the lookout's at once.
            from scaf.lib import decide

            for c in np.flatnonzero(ended & self.foreign):
                self.foreign_gone += decide.Lookout.gone(float(self.foreign_load[c]))
                self.foreign_load[c] = 0.0
        if ended.any():
            done[ended] = self.work[ended]
            self.finish[ended] = t
            present &= ~ended
            # A client's departure is an event (its socket closes); the daemon sees a foreign program's end only at
            # its next turn. Every other controller (the oracles, the set teams) runs no lookout: any end is one.
            self.event = self.event or bool((ended & ~self.foreign).any()) or self.lookout is None
        pend &= present
        hit = pend & ((done >= nb - EPS * np.maximum(region, 1.0)) | bnd_now)
        if hit.any():
            team[hit] = share[hit]
            pend &= ~hit
        return not (t >= self.horizon - EPS or (self.arrived >= n and not present.any()))

    def _next_phase(self) -> None:
        """Clients whose work done reached the end of their phase enter the next one: their true curve
        (and oracle-dynamic's rate table) changes; the policies only see it in what the programs report."""
        import numpy as np

        while True:
            crossed = np.flatnonzero(self.done >= self.next_bound * (1.0 - EPS) - EPS)  # inf: the last phase
            if not len(crossed):
                return
            self.phase[crossed] += 1
            k = self.phase[crossed]
            self.curves[crossed] = self.phase_tabs[crossed, k]
            self.next_bound[crossed] = self.phase_end[crossed, k]
            if self.rates_fixed is not None:
                self.rates_fixed[crossed] = self.phase_rates[crossed, k]
                self.greedy_cache.clear()  # its keys are the clients present, not their phases

    def _feedback(self, r: np.ndarray, dt: float) -> None:
        """The layer reports E = progress / threads in its regions (what serial baselines measure), noisy,
        through an RC low-pass filter."""
        import numpy as np

        est = self.estimate
        team = np.where(self.malleable, self.team, self.fixed_team)
        ready = self.present & ~self.in_gap & ~self.foreign & (self.done >= self.armed - EPS)
        # In a gang, a region runs in its gang's turn: its efficiency is the rate in the turn.
        x = np.clip(np.where(team > 0, r * self.turn_factor / np.maximum(team, 1), 0.0) * (1.0 + self.noise_now), 0.0, 1.0)
        first = ready & np.isnan(est)
        est[first] = x[first]
        a = 1.0 - math.exp(-dt / self.tau) if self.tau > 0 else 1.0
        same = ready & ~first & (self.eff_team == team)
        est[same] += a * (x[same] - est[same])
        self.eff_team[first | same] = team[first | same]
        # As in the layer (filter.c): a new team size is filtered apart and replaces the published
        # pair once it has a time constant of samples; until then the old pair stands.
        moved = ready & ~first & ~same
        restart = moved & (self.cand_team != team)
        self.cand[restart] = x[restart]
        self.cand_team[restart] = team[restart]
        self.cand_age[restart] = 0.0
        cont = moved & ~restart
        self.cand[cont] += a * (x[cont] - self.cand[cont])
        self.cand_age[cont] += dt
        promote = moved & (self.cand_age >= self.tau)
        est[promote] = self.cand[promote]
        self.eff_team[promote] = team[promote]
        self.cand_team[promote | first | same] = 0

    def learned(self) -> dict[int, Memo]:
        """What the daemon's memory keeps of each program after this run (memory.c: its last measured point and the
        policy state's points at other teams; its peers; its run time; the verdict), a pool's from its first worker."""
        import numpy as np

        out: dict[int, Memo] = {}
        if self.turns is None:
            return out
        st = self.turns.state
        for j in range(self.nprog):
            cs = np.flatnonzero(self.owner == j)
            c = int(cs[1] if self.sc.programs[j].workers else cs[0])  # a pool's first worker (cs[0]: its parent)
            pts: list[tuple[int, float]] = []
            if not math.isnan(self.estimate[c]) and self.eff_team[c] >= 2 and self.estimate[c] > 0:
                pts.append((int(self.eff_team[c]), float(self.estimate[c])))
            pp = st["points"]["p"][c]
            pe = st["points"]["e"][c]
            for p, e in zip(pp, pe, strict=True):
                if p >= 2 and e > 0 and all(p != q for q, _ in pts) and len(pts) < 4:
                    pts.append((int(p), float(e)))
            end = self.finish[c] if not math.isnan(self.finish[c]) else self.t
            life = max(float(end - self.arrival[c]), 1e-9)
            out[j] = Memo(points=pts, peers=float(self.peer_s[c] / life), run_s=life,
                          fixed=not self.sc.programs[j].malleable and self.sc.programs[j].team_kind == "fixed")
        return out

    def run(self, label: str | None = None) -> Result:
        """Step to the end and return the result."""
        while self.step():
            pass
        return self.result(label)

    def result(self, label: str | None = None) -> Result:
        import numpy as np

        t = self.t
        out_progs = []
        for j, p in enumerate(self.sc.programs):
            cs = self.owner == j
            fin = self.finish[cs]
            finished = not np.isnan(fin).any()
            end = float(fin.max()) if finished else t
            life = end - p.arrival_s
            done = float(self.done[cs].sum())
            starts = self.started_with[cs & (self.role != PARENT)]
            out_progs.append(ProgramResult(
                name=p.name,
                arrival_s=p.arrival_s,
                finish_s=end if finished else None,
                speedup=float(done / life) if life > 0 else 0.0,
                period_speedup=float(self.mp_work[j] / self.mp_present[j]) if self.mp_present[j] > 0 else None,
                mean_threads=float(self.thread_s[cs].sum() / life) if life > 0 else 0.0,
                start_team=int(starts.max()) if len(starts) else 0,
            ))
        tl = None
        if self.record:
            cols = list(zip(*self.rec, strict=True)) if self.rec else [[] for _ in range(5)]
            tl = Timeline(np.array(self.rec_t), np.array(cols[0]), np.array(cols[1]), np.array(cols[2]),
                          np.array(cols[3]), end=t, phase=np.array(cols[4]))
        return Result(
            scenario=self.sc.name,
            config=label or self.config,
            sum_speedup=float(self.mp_work.sum() / self.mp_time) if self.mp_time > 0 else None,
            multiprogrammed_s=self.mp_time,
            programs=out_progs,
            timeline=tl,
            partition=list(self.partition) if self.partition is not None else None,
            steps=self.steps,
            decisions=self.decisions,
            cpu_s=self.cpu_s,
            end_s=t,
            lone_speedup=self.busy_work / self.busy_time if self.busy_time > 0 else None,
        )


def run(sc: Scenario, config: str, *, record: bool = True, min_gain: float = 0.0) -> Result:
    """One configuration of CONFIGS (oracle-static included) or EXTRA_CONFIGS."""
    if config != "oracle-static":
        return simulate(sc, config, record=record, min_gain=min_gain)
    n = len(sc.programs)
    if n > oracle.MAX_STATIC_PROGRAMS:
        return Result(sc.name, config, None, 0.0, [], None,
                      note=f"not searched: {n} programs (the exhaustive search covers 1-{oracle.MAX_STATIC_PROGRAMS})")
    if any(p.workers for p in sc.programs):
        return Result(sc.name, config, None, 0.0, [], None, note="not searched: a pool's tasks have no fixed rate")
    if any(p.foreign for p in sc.programs):
        return Result(sc.name, config, None, 0.0, [], None, note="not searched: a foreign program is no one's to "
                                                                 "partition")
    part, _ = oracle.best_static(sc, speedup_tables(sc))
    res = simulate(sc, "fixed", partition=part, record=record, label="oracle-static")
    res.note = "best fixed partition " + "/".join(str(x) for x in part)
    return res


def run_all(sc: Scenario, configs: list[str] | tuple[str, ...] = CONFIGS, *, record: bool = True,
            min_gain: float = 0.0) -> list[Result]:
    return [run(sc, c, record=record, min_gain=min_gain) for c in configs]
