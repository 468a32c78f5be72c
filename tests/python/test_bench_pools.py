"""The pools bench's figures from its raw runs: the task span and scaf's ratios, of the medians and round by round."""

from __future__ import annotations

import pytest
from scaf.lib.bench import pools


def run(config: str, rnd: int, makespan: float, tasks: list[tuple[float, float]], digest: str = "d") -> dict:
    return {"framework": "loky", "config": config, "round": rnd, "error": None,
            "result": {"makespan_s": makespan, "digest": digest,
                       "tasks": [{"start": s, "end": e} for s, e in tasks]}}


def test_task_span_leaves_out_the_pools_start() -> None:
    assert pools.task_span({"tasks": [{"start": 2.0, "end": 3.0}, {"start": 2.5, "end": 4.25}]}) == 2.25
    assert pools.task_span({"tasks": []}) is None


def test_scaf_ratios_of_medians_and_round_by_round() -> None:
    runs = [
        # Round 0, a slow minute: both 20% slower; round 1: scaf 10% faster than the default in the same minute.
        run("default", 0, 6.0, [(2.0, 6.0)]), run("scaf", 0, 6.0, [(2.0, 6.0)]),
        run("default", 1, 5.0, [(2.0, 5.0)]), run("scaf", 1, 4.5, [(2.0, 4.5)]),
        {"framework": "loky", "config": "scaf", "round": 2, "error": "exit 1: boom"},
    ]
    rows = {r["config"]: r for r in pools.summarize(runs)}
    d, s = rows["default"], rows["scaf"]
    assert d["makespan_s"] == pytest.approx(5.5) and s["makespan_s"] == pytest.approx(5.25)
    assert d["scaf_ratio"] == pytest.approx(5.25 / 5.5)
    assert d["scaf_ratio_paired"] == pytest.approx((1.0 + 0.9) / 2)
    assert d["span_s"] == pytest.approx(3.5) and d["scaf_span_ratio"] == pytest.approx(3.25 / 3.5)
    assert s["runs"] == 3 and s["failed"] == 1 and s["same_result"] is True
    text = pools.render(list(rows.values()), {"task": "hgb", "sizes": [1.0], "workers": 2, "cpus": 2, "rounds": 3,
                                              "load": "0.00"})
    assert "| loky | default | 5.500 | 0.955 | 0.950 | 3.500 | 0.929 | - | yes | 2 (0) |" in text, text


def test_the_bound_is_the_longest_full_task_or_the_one_thread_work_over_the_cpus() -> None:
    # Two long tasks that scale well: the CPU-seconds bind. One task that scales badly: its own time binds.
    assert pools.bound_span([4.0, 4.0], [1.1, 1.1], 4) == pytest.approx(2.0)
    assert pools.bound_span([4.0, 1.0], [3.5, 0.3], 4) == pytest.approx(3.5)


def test_scafs_share_of_the_achievable_saving_from_solo_runs() -> None:
    solo = [{"kind": "solo", "threads": t, "round": r, "error": None, "task_s": times}
            for r, (t, times) in enumerate([(1, [3.0, 1.0]), (1, [3.2, 1.0]), (2, [1.6, 0.6]), (2, [1.8, 0.6])])]
    # The bound: max(max(1.7, 0.6), (3.1 + 1.0) / 2) = 2.05. Default spans 3.05, scaf 2.55: half the saving.
    runs = [run("default", 0, 4.0, [(1.0, 4.05)]), run("scaf", 0, 3.5, [(1.0, 3.55)]), *solo,
            {"kind": "solo", "threads": 2, "round": 3, "error": "exit 1: boom"}]
    rows = {r["config"]: r for r in pools.summarize(runs, 2)}
    assert rows["default"]["bound_s"] == pytest.approx(2.05)
    assert rows["default"]["scaf_captured"] == pytest.approx(0.5)
    assert rows["scaf"]["scaf_captured"] is None  # nothing to capture over itself
    text = pools.render(list(rows.values()), {"task": "hgb", "sizes": [3.0, 1.0], "workers": 2, "cpus": 2,
                                              "rounds": 2, "load": "0.00"})
    assert "| 0.500 |" in text and "shorter than 2.050 s" in text, text
    # Without solo runs there is no bound, and no share.
    assert pools.summarize(runs[:2], 2)[0]["scaf_captured"] is None
