"""The simulator's engine and oracles, driving the real policy library (no timing assertions)."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest
from scaf.lib import paths, policy
from scaf.lib.sim import engine, oracle, scenario, sweep
from scaf.lib.sim.model import speedup_tables

pytestmark = pytest.mark.skipif(not paths.policy_lib().exists(), reason="libscaf_policy.so not built (make)")


def identical_three(arrival_c: float = 0.0) -> scenario.Scenario:
    """Three programs with the same curve; different work so that they leave one by one."""
    progs = ""
    for name, work, region, arr in (("a", 300, 0.05, 0.0), ("b", 200, 0.07, 0.0), ("c", 100, 0.03, arrival_c)):
        progs += f"""
[[program]]
name = "{name}"
work_s = {work}
arrival_s = {arr}
region_s = {region}
curve = {{ kind = "amdahl", parallel_fraction = 0.98 }}
"""
    return scenario.parse(f"[machine]\ncontexts = 37\n{progs}", "identical.toml")


def test_equal_efficiencies_speedup_allocates_like_equipartition() -> None:
    sc = identical_three()
    eq = engine.run(sc, "equipartition")
    sp = engine.run(sc, "speedup")
    assert eq.timeline is not None and sp.timeline is not None
    # Departures re-partition twice; 37 contexts leave a remainder to spread.
    assert len({tuple(row[row > 0]) for row in eq.timeline.share}) >= 3
    assert eq.timeline.share.shape == sp.timeline.share.shape
    assert (eq.timeline.share == sp.timeline.share).all()
    assert (eq.timeline.time == sp.timeline.time).all()
    # and the speedup policy really saw measured, equal efficiencies on the way
    seen = sp.timeline.efficiency[sp.timeline.share > 0]
    assert (seen[~np.isnan(seen)] > 0).sum() > 10
    assert [p.finish_s for p in eq.programs] == [p.finish_s for p in sp.programs]


def test_very_different_curves_speedup_beats_equipartition() -> None:
    sc = scenario.parse("""
