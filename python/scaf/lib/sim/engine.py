"""The simulation loop: programs progress at their modelled rates while a controller allocates contexts."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from scaf.lib.sim import oracle
from scaf.lib.sim.model import (
    CONFIGS,
    POLICY_CONFIGS,
    Scenario,
    interp_rows,
    phase_tables,
    speedup_tables,
)

if TYPE_CHECKING:
    import numpy as np

EPS = 1e-9


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


@dataclass
class Timeline:
    """Piecewise-constant state: row i holds from time[i] to time[i + 1] (or end)."""

    time: np.ndarray  # (S,)
    team: np.ndarray  # (S, P) team each program runs (0 = absent)
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


def simulate(sc: Scenario, config: str, *, partition: list[int] | None = None, record: bool = True,
             label: str | None = None, min_gain: float = 0.0) -> Result:
    """Run one configuration to the end (every program finished, or the horizon); min_gain: the
    consumption policy's threshold (0 = its default)."""
    return Simulation(sc, config, partition=partition, record=record, min_gain=min_gain).run(label)


class Simulation:
    """One configuration of one scenario, stepped from event to event.

    Programs are indexed 0..P-1 in scenario order; every per-program quantity
    is an array over them, so that a step costs a few numpy operations
    whatever P is. The attributes below are the whole state between steps.
    """

    def __init__(self, sc: Scenario, config: str, *, partition: list[int] | None = None,
                 record: bool = True, min_gain: float = 0.0) -> None:
        import numpy as np

        if config not in (*CONFIGS, "fixed") or config == "oracle-static":
            raise ValueError(f"simulate() runs unmodified, equipartition, speedup, consumption, oracle-dynamic or fixed, "
                             f"not {config!r}")
        progs = sc.programs
        n = len(progs)
        mach = sc.machine
        if partition is not None and len(partition) != n:
            raise ValueError(f"partition has {len(partition)} entries for {n} programs")
        self.sc = sc
        self.config = config
        self.partition = partition
        self.record = record
        self.n = n
        # The machine and the controller.
        self.cpus = mach.contexts  # N, the contexts the controller hands out
        self.chunk = mach.effective_chunk
        self.tick = 1.0 / mach.rate_hz
        self.horizon = sc.horizon()
        self.tau = sc.feedback.tau_s
        # What each program is (constant over the run).
        self.arrival = np.array([p.arrival_s for p in progs])
        self.work = np.array([p.work_s for p in progs])  # serial seconds to do
        self.region = np.array([p.region_s for p in progs])  # serial seconds per parallel region
        self.max_threads = np.array([sc.team(p) for p in progs], dtype=np.int64)  # the team it starts with
        self.malleable = np.array([p.malleable for p in progs])
        self.noise = np.array([p.noise for p in progs])
        self.oversub = np.array([mach.oversub_slowdown if p.oversub_slowdown is None else p.oversub_slowdown
                                 for p in progs])
        # S(p) of each program's current phase (rates() reads it), switched by indexing the per-phase
        # tables when its work done crosses the phase's end.
        self.phase_tabs, self.phase_end = phase_tables(sc)
        self.phased = self.phase_tabs.shape[1] > 1
        self.phase = np.zeros(n, dtype=np.int64)
        self.curves = self.phase_tabs[:, 0].copy()
        self.next_bound = self.phase_end[:, 0].copy()
        # Where each program is.
        self.done = np.zeros(n)  # serial work done
        self.finish = np.full(n, np.nan)
        self.present = np.zeros(n, dtype=bool)
        self.team = np.zeros(n, dtype=np.int64)  # threads the program runs now
        self.share = np.zeros(n, dtype=np.int64)  # the controller's decision
        self.cpuset = np.full(n, self.cpus, dtype=np.int64)  # cpuset size of a program that is not malleable
        self.pending = np.zeros(n, dtype=bool)  # malleable, waiting for a region boundary to adopt share
        self.estimate = np.full(n, np.nan)  # the filtered efficiency report (the page's value)
        self.eff_team = np.zeros(n, dtype=np.int64)  # the team the estimate was measured at
        self.armed = np.full(n, np.inf)  # work done at which the first estimate exists
        self.prev = np.zeros(n, dtype=np.int64)
        self.prev_coef = np.zeros(n)
        self.noise_now = np.zeros(n)
        self.cand = np.zeros(n)  # the estimate at a new team size, not published yet
        self.cand_team = np.zeros(n, dtype=np.int64)
        self.cand_age = np.zeros(n)
        # Sums over the time two or more programs shared the machine.
        self.mp_time = 0.0
        self.mp_work = np.zeros(n)
        self.mp_present = np.zeros(n)
        # Contexts in use: each program's thread-seconds, and the machine's CPU-seconds (threads
        # running, at most the contexts: oversubscribed threads share them).
        self.thread_s = np.zeros(n)
        self.cpu_s = 0.0
        self.busy_time = 0.0  # time at least one program ran, and the serial work done in it
        self.busy_work = 0.0
        self.rng = np.random.default_rng(sc.seed)
        self.order = sorted(range(n), key=lambda j: (progs[j].arrival_s, j))
        self.rank = np.empty(n, dtype=np.int64)
        self.rank[self.order] = np.arange(n)  # the daemon lists clients in arrival order
        self.arrived = 0  # how many of self.order have arrived
        # The deciders.
        self.batch = None
        if config in POLICY_CONFIGS:
            from scaf.lib import policy

            self.batch = policy.Batch(config, self.cpus, self.chunk, n, min_gain=min_gain)
            # What the daemon keeps per client between rounds: the probe clock and the noise of E.
            self.state = [policy.ClientState() for _ in progs]
        self.greedy_cache: dict[tuple[int, ...], list[int]] = {}
        self.rates_fixed = None
        if config == "oracle-dynamic":
            # rates_fixed: the current phase's, like self.curves; phase_rates[j, k]: every phase's.
            self.phase_rates = np.stack([oracle.rate_table(sc, self.phase_tabs[:, k])
                                         for k in range(self.phase_tabs.shape[1])], axis=1)
            self.rates_fixed = self.phase_rates[:, 0].copy()
        self.oracle_bound = oracle.max_threads(sc)  # the oracles' bound per program
        # The clock.
        self.t = 0.0
        self.tick_k = 0
        self.steps = 0
        self.decisions = 0
        self.event = True
        self.rec_t: list[float] = []
        self.rec_team: list[np.ndarray] = []
        self.rec_share: list[np.ndarray] = []
        self.rec_estimate: list[np.ndarray] = []
        self.rec_rate: list[np.ndarray] = []
        self.rec_phase: list[np.ndarray] = []

    def decide(self) -> None:
        """One decision of the controller for the programs present, in the daemon's client order."""
        import numpy as np

        idx = np.flatnonzero(self.present)
        if not len(idx):
            return
        idx = idx[np.argsort(self.rank[idx], kind="stable")]
        if self.config == "unmodified":
            out = self.max_threads[idx]
        elif self.config == "fixed":
            out = np.array([self.partition[j] for j in idx], dtype=np.int64)  # type: ignore[index]
        elif self.config == "oracle-dynamic":
            key = tuple(int(j) for j in idx)
            if key not in self.greedy_cache:
                self.greedy_cache[key] = oracle.greedy(self.rates_fixed[idx], [self.oracle_bound[j] for j in idx],  # type: ignore[index]
                                                       self.cpus, self.chunk)
            out = np.array(self.greedy_cache[key], dtype=np.int64)
        else:
            out, coef = self._policy(idx)
            out = np.asarray(out, dtype=np.int64)
            self.prev_coef[idx] = coef
        self.share[idx] = out
        self.prev[idx] = out
        if self.config != "unmodified":
            self.cpuset[idx] = np.where(self.malleable[idx], self.cpus, out)  # affinity applies at once
        if not self.sc.feedback.lazy or len(idx) >= 2:
            fresh = idx[np.isinf(self.armed[idx])]
            # An estimate needs one whole region after the next boundary (the experiment).
            nb = np.ceil(self.done[fresh] / self.region[fresh] - EPS) * self.region[fresh]
            self.armed[fresh] = nb + self.region[fresh]

    def _policy(self, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The real policy's decision for clients IDX, fed what the daemon would feed it."""
        import numpy as np

        assert self.batch is not None
        known = ~np.isnan(self.estimate)
        k = len(idx)
        v = self.batch.clients[:k]
        v["max_threads"] = self.max_threads[idx]
        v["prev"] = self.prev[idx]
        v["eff_team"] = np.where(known, self.eff_team, 0)[idx]
        v["efficiency"] = np.where(known, self.estimate, -1.0)[idx]
        v["prev_coef"] = self.prev_coef[idx]
        for i, j in enumerate(idx):
            v["probe"][i], v["e_sd"][i], v["alt_team"][i], v["alt_efficiency"][i] = self.state[j].step(
                self.t, int(self.prev[j]), self.chunk, int(v["eff_team"][i]),
                float(v["efficiency"][i]) if known[j] else None)
        return self.batch.run(k)

    def rates(self) -> np.ndarray:
        """Each program's progress rate now (serial seconds per second)."""
        import numpy as np

        mall, present, cpus, cpuset, kslow = self.malleable, self.present, self.cpus, self.cpuset, self.oversub
        demand = np.where(mall, self.team, np.minimum(self.max_threads, cpuset)) * present
        R = float(demand.sum())
        g = cpus / R if R > cpus else 1.0
        s = interp_rows(self.curves, demand * g)
        pen = 1.0 / (1.0 + kslow * max(R / cpus - 1.0, 0.0))
        inner = np.where(~mall & (self.max_threads > cpuset),
                         1.0 / (1.0 + kslow * (self.max_threads / np.maximum(cpuset, 1) - 1.0)), 1.0)
        return s * pen * inner * present

    def _record(self, team: np.ndarray, share: np.ndarray, estimate: np.ndarray, rate: np.ndarray) -> None:
        self.rec_t.append(self.t)
        self.rec_team.append(team)
        self.rec_share.append(share)
        self.rec_estimate.append(estimate)
        self.rec_rate.append(rate)
        self.rec_phase.append(self.phase.copy())

    def step(self) -> bool:
        """Advance to the next event (arrival, tick, region boundary, finish, horizon); False at the end."""
        import numpy as np

        n, order, arrival = self.n, self.order, self.arrival
        present, mall, team, share, region, done = (self.present, self.malleable, self.team, self.share,
                                                    self.region, self.done)
        if self.arrived < n and not present.any() and arrival[order[self.arrived]] > self.t + EPS:
            # Nobody to run until the next arrival: skip the idle ticks.
            if self.record:
                self._record(np.zeros(n, dtype=np.int64), np.zeros(n, dtype=np.int64), np.full(n, np.nan),
                             np.zeros(n))
            self.t = float(arrival[order[self.arrived]])
        t = self.t
        while self.arrived < n and arrival[order[self.arrived]] <= t + EPS:
            present[order[self.arrived]] = True
            self.arrived += 1
            self.event = True
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
            team[present & ~mall] = self.max_threads[present & ~mall]
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
            tf = np.where(present & (r > 0), t + (self.work - done) / r, np.inf)
            tb = np.where(pend & (r > 0), t + (nb - done) / r, np.inf)
        t_arr = arrival[order[self.arrived]] if self.arrived < n else np.inf
        t1 = min(self.tick_k * self.tick, t_arr, float(tf.min()), float(tb.min()), self.horizon)
        if self.phased:  # a phase change is an event too: rates stay constant within a step
            with np.errstate(divide="ignore", invalid="ignore"):
                tp = np.where(present & (r > 0), t + (self.next_bound - done) / r, np.inf)
            t1 = min(t1, float(tp.min()))
        t1 = max(t1, t)
        dt = t1 - t
        if self.record:
            self._record(team * present, share * present, np.where(present, self.estimate, np.nan), r)
        done += r * dt
        # The event that ended the step happens even where rounding left the
        # work a hair short of it (or t1 == t at a large t): snap to it.
        fin_now = present & (tf <= t1)
        done[fin_now] = self.work[fin_now]
        bnd_now = pend & (tb <= t1)
        done[bnd_now] = np.maximum(done[bnd_now], nb[bnd_now])
        if self.phased:
            ph_now = present & (tp <= t1)
            done[ph_now] = np.maximum(done[ph_now], self.next_bound[ph_now])
            self._next_phase()
        running = team * present
        self.thread_s += running * dt
        self.cpu_s += min(float(running.sum()), float(self.cpus)) * dt
        if present.any():
            self.busy_time += dt
            self.busy_work += float(r.sum()) * dt
        if int(present.sum()) >= 2:
            self.mp_time += dt
            self.mp_work += r * dt
            self.mp_present += present * dt
        if dt > 0:
            self._feedback(r, dt)
        self.t = t = t1
        self.steps += 1
        ended = present & (done >= self.work * (1.0 - EPS))
        if ended.any():
            done[ended] = self.work[ended]
            self.finish[ended] = t
            present &= ~ended
            pend &= ~ended
            self.event = True
        hit = pend & ((done >= nb - EPS * np.maximum(region, 1.0)) | bnd_now)
        if hit.any():
            team[hit] = share[hit]
            pend &= ~hit
        return not (t >= self.horizon - EPS or (self.arrived >= n and not present.any()))

    def _next_phase(self) -> None:
        """Programs whose work done reached the end of their phase enter the next one: their true curve
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
                self.greedy_cache.clear()  # its keys are the programs present, not their phases

    def _feedback(self, r: np.ndarray, dt: float) -> None:
        """The layer reports E = progress / threads (what serial baselines measure), noisy, through an
        RC low-pass filter."""
        import numpy as np

        est, team = self.estimate, self.team
        ready = self.present & (self.done >= self.armed - EPS)
        x = np.clip(np.where(team > 0, r / np.maximum(team, 1), 0.0) + self.noise_now, 0.0, 1.0)  # the page holds [0, 1]
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
            finished = not np.isnan(self.finish[j])
            end = self.finish[j] if finished else t
            life = end - p.arrival_s
            out_progs.append(ProgramResult(
                name=p.name,
                arrival_s=p.arrival_s,
                finish_s=float(self.finish[j]) if finished else None,
                speedup=float(self.done[j] / life) if life > 0 else 0.0,
                period_speedup=float(self.mp_work[j] / self.mp_present[j]) if self.mp_present[j] > 0 else None,
                mean_threads=float(self.thread_s[j] / life) if life > 0 else 0.0,
            ))
        tl = None
        if self.record:
            tl = Timeline(np.array(self.rec_t), np.array(self.rec_team), np.array(self.rec_share),
                          np.array(self.rec_estimate), np.array(self.rec_rate), end=t,
                          phase=np.array(self.rec_phase))
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
    """One configuration of CONFIGS, oracle-static included."""
    if config != "oracle-static":
        return simulate(sc, config, record=record, min_gain=min_gain)
    n = len(sc.programs)
    if n > oracle.MAX_STATIC_PROGRAMS:
        return Result(sc.name, config, None, 0.0, [], None,
                      note=f"not searched: {n} programs (the exhaustive search covers 1-{oracle.MAX_STATIC_PROGRAMS})")
    part, _ = oracle.best_static(sc, speedup_tables(sc))
    res = simulate(sc, "fixed", partition=part, record=record, label="oracle-static")
    res.note = "best fixed partition " + "/".join(str(x) for x in part)
    return res


def run_all(sc: Scenario, configs: list[str] | tuple[str, ...] = CONFIGS, *, record: bool = True,
            min_gain: float = 0.0) -> list[Result]:
    return [run(sc, c, record=record, min_gain=min_gain) for c in configs]
