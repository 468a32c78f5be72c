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


@dataclass
class Timeline:
    """Piecewise-constant state: row i holds from time[i] to time[i + 1] (or end)."""

    time: np.ndarray  # (S,)
    threads: np.ndarray  # (S, P) team each program runs (0 = absent)
    allocation: np.ndarray  # (S, P) what the controller decided (cpuset size if not malleable)
    efficiency: np.ndarray  # (S, P) filtered report the policy saw (nan = none)
    speedup: np.ndarray  # (S, P) instantaneous progress rate (serial seconds per second)
    end: float


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


class _PolicyCaller:
    """Calls the real policy once per decision, through scaf.policy's binding of libscaf_policy.so.

    scaf.policy.allocate() builds a ctypes array per call; the simulator makes
    thousands of calls, so it builds the same struct array once (scaf.policy's
    own mirror of struct scaf_policy_client, layout checked at load) and
    refills it through a numpy view. tests/integration/test_sim.py checks that
    this gives exactly what allocate() gives.
    """

    def __init__(self, name: str, contexts: int, chunk: int, nmax: int):
        import ctypes

        import numpy as np

        from scaf.lib import policy

        if name not in policy.policy_names():
            raise ValueError(f"policy {name!r} is not in libscaf_policy.so ({', '.join(policy.policy_names())})")
        self.lib = policy._load()
        n = max(nmax, 1)
        self.arr = (policy._CClient * n)()
        cc = policy._CClient
        dtype = np.dtype({"names": [f for f, _ in cc._fields_], "formats": [np.dtype(t) for _, t in cc._fields_],
                          "offsets": [getattr(cc, f).offset for f, _ in cc._fields_], "itemsize": ctypes.sizeof(cc)})
        # A structured numpy view on the same memory, laid out from scaf.policy's own mirror.
        self.view = np.frombuffer((ctypes.c_char * ctypes.sizeof(self.arr)).from_buffer(self.arr), dtype=dtype)
        self.threads = (ctypes.c_uint32 * n)()
        self.coef = (ctypes.c_double * n)()
        self.t_view = np.ctypeslib.as_array(self.threads)
        self.c_view = np.ctypeslib.as_array(self.coef)
        self.name = name.encode()
        self.contexts, self.chunk = contexts, chunk

    def __call__(self, idx: np.ndarray, maxthr: np.ndarray, prev: np.ndarray, rep: np.ndarray,
                 eff: np.ndarray, measured: np.ndarray, mall: np.ndarray, prev_coef: np.ndarray
                 ) -> tuple[np.ndarray, np.ndarray]:
        import ctypes

        k = len(idx)
        v = self.view[:k]
        v["max_threads"] = maxthr[idx]
        v["prev"] = prev[idx]
        v["report_threads"] = rep[idx]
        v["efficiency"] = eff[idx]
        v["measured"] = measured[idx]
        v["malleable"] = mall[idx]
        v["prev_coef"] = prev_coef[idx]
        if self.lib.scaf_policy_run(self.name, self.contexts, self.chunk, k, self.arr, self.threads, self.coef):
            raise OSError(ctypes.get_errno(), f"scaf_policy_run({self.name.decode()}) refused the input")
        return self.t_view[:k].copy(), self.c_view[:k].copy()