[machine]
contexts = 64
[[program]]
name = "scales"
work_s = 1000
noise = 0.02
curve = { kind = "amdahl", parallel_fraction = 0.999 }
[[program]]
name = "falls"
work_s = 100
noise = 0.02
curve = { kind = "usl", sigma = 0.1, kappa = 0.01 }
""")
    eq = engine.run(sc, "equipartition", record=False)
    sp = engine.run(sc, "speedup", record=False)
    assert eq.sum_speedup is not None and sp.sum_speedup is not None
    assert sp.sum_speedup >= eq.sum_speedup
    dyn = engine.run(sc, "oracle-dynamic", record=False)
    assert dyn.sum_speedup is not None and dyn.sum_speedup >= eq.sum_speedup


TWO = """
[scenario]
seed = 3
[machine]
contexts = 12
[[program]]
name = "x"
work_s = 40
curve = { kind = "amdahl", parallel_fraction = 0.95 }
[[program]]
name = "y"
work_s = 25
arrival_s = 1.5
curve = { kind = "points", points = [[2, 1.9], [4, 3.1], [8, 3.6], [12, 3.0]] }
"""


def test_oracle_static_not_below_any_hand_enumerated_partition() -> None:
    sc = scenario.parse(TWO)
    best = engine.run(sc, "oracle-static", record=False)
    assert best.sum_speedup is not None and best.partition is not None
    hand = {}
    for a in range(1, 12):
        for b in range(1, 13 - a):
            r = engine.simulate(sc, "fixed", partition=[a, b], record=False)
            assert r.sum_speedup is not None
            hand[(a, b)] = r.sum_speedup
    assert len(hand) == 66
    for part, value in hand.items():
        assert best.sum_speedup >= value - 1e-9, (part, value, best.sum_speedup)
    # The closed-form search and the engine agree: the best is one of them.
    assert math.isclose(best.sum_speedup, max(hand.values()), rel_tol=1e-9)
    assert math.isclose(hand[tuple(best.partition)], best.sum_speedup, rel_tol=1e-9)


def test_oracle_static_skips_more_than_three_programs() -> None:
    sc = scenario.load("arrivals")
    r = engine.run(sc, "oracle-static", record=False)
    assert r.sum_speedup is None and "not searched" in r.note


def test_greedy_stops_where_curves_fall() -> None:
    rates = np.array([[0, 1, 2, 3, 4, 5, 6, 7, 8], [0, 1, 1.5, 1.4, 1.2, 1, 0.8, 0.6, 0.5]], dtype=float)
    assert oracle.greedy(rates, [8, 8], 8, 1) == [7, 1]
    assert oracle.greedy(rates, [5, 8], 8, 1) == [5, 2]  # the cap moves the rest on
    falling = np.array([[0, 1, 1.5, 1.4, 1.2], [0, 1, 1.5, 1.4, 1.2]], dtype=float)
    assert oracle.greedy(falling, [4, 4], 6, 1) == [2, 2]  # two contexts better left idle
    assert oracle.greedy(falling[:, :3], [2, 2], 1, 1) == [1, 1]  # more clients than contexts


def test_policy_batch_matches_policy_allocate() -> None:
    rng = random.Random(5)
    for name in ("speedup", "equipartition"):
        for _ in range(200):
            n = rng.randint(1, 9)
            contexts = rng.choice([4, 8, 16, 37, 64])
            chunk = rng.choice([1, 1, 2])
            batch = policy.Batch(name, contexts, chunk, n)
            maxthr = np.array([rng.randint(1, contexts) for _ in range(n)])
            prev = np.array([rng.choice([0, rng.randint(1, contexts)]) for _ in range(n)])
            rep = np.array([rng.choice([0, 1, rng.randint(2, contexts)]) for _ in range(n)])
            eff = np.array([rng.choice([-1.0, rng.random()]) for _ in range(n)])
            pc = np.array([rng.choice([0.0, rng.random() * 5]) for _ in range(n)])
            v = batch.clients[:n]
            v["max_threads"], v["prev"], v["eff_team"], v["efficiency"] = maxthr, prev, rep, eff
            v["prev_coef"] = pc
            got_t, got_c = batch.run(n)
            clients = [policy.Client(eff_team=int(rep[i]), efficiency=float(eff[i]), prev=int(prev[i]),
                                     max_threads=int(maxthr[i]), prev_coef=float(pc[i]))
                       for i in range(n)]
            want_t, want_c = policy.allocate(name, contexts, clients, chunk)
            assert list(got_t) == want_t
            assert list(got_c) == want_c


def test_unmodified_time_sharing_loses_to_equipartition() -> None:
    sc = scenario.load("cg-lu-36")
    un = engine.run(sc, "unmodified", record=False)
    eq = engine.run(sc, "equipartition", record=False)
    assert un.sum_speedup is not None and eq.sum_speedup is not None
    assert un.sum_speedup < eq.sum_speedup
    assert all(p.finish_s is not None for p in un.programs + eq.programs)


FIXED_BESIDE_FLEX = """
[machine]
contexts = 16
gangs = GANGS
[[program]]
name = "fixed"
work_s = 50
team = "fixed"
curve = { kind = "amdahl", parallel_fraction = 0.99 }
[[program]]
name = "flex"
work_s = 50
curve = { kind = "amdahl", parallel_fraction = 0.99 }
"""


def test_a_fixed_team_that_does_not_fit_takes_turns_and_is_never_squeezed() -> None:
    """Cold, the fixed program reads the whole machine and keeps 16 threads: the daemon's referee never confines it
    to fewer CPUs; with gangs the two take turns of the whole machine, without them the fixed team runs unconfined
    and the malleable one keeps one chunk."""
    sc = scenario.parse(FIXED_BESIDE_FLEX.replace("GANGS", "true"))
    sim = engine.Simulation(sc, "equipartition")
    while sim.step() and sim.t < 5.0:
        pass
    assert sim.started_with[0] == 0 and sim.fixed_team[0] == 16  # nothing said it keeps its team: its own count
    assert list(sim.gang) == [1, 2] and list(sim.share) == [16, 16] and (sim.cpuset == 16).all()
    assert list(sim.turn_factor) == [2.0, 2.0]
    turns = sim.run()
    unconf = engine.run(scenario.parse(FIXED_BESIDE_FLEX.replace("GANGS", "false")), "equipartition")
    tl = unconf.timeline
    assert tl is not None
    # From its first region on (before it, the fixed program is undecided: steered like any other).
    both = (tl.share > 0).all(axis=1) & (tl.time > 0.5)
    assert both.any() and (tl.team[both, 0] == 16).all() and (tl.share[both, 1] == 1).all()
    # Turns of the whole machine beat 17 threads time-slicing on 16 contexts, for both.
    assert turns.sum_speedup > unconf.sum_speedup  # type: ignore[operator]


ORACLE_FIXED = """
[machine]
contexts = 32
[[program]]
name = "scalable"
work_s = 400
curve = { kind = "amdahl", parallel_fraction = 0.99 }
[[program]]
name = "fixed"
work_s = 100
arrival_s = 2.0
team = "fixed"
fixed_by = "user"
curve = { kind = "amdahl", parallel_fraction = 0.9 }
[[program]]
name = "late"
work_s = 200
arrival_s = 4.0
curve = { kind = "amdahl", parallel_fraction = 0.99 }
"""


def test_oracle_dynamic_picks_a_fixed_team_once_and_never_squeezes_it() -> None:
    """No scheduler resizes a team fixed at start: oracle-dynamic gives it, at its arrival, its greedy share beside
    the programs running then (on the true curves), keeps that team to its end, and never confines it to fewer
    contexts than threads, while the malleable programs follow the oracle at every decision."""
    sc = scenario.parse(ORACLE_FIXED)
    tabs = speedup_tables(sc)
    rows = np.array([oracle.rate_table(sc, tabs, resizable=True)[j] for j in (0, 1)])
    want = oracle.greedy(rows, [32, 32], 32, 1)[1]
    assert 1 < want < 16  # the less scalable program's share beside the scalable one: less than half
    r = engine.run(sc, "oracle-dynamic")
    tl = r.timeline
    assert tl is not None and r.programs[1].start_team == want
    alive = tl.share[:, 1] > 0
    assert alive.any() and (tl.team[alive, 1] == want).all()  # kept from arrival to exit
    assert (tl.share[alive, 1] >= want).all()  # never squeezed onto fewer contexts than its threads
    # The malleable programs were resized around it: the scalable one ran alone on 32, then beside the others.
    assert tl.team[tl.time < 2.0, 0].max() == 32 and tl.team[alive & (tl.time > 3.0), 0].max() < 32


def test_oracle_static_gives_a_fixed_team_its_part_as_its_start_team() -> None:
    """A fixed partition is each program's start team (OMP_NUM_THREADS = its part): the fixed program runs that many
    threads on that many contexts, not its default team squeezed onto them."""
    r = engine.run(scenario.parse(ORACLE_FIXED), "oracle-static")
    assert r.partition is not None and r.timeline is not None
    part = r.partition[1]
    alive = r.timeline.share[:, 1] > 0
    assert 1 <= part < 32 and (r.timeline.team[alive, 1] == part).all()
    # ... at the speed of its curve there (Amdahl 0.9), not slowed by time-slicing a default team of 32 on part CPUs.
    assert r.timeline.speedup[alive, 1] == pytest.approx(1.0 / (0.1 + 0.9 / part))


def test_allocation_changes_wait_for_region_boundaries() -> None:
    """With long regions the team lags the allocation; with short ones it follows at once."""

    def lag(region: float) -> float:
        sc = scenario.parse(f"""
