"""Foreign load in the simulator: programs not started under scaf run their own count, and scafd's lookout (the
same arithmetic, collect/foreignload.c) takes what they burn out of the clients' contexts."""

from __future__ import annotations

import numpy as np
import pytest
from scaf.lib import decide, paths
from scaf.lib.sim import engine, scenario
from scaf.lib.sim.scenario import ScenarioError, parse

pytestmark = pytest.mark.skipif(not paths.decide_lib().exists(), reason="libscaf_decide.so not built (make)")

BESIDE = """\
[scenario]
name = "foreign"
description = "a client beside a plain program"
source = "made up for the foreign-load tests"

[machine]
contexts = 16
rate_hz = 4

[[program]]
name = "plain"
foreign = true
threads = 8
work_s = 160.0
region_s = 0.05
curve = { kind = "amdahl", parallel_fraction = 1.0 }

[[program]]
name = "client"
work_s = 400.0
region_s = 0.05
curve = { kind = "amdahl", parallel_fraction = 0.99 }
"""


def shares(config: str) -> tuple[np.ndarray, np.ndarray, float]:
    r = engine.run(parse(BESIDE, "f.toml"), config)
    tl = r.timeline
    assert tl is not None and r.programs[0].finish_s is not None
    return tl.time, tl.share, r.programs[0].finish_s


def share_at(time: np.ndarray, share: np.ndarray, t: float) -> int:
    return int(share[np.searchsorted(time, t, side="right") - 1, 1])


@pytest.mark.parametrize("config", ["equipartition", "speedup"])
def test_the_daemon_leaves_a_foreign_programs_contexts_and_takes_them_back_when_it_ends(config: str) -> None:
    time, share, end = shares(config)
    # Before the lookout's second sample the client has the machine: one busy second takes nothing.
    assert share_at(time, share, 0.9) == 16
    # Within seconds the plain program's threads leave the client's allocation: time-sliced beside the client's
    # team at first, they burn less than 8 CPUs, so the average closes in from below (10, 9, then 8 of 16).
    held = share[(time > 8.0) & (time < end - 0.5), 1]
    assert len(held) > 10 and held.max() <= 9 and held.min() >= 8
    assert (share[(time > 15.0) & (time < end - 0.5), 1] == 8).all()
    # Its end is seen at the daemon's next turn (the foreign list: it is gone), not seconds later as the average
    # decays: the client has the machine back within a turn. The last part-second it ran is still in the next
    # sample (collect/foreignload.c) and holds a context or two for up to two samples; then the machine is whole.
    assert share_at(time, share, end + 0.26) == 16
    assert share[(time > end) & (time <= end + 3.5), 1].min() >= 13
    assert (share[time > end + 3.5, 1] == 16).all()
    # The plain program ran its own count all along.
    alive = time < end - 1e-9
    assert (share[alive, 0] == 8).all()


def test_oracle_dynamic_knows_the_foreign_threads_at_once_and_static_counts_them_in_the_split() -> None:
    time, share, end = shares("oracle-dynamic")
    assert share_at(time, share, 0.1) == 8 and share_at(time, share, end + 0.1) == 16
    time, share, _ = shares("static")
    assert (share[:, 0][share[:, 0] > 0] == 8).all() and (share[:, 1][share[:, 1] > 0] == 8).all()  # 16 // 2
    time, share, _ = shares("unmodified")
    assert share_at(time, share, 1.0) == 16  # plain: both run their own count, 24 threads on 16


def test_a_foreign_program_is_no_client_and_no_one_to_partition() -> None:
    sc = parse(BESIDE, "f.toml")
    sim = engine.Simulation(sc, "speedup")
    sim.run()
    assert sim.turns is not None and sim.lookout is not None
    r = engine.run(sc, "oracle-static")
    assert r.sum_speedup is None and "foreign" in r.note


@pytest.mark.parametrize(("key", "line"), [("team = \"fixed\"", "team"), ("memory = \"warm\"", "memory"),
                                           ("workers = 2", "workers")])
def test_a_foreign_program_refuses_what_only_a_client_has(key: str, line: str) -> None:
    text = BESIDE.replace("foreign = true\n", f"foreign = true\n{key}\n")
    with pytest.raises(ScenarioError) as e:
        parse(text, "f.toml")
    assert e.value.field == f"program[1].{line}" and "foreign" in str(e.value)


def test_the_lookout_binding_is_scafds_arithmetic() -> None:
    # The rows of tests/unit/test_daemon_lookout.c, through the binding: a busy loop of one context shows in halves,
    # takes a context only once seen in two samples, and leaves at once when it is known gone.
    lk = decide.Lookout(2)
    lk.sample(1.0, 0.0)
    assert (lk.foreign, lk.prev, lk.available()) == (0.5, 0.0, 2)
    lk.sample(1.0, 0.0)
    assert (lk.foreign, lk.prev, lk.available()) == (0.75, 0.5, 1)
    assert lk.available(gone=0.75) == 2
    assert decide.Lookout.gone(0.01) == 0.0 and decide.Lookout.ema(1.0, 2.0) == 1.5


def test_the_foreign_scenario_ships() -> None:
    sc = scenario.load("foreign-beside-two-64")
    assert [p.foreign for p in sc.programs] == [True, True, False, False]