def simulate(sc: Scenario, config: str, *, partition: list[int] | None = None, record: bool = True,
             label: str | None = None) -> Result:
    """Run one configuration to the end (every program finished, or the horizon)."""
    import numpy as np

    if config not in (*CONFIGS, "fixed") or config == "oracle-static":
        raise ValueError(f"simulate() runs unmodified, equipartition, speedup, oracle-dynamic or fixed, not {config!r}")
    progs = sc.programs
    P = len(progs)
    mach = sc.machine
    N = mach.contexts
    chunk = mach.granule
    tick = 1.0 / mach.rate_hz
    H = sc.horizon()
    tau = sc.feedback.tau_s

    arr = np.array([p.arrival_s for p in progs])
    work = np.array([p.work_s for p in progs])
    region = np.array([p.region_s for p in progs])
    T = np.array([sc.team(p) for p in progs], dtype=np.int64)
    mall = np.array([p.malleable for p in progs])
    noise = np.array([p.noise for p in progs])
    kslow = np.array([mach.oversub_slowdown if p.oversub_slowdown is None else p.oversub_slowdown for p in progs])
    tab = speedup_tables(sc)
    if partition is not None and len(partition) != P:
        raise ValueError(f"partition has {len(partition)} entries for {P} programs")

    done = np.zeros(P)
    fin = np.full(P, np.nan)
    present = np.zeros(P, dtype=bool)
    team = np.zeros(P, dtype=np.int64)  # threads the program runs now
    alloc = np.zeros(P, dtype=np.int64)  # the controller's decision
    cpus = np.full(P, N, dtype=np.int64)  # cpuset size of a program that is not malleable
    pend = np.zeros(P, dtype=bool)  # malleable, waiting for a region boundary to adopt alloc
    est = np.full(P, np.nan)  # the filtered efficiency report (the page's value)
    est_p = np.zeros(P, dtype=np.int64)
    armed = np.full(P, np.inf)  # work done at which the first estimate exists
    prev = np.zeros(P, dtype=np.int64)
    prev_coef = np.zeros(P)
    noise_now = np.zeros(P)
    mp_time = 0.0
    mp_work = np.zeros(P)
    mp_present = np.zeros(P)
    rng = np.random.default_rng(sc.seed)

    order = sorted(range(P), key=lambda j: (progs[j].arrival_s, j))
    rank = np.empty(P, dtype=np.int64)
    rank[order] = np.arange(P)  # the daemon lists clients in arrival order
    ai = 0
    caller = _PolicyCaller(config, N, chunk, P) if config in POLICY_CONFIGS else None
    greedy_cache: dict[tuple[int, ...], list[int]] = {}
    rates_fixed = oracle.rate_table(sc, tab) if config == "oracle-dynamic" else None
    caps = oracle.caps(sc)

    rec_t: list[float] = []
    rec_team: list[np.ndarray] = []
    rec_alloc: list[np.ndarray] = []
    rec_est: list[np.ndarray] = []
    rec_rate: list[np.ndarray] = []

    def decide() -> None:
        idx = np.flatnonzero(present)
        if not len(idx):
            return
        idx = idx[np.argsort(rank[idx], kind="stable")]
        if config == "unmodified":
            out = T[idx]
        elif config == "fixed":
            out = np.array([partition[j] for j in idx], dtype=np.int64)  # type: ignore[index]
        elif config == "oracle-dynamic":
            key = tuple(int(j) for j in idx)
            if key not in greedy_cache:
                greedy_cache[key] = oracle.greedy(rates_fixed[idx], [caps[j] for j in idx], N, chunk)  # type: ignore[index]
            out = np.array(greedy_cache[key], dtype=np.int64)
        else:
            known = ~np.isnan(est)
            out, coef = caller(idx, T, prev, np.where(known, est_p, 0), np.where(known, est, -1.0),
                               known.astype(np.int32), mall.astype(np.int32), prev_coef)  # type: ignore[misc]
            out = np.asarray(out, dtype=np.int64)
            prev_coef[idx] = coef
        alloc[idx] = out
        prev[idx] = out
        if config != "unmodified":
            cpus[idx] = np.where(mall[idx], N, out)  # affinity applies at once
        if not sc.feedback.lazy or len(idx) >= 2:
            fresh = idx[np.isinf(armed[idx])]
            # An estimate needs one whole region after the next boundary (the experiment).
            nb = np.ceil(done[fresh] / region[fresh] - EPS) * region[fresh]
            armed[fresh] = nb + region[fresh]

    def rates() -> np.ndarray:
        demand = np.where(mall, team, np.minimum(T, cpus)) * present
        R = float(demand.sum())
        g = N / R if R > N else 1.0
        s = interp_rows(tab, demand * g)
        pen = 1.0 / (1.0 + kslow * max(R / N - 1.0, 0.0))
        inner = np.where(~mall & (T > cpus), 1.0 / (1.0 + kslow * (T / np.maximum(cpus, 1) - 1.0)), 1.0)
        return s * pen * inner * present

    t = 0.0
    tick_k = 0
    steps = decisions = 0
    event = True
    while True:
        if ai < P and not present.any() and arr[order[ai]] > t + EPS:
            # Nobody to run until the next arrival: skip the idle ticks.
            if record:
                rec_t.append(t)
                rec_team.append(np.zeros(P, dtype=np.int64))
                rec_alloc.append(np.zeros(P, dtype=np.int64))
                rec_est.append(np.full(P, np.nan))
                rec_rate.append(np.zeros(P))
            t = float(arr[order[ai]])
        while ai < P and arr[order[ai]] <= t + EPS:
            j = order[ai]
            present[j] = True
            ai += 1
            event = True
        if t >= tick_k * tick - EPS:
            tick_k = math.floor(t / tick + EPS) + 1
            noise_now = rng.standard_normal(P) * noise  # drawn for all: configurations share the noise
            event = True
        if event:
            decide()
            decisions += 1
            event = False
            newm = present & mall & (team == 0)
            team[newm] = alloc[newm]  # the first region already runs with the allocation
            team[present & ~mall] = T[present & ~mall]
            pend = present & mall & (alloc != team)
        nb = np.ceil(done / region - EPS) * region
        at_b = pend & (nb - done <= EPS * np.maximum(region, 1.0))
        if at_b.any():
            team[at_b] = alloc[at_b]
            pend &= ~at_b
            nb = np.ceil(done / region - EPS) * region

        r = rates()
        with np.errstate(divide="ignore", invalid="ignore"):
            tf = np.where(present & (r > 0), t + (work - done) / r, np.inf)
            tb = np.where(pend & (r > 0), t + (nb - done) / r, np.inf)
        t_arr = arr[order[ai]] if ai < P else np.inf
        t1 = min(tick_k * tick, t_arr, float(tf.min()), float(tb.min()), H)
        t1 = max(t1, t)
        dt = t1 - t
        if record:
            rec_t.append(t)
            rec_team.append(team * present)
            rec_alloc.append(alloc * present)
            rec_est.append(np.where(present, est, np.nan))
            rec_rate.append(r)
        done += r * dt
        # The event that ended the step happens even where rounding left the
        # work a hair short of it (or t1 == t at a large t): snap to it.
        fin_now = present & (tf <= t1)
        done[fin_now] = work[fin_now]
        bnd_now = pend & (tb <= t1)
        done[bnd_now] = np.maximum(done[bnd_now], nb[bnd_now])
        npres = int(present.sum())
        if npres >= 2:
            mp_time += dt
            mp_work += r * dt
            mp_present += present * dt
        if dt > 0:
            # Feedback: the layer reports E = progress / threads (what serial
            # baselines measure), noisy, through an RC low-pass filter.
            ready = present & (done >= armed - EPS)
            x = np.clip(np.where(team > 0, r / np.maximum(team, 1), 0.0) + noise_now, 0.0, 1.0)  # the page holds [0, 1]
            first = ready & np.isnan(est)
            est[first] = x[first]
            a = 1.0 - math.exp(-dt / tau) if tau > 0 else 1.0
            upd = ready & ~first
            est[upd] += a * (x[upd] - est[upd])
            est_p[ready] = team[ready]
        t = t1
        steps += 1
        ended = present & (done >= work * (1.0 - EPS))
        if ended.any():
            done[ended] = work[ended]
            fin[ended] = t
            present &= ~ended
            pend &= ~ended
            event = True
        hit = pend & ((done >= nb - EPS * np.maximum(region, 1.0)) | bnd_now)
        if hit.any():
            team[hit] = alloc[hit]
            pend &= ~hit
        if t >= H - EPS or (ai >= P and not present.any()):
            break

    out_progs = []
    for j, p in enumerate(progs):
        finished = not np.isnan(fin[j])
        end = fin[j] if finished else t
        life = end - p.arrival_s
        out_progs.append(ProgramResult(
            name=p.name,
            arrival_s=p.arrival_s,
            finish_s=float(fin[j]) if finished else None,
            speedup=float(done[j] / life) if life > 0 else 0.0,
            period_speedup=float(mp_work[j] / mp_present[j]) if mp_present[j] > 0 else None,
        ))
    tl = None
    if record:
        tl = Timeline(np.array(rec_t), np.array(rec_team), np.array(rec_alloc), np.array(rec_est),
                      np.array(rec_rate), end=t)
    return Result(
        scenario=sc.name,
        config=label or config,
        sum_speedup=float(mp_work.sum() / mp_time) if mp_time > 0 else None,
        multiprogrammed_s=mp_time,
        programs=out_progs,
        timeline=tl,
        partition=list(partition) if partition is not None else None,
        steps=steps,
        decisions=decisions,
    )


def run(sc: Scenario, config: str, *, record: bool = True) -> Result:
    """One configuration of CONFIGS, oracle-static included."""
    if config != "oracle-static":
        return simulate(sc, config, record=record)
    n = len(sc.programs)
    if n > oracle.MAX_STATIC_PROGRAMS:
        return Result(sc.name, config, None, 0.0, [], None,
                      note=f"not searched: {n} programs (the exhaustive search covers 1-{oracle.MAX_STATIC_PROGRAMS})")
    part, _ = oracle.best_static(sc, speedup_tables(sc))
    res = simulate(sc, "fixed", partition=part, record=record, label="oracle-static")
    res.note = "best fixed partition " + "/".join(str(x) for x in part)
    return res


def run_all(sc: Scenario, configs: list[str] | tuple[str, ...] = CONFIGS, *, record: bool = True) -> list[Result]:
    return [run(sc, c, record=record) for c in configs]