[machine]
contexts = 16
[[program]]
name = "first"
work_s = 200
region_s = {region}
curve = {{ kind = "amdahl", parallel_fraction = 0.99 }}
[[program]]
name = "second"
work_s = 50
arrival_s = 2.0
curve = {{ kind = "amdahl", parallel_fraction = 0.99 }}
""")
        tl = engine.run(sc, "equipartition").timeline
        assert tl is not None
        adopted = [t for t, th in zip(tl.time, tl.team[:, 0], strict=True) if t >= 2.0 and th == 8]
        return adopted[0] - 2.0

    assert lag(0.001) < 0.01
    assert lag(20.0) > 0.5


def test_noise_reaches_the_policy_filtered() -> None:
    sc = scenario.load("cg-lu-36")
    r = engine.run(sc, "speedup")
    tl = r.timeline
    assert tl is not None
    e = tl.efficiency[:, 0]
    e = e[~np.isnan(e)]
    assert len(e) > 10 and 0 < e.min() and e.max() <= 1.0
    assert len(set(e.round(6))) > 5  # noisy reports, not a constant


def test_speedup_tables_shapes() -> None:
    sc = scenario.load("smt-pair-16")
    tab = speedup_tables(sc)
    assert tab.shape == (2, 17)
    assert tab[0, 0] == 0 and tab[0, 1] == 1
    assert math.isclose(tab[0, 16], 8.9) and math.isclose(tab[1, 8], 4.2)


def test_late_arrival_tiny_regions_and_unfinished_program() -> None:
    sc = scenario.parse("""
