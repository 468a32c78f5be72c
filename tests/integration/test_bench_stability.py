"""`scaf bench stability`: the allocation log's changes per minute and time-averaged threads, and the command."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from scaf.lib.bench.errors import BenchError
from scaf.lib.bench.stability import read_log, stability
from test_bench import bench


def rec(t: float, *clients: tuple[int, str, int]) -> dict:
    return {"time": t, "clients": [{"pid": p, "name": n, "threads": k} for p, n, k in clients]}


def test_figure_from_a_log(tmp_path: Path) -> None:
    log = tmp_path / "a.jsonl"
    lines = [rec(0.0, (1, "ep", 4)), rec(1.0, (1, "ep", 2), (2, "crit", 2)), rec(5.0, (1, "ep", 3), (2, "crit", 1)),
             rec(9.0, (1, "ep", 2), (2, "crit", 2)), rec(11.0, (1, "ep", 4))]
    # A torn last line (the daemon killed while writing it) is left out.
    log.write_text("\n".join(json.dumps(r) for r in lines) + '\n{"time": 12')
    recs = read_log(log)
    assert len(recs) == 5
    st = stability(recs, 1.0, 11.0)
    # 1..5: 2/2, 5..9: 3/1, 9..11: 2/2; the arrival at 1.0 and the departure at 11.0 are not changes.
    assert st.changes == 2
    assert st.avg_threads["ep"] == (2 * 4 + 3 * 4 + 2 * 2) / 10
    assert st.avg_threads["crit"] == (2 * 4 + 1 * 4 + 2 * 2) / 10
    assert st.changes_per_min == 12.0
    assert stability([], 0, 1).changes == 0
    assert stability(recs, 5.0, 5.0).seconds == 0


def test_a_malformed_line_is_an_error_naming_it(tmp_path: Path) -> None:
    log = tmp_path / "a.jsonl"
    log.write_text(json.dumps(rec(0.0, (1, "ep", 4))) + "\nnot json\n" + json.dumps(rec(1.0)) + "\n")
    with pytest.raises(BenchError, match=r"a\.jsonl line 2: not JSON"):
        read_log(log)
    assert read_log(tmp_path / "not-yet.jsonl") == []


def test_stability_command_runs_a_window() -> None:
    """ep and crit run until the window ends (--until), on any machine: the row has the whole window."""
    res = bench("stability", "--workloads", "ep,crit", "--policy", "equipartition", "--size", "A", "--settle", "1",
                "--seconds", "3", "--json")
    assert res.returncode == 0, res.stderr
    row = json.loads(res.stdout.strip().splitlines()[-1])[0]
    assert row["policy"] == "equipartition" and row["cpus"] == 4
    # The window is the one asked for (it opens at the later of the arrival and the settle time, so
    # it may be longer).
    assert not row["ended_early"] and row["seconds"] >= 2.9, row
    # Equal shares, nobody moves: 2 each.
    assert set(row["avg_threads"]) == {"crit", "ep"}, row
    assert all(abs(v - 2.0) <= 0.15 for v in row["avg_threads"].values()), row
    assert row["changes"] <= 1, row
    assert re.search(r"mean threads: crit 2\.\d\d  ep [12]\.\d\d", res.stdout), res.stdout


def test_stability_bad_workload_is_a_clear_error() -> None:
    res = bench("stability", "--workloads", "nosuch")
    assert res.returncode == 2 and "nosuch" in res.stderr and res.stdout == ""
