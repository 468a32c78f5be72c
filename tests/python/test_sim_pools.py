"""Process pools in the simulator: tasks of given sizes handed out in order, the pool's own rule (`framework`),
and `scaf sim run`'s makespan line against it."""

from __future__ import annotations

import subprocess

import pytest
from conftest import SCAF
from scaf.lib import paths
from scaf.lib.sim import engine, report, scenario
from scaf.lib.sim.scenario import ScenarioError, parse

POOL = """\
[scenario]
name = "pool"
description = "a pool alone"
source = "made up for the pool tests"

[machine]
contexts = 8
rate_hz = 4

[[program]]
name = "p"
workers = 2
rule = "RULE"
tasks = TASKS
work_s = 40.0
region_s = 0.01
curve = { kind = "amdahl", parallel_fraction = 1.0 }
"""


def pool(rule: str = "loky", tasks: str = "[3, 1]") -> str:
    return POOL.replace("RULE", rule).replace("TASKS", tasks)


def test_task_sizes_split_the_work_in_the_order_handed_out() -> None:
    p = parse(pool(tasks="[3, 1]"), "p.toml").programs[0]
    assert p.tasks == 2 and p.task_sizes == (3.0, 1.0)
    assert p.task_work() == [30.0, 10.0]
    q = parse(pool(tasks="4"), "p.toml").programs[0]
    assert q.tasks == 4 and q.task_sizes == () and q.task_work() == [10.0] * 4


@pytest.mark.parametrize(("tasks", "field", "says"), [
    ("[]", "program[1].tasks", "a list of 1 to"),
    ("[2, -1]", "program[1].tasks[2]", "must be a number > 0"),
    ("[2, true]", "program[1].tasks[2]", "must be a number > 0"),
    ('["a"]', "program[1].tasks[1]", "must be a number > 0"),
])
def test_bad_task_sizes_name_the_field(tasks: str, field: str, says: str) -> None:
    with pytest.raises(ScenarioError) as ei:
        parse(pool(tasks=tasks), "bad.toml")
    assert field in str(ei.value) and says in str(ei.value) and "bad.toml:" in str(ei.value)


def test_a_rule_is_a_pools_and_one_of_the_known() -> None:
    with pytest.raises(ScenarioError) as ei:
        parse(pool(rule="ray"), "bad.toml")
    assert "program[1].rule" in str(ei.value) and "loky" in str(ei.value)
    alone = POOL.replace('workers = 2\n', "").replace("tasks = TASKS\n", "").replace("RULE", "dask")
    with pytest.raises(ScenarioError) as ei:
        parse(alone, "bad.toml")
    assert "program[1].rule" in str(ei.value) and "only a pool" in str(ei.value)


@pytest.mark.skipif(not paths.policy_lib().exists(), reason="libscaf_policy.so not built (make)")
def test_framework_runs_the_pools_own_rule() -> None:
    # A perfectly scaling task, 2 workers on 8 contexts, tasks of 30 and 10 serial seconds: the long one sets the
    # makespan. loky gives each worker 8 // 2 = 4 threads (30 / 4 s); Dask one (30 s).
    for rule, want in (("loky", 7.5), ("dask", 30.0)):
        res = engine.simulate(parse(pool(rule=rule), "p.toml"), "framework", record=False)
        assert res.programs[0].finish_s == pytest.approx(want, rel=0.01), rule
    # In the order handed out: [1, 3] puts the long task on the second worker, the same makespan.
    res = engine.simulate(parse(pool(tasks="[1, 3]"), "p.toml"), "framework", record=False)
    assert res.programs[0].finish_s == pytest.approx(7.5, rel=0.01)
    # Three tasks on two workers: the third goes to the first worker free (the short one's), 10/4 + 10/4 s.
    res = engine.simulate(parse(pool(tasks="[2, 1, 1]"), "p.toml"), "framework", record=False)
    assert res.programs[0].finish_s == pytest.approx(5.0, rel=0.01)


@pytest.mark.skipif(not paths.policy_lib().exists(), reason="libscaf_policy.so not built (make)")
def test_the_daemon_gives_a_lone_long_task_the_machine_the_rule_leaves_idle() -> None:
    # Once the short task's worker idles, the daemon's idle rule leaves it out and the long task's worker grows:
    # shorter than loky's rule, not shorter than the whole machine on the long task from the start.
    sc = parse(pool(tasks="[3, 1]"), "p.toml")
    rule = engine.simulate(sc, "framework", record=False).programs[0].finish_s
    scaf = engine.simulate(sc, "speedup", record=False).programs[0].finish_s
    assert scaf is not None and rule is not None
    assert 30.0 / 8 < scaf < rule


@pytest.mark.skipif(not paths.policy_lib().exists(), reason="libscaf_policy.so not built (make)")
def test_sim_run_prints_each_pools_makespan_against_its_rule() -> None:
    r = subprocess.run([str(SCAF), "sim", "run", "pools-dask-16", "--configs", "framework,speedup"],
                       capture_output=True, text=True, timeout=300, check=False)
    assert r.returncode == 0, r.stderr
    line = next(ln for ln in r.stdout.splitlines() if ln.startswith("pool dask:"))
    assert "under framework (dask's rule)" in line and "÷ framework: speedup 0." in line
    r = subprocess.run([str(SCAF), "sim", "run", "pools-dask-16", "--configs", "nope"],
                       capture_output=True, text=True, timeout=60, check=False)
    assert r.returncode == 2 and "framework" in r.stderr and "static" in r.stderr


def test_the_achievable_makespan_bounds_every_configuration() -> None:
    # 40 serial seconds on 8 contexts: with a linear curve the one-thread seconds over the contexts (5 s) bound it;
    # with Amdahl 0.9 (S(8) = 4.71) the longest task on the whole machine does (35 s / 4.71 = 7.44 s).
    sc = parse(pool(tasks="[7, 1]"), "p.toml")
    assert report.pool_bound(sc, sc.programs[0]) == pytest.approx(5.0)
    sc = parse(pool(tasks="[7, 1]").replace("parallel_fraction = 1.0", "parallel_fraction = 0.9"), "p.toml")
    bound = 35.0 * (0.1 + 0.9 / 8)
    assert report.pool_bound(sc, sc.programs[0]) == pytest.approx(bound)
    results = [engine.run(sc, c, record=False) for c in ("framework", "speedup", "oracle-dynamic")]
    for r in results:
        assert r.programs[0].finish_s >= bound - 1e-9  # type: ignore[operator]
    line = next(ln for ln in report.pools(sc, results) if "achievable" in ln)
    assert line.startswith("pool p: achievable 7.44 s") and "over framework: speedup 0." in line
    assert report.to_json(sc, results)["achievable_s"] == pytest.approx(bound, abs=1e-3)


def test_both_pool_scenarios_ship() -> None:
    names = {p.stem for p in scenario.shipped()}
    assert {"pools-dask-16", "pools-loky-16"} <= names
    assert scenario.load("pools-dask-16").programs[0].rule == "dask"
    assert scenario.load("pools-loky-16").programs[0].task_sizes == (16.0, 2.0, 2.0, 2.0, 2.0)