[scenario]
max_time_s = 100030
[machine]
contexts = 8
[[program]]
name = "late"
work_s = 20
arrival_s = 100000
region_s = 0.0003
curve = { kind = "amdahl", parallel_fraction = 0.9 }
[[program]]
name = "long"
work_s = 5000
arrival_s = 100001
curve = { kind = "amdahl", parallel_fraction = 0.9 }
""")
    r = engine.run(sc, "speedup")
    late, long_ = r.programs
    assert late.finish_s is not None and 100000 < late.finish_s < 100030
    assert long_.finish_s is None and long_.speedup > 0  # still running at the horizon
    assert r.steps < 2000  # the idle 100000 s are skipped, not ticked through
    assert r.sum_speedup is not None
    assert r.timeline is not None and r.timeline.end == 100030


def phase_means(r: engine.Result, j: int) -> list[float]:
    """Program j's threads averaged over the time it spent in each phase (time-weighted, not one instant)."""
    tl = r.timeline
    assert tl is not None and tl.phase is not None
    dt = np.diff(np.append(tl.time, tl.end))
    out = []
    for k in range(int(tl.phase[:, j].max()) + 1):
        m = (tl.phase[:, j] == k) & (tl.team[:, j] > 0)
        out.append(float((tl.team[m, j] * dt[m]).sum() / dt[m].sum()))
    return out


PHASED_PAIR = """
[machine]
contexts = 32
[[program]]
name = "phased"
work_s = 600
region_s = 0.05
phases = [
  { until_s = 30, curve = { kind = "amdahl", parallel_fraction = 0.5 } },
  { curve = { kind = "amdahl", parallel_fraction = 0.995 } },
]
[[program]]
name = "steady"
work_s = 2000
region_s = 0.05
curve = { kind = "amdahl", parallel_fraction = 0.99 }
"""


def test_oracle_dynamic_follows_the_phase_change() -> None:
    """The serial-heavy first phase gets few threads, the scalable second one many: both programs stay
    present across the change, so only the phase can move the allocation."""
    sc = scenario.parse(PHASED_PAIR, "phased.toml")
    r = engine.run(sc, "oracle-dynamic")
    first, second = phase_means(r, 0)
    assert first <= 2.0 and second >= 12.0, (first, second)
    tl = r.timeline
    assert tl is not None
    change = tl.time[np.argmax(tl.phase[:, 0] == 1)]
    steady_end = r.programs[1].finish_s
    assert steady_end is not None and change < steady_end  # the change came while both ran
    # The shipped scenario shows the same under oracle-dynamic.
    r = engine.run(scenario.load("phase-change"), "oracle-dynamic")
    first, second = phase_means(r, 0)
    assert first < second / 4, (first, second)


def test_phases_change_the_rate_at_the_boundary_exactly() -> None:
    """A fixed allocation: finish = bound / S1(p) + (work - bound) / S2(p), and the static oracle's
    effective rate for that allocation agrees with the engine."""
    sc = scenario.parse(PHASED_PAIR, "phased.toml")
    r = engine.simulate(sc, "fixed", partition=[8, 24])
    s1 = 1 / (0.5 + 0.5 / 8)
    s2 = 1 / (0.005 + 0.995 / 8)
    assert math.isclose(r.programs[0].finish_s, 30 / s1 + 570 / s2, rel_tol=1e-9)  # type: ignore[arg-type]
    rates = oracle.static_rates(sc, speedup_tables(sc))
    assert math.isclose(rates[0, 8], 600 / (30 / s1 + 570 / s2), rel_tol=1e-12)
    assert math.isclose(rates[1, 24], 1 / (0.01 + 0.99 / 24), rel_tol=1e-12)
    assert r.timeline is not None and r.timeline.phase is not None
    assert set(np.unique(r.timeline.phase[:, 0])) == {0, 1} and not r.timeline.phase[:, 1].any()
    res = engine.run(sc, "oracle-static")
    assert res.partition is not None and sum(res.partition) <= 32 and res.programs[0].finish_s is not None


def test_summary_says_when_speedup_falls_below_equipartition() -> None:
    rows = [{"contexts": c, "noise": None, "sum_speedup": {"equipartition": eq, "speedup": sp, "oracle-dynamic": od},
             "gap": {"equipartition": 1 - eq / od, "speedup": 1 - sp / od}}
            for c, eq, sp, od in ((16, 10.0, 11.0, 12.0), (32, 20.0, 19.0, 20.0), (64, 30.0, 29.99, 30.0),
                                  (128, 30.0, 29.97, 30.0))]
    assert sweep.summary("x", "sum_speedup", rows) == [
        "x, 16 contexts: speedup gap +8.3%, not below equipartition (+10.0%: 11.00 vs 10.00)",
        "x, 32 contexts: speedup gap +5.0%, BELOW equipartition (-5.0%: 19.00 vs 20.00)",
        "x, 64 contexts: speedup gap +0.0%, not below equipartition (+0.0%: 29.99 vs 30.00)",
        "x, 128 contexts: speedup gap +0.1%, BELOW equipartition (-0.1%: 29.97 vs 30.00)",
    ]


def test_lone_speedup_is_work_over_the_time_a_program_ran() -> None:
    """Two programs that never overlap: no Σspeedup; lone_speedup weighs each by the time it ran."""
    sc = scenario.parse("""
[machine]
contexts = 8
[[program]]
name = "first"
work_s = 40
curve = { kind = "amdahl", parallel_fraction = 1.0 }
[[program]]
name = "second"
work_s = 10
arrival_s = 100
curve = { kind = "amdahl", parallel_fraction = 0.0 }
""", "apart.toml")
    r = engine.run(sc, "equipartition")
    assert r.sum_speedup is None and r.multiprogrammed_s == 0
    assert r.programs[0].speedup == pytest.approx(8.0) and r.programs[1].speedup == pytest.approx(1.0)
    assert r.lone_speedup == pytest.approx((40 + 10) / (5 + 10))  # not the mean of 8 and 1
