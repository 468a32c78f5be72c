"""`scaf sim` as a subprocess: list, check, run (--json, --out), sweep, and its errors."""

from __future__ import annotations

import csv
import json
import subprocess
from pathlib import Path

import pytest
from conftest import SCAF
from scaf.lib import paths

pytestmark = pytest.mark.skipif(not paths.policy_lib().exists(), reason="libscaf_policy.so not built (make)")

SMALL = """\
[scenario]
name = "small"
description = "two programs on 8 contexts"
source = "made up for the CLI tests"

[machine]
contexts = 8
rate_hz = 4

[[program]]
name = "good"
work_s = 30
noise = 0.05
curve = { kind = "amdahl", parallel_fraction = 0.98 }

[[program]]
name = "poor"
work_s = 12
arrival_s = 1.0
curve = { kind = "usl", sigma = 0.2, kappa = 0.01 }

[expect.equipartition]
sum_speedup = 7.0
"""

CONFIGS = ["unmodified", "equipartition", "speedup", "consumption", "oracle-static", "oracle-dynamic"]


def scaf(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(SCAF), "sim", *args], check=False, capture_output=True, text=True, timeout=timeout)


@pytest.fixture
def small(tmp_path: Path) -> Path:
    p = tmp_path / "small.toml"
    p.write_text(SMALL)
    return p


def test_list_names_every_shipped_scenario() -> None:
    r = scaf("list")
    assert r.returncode == 0, r.stderr
    names = [line.split()[0] for line in r.stdout.splitlines()]
    assert {"cg-lu-36", "three-way-64", "smt-pair-16", "arrivals", "phase-change"} <= set(names)
    assert "36 contexts" in r.stdout


def test_run_json_has_every_configuration(small: Path) -> None:
    r = scaf("run", str(small), "--json")
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    assert data["scenario"] == "small"
    assert list(data["configs"]) == CONFIGS
    for cfg, res in data["configs"].items():
        assert isinstance(res["sum_speedup"], float) and res["sum_speedup"] > 0, cfg
        assert set(res["programs"]) == {"good", "poor"}
        for prog in res["programs"].values():
            assert prog["speedup"] > 0 and prog["finish_s"] > 0
    assert data["configs"]["oracle-static"]["partition"] is not None
    assert data["expect"] == {"equipartition": {"sum_speedup": 7.0}}


def test_memory_bound_alone_speedup_finds_the_peak() -> None:
    """The same program under the speedup policy: one report from 32 threads fits an Amdahl curve that
    still rises, so only a shrink probe (half its allocation) can show that 32 is past the peak (12.6).
    It must then hold far fewer threads than the machine and run faster than on all 32."""
    r = scaf("run", "memory-bound-alone", "--json", "--configs", "equipartition,speedup")
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    eq, sp = data["configs"]["equipartition"], data["configs"]["speedup"]
    assert sp["programs"]["stream"]["mean_threads"] < 20, sp["programs"]["stream"]
    assert sp["programs"]["stream"]["speedup"] > 1.2 * eq["programs"]["stream"]["speedup"]


def test_memory_bound_alone_consumption_right_sizes() -> None:
    """A program whose speedup falls past 12 threads, alone on 32: consumption runs it on fewer threads
    than the machine and uses fewer than half the CPU-seconds of equipartition at about its speed."""
    r = scaf("run", "memory-bound-alone", "--json", "--configs", "equipartition,consumption")
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    eq, cons = data["configs"]["equipartition"], data["configs"]["consumption"]
    assert eq["programs"]["stream"]["mean_threads"] == 32
    assert 1 <= cons["programs"]["stream"]["mean_threads"] < 16
    assert cons["cpu_s"] < 0.5 * eq["cpu_s"]
    # Its first seconds explore smaller teams (2 threads, then the curve through both points), and damping
    # waits for the noise of E at a new size before it moves: within 2% of the whole machine's speed.
    assert cons["programs"]["stream"]["speedup"] >= 0.98 * eq["programs"]["stream"]["speedup"]


def test_min_gain_moves_consumption_towards_the_peak() -> None:
    """A lower threshold gives the saturating program more threads (its peak is at 12.6)."""
    threads = []
    for g in ("0.5", "0.1"):
        r = scaf("run", "memory-bound-alone", "--json", "--configs", "consumption", "--min-gain", g)
        assert r.returncode == 0, r.stderr
        threads.append(json.loads(r.stdout)["configs"]["consumption"]["programs"]["stream"]["mean_threads"])
    assert threads[0] < threads[1] < 32, threads
    for bad in ("0", "2", "x"):
        r = scaf("run", "memory-bound-alone", "--configs", "consumption", "--min-gain", bad)
        assert r.returncode == 2 and "--min-gain" in r.stderr and r.stdout == ""


def test_run_shipped_by_name_with_subset_and_table(small: Path) -> None:
    r = scaf("run", "cg-lu-36", "--json", "--configs", "equipartition,speedup")
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    assert list(data["configs"]) == ["equipartition", "speedup"]
    assert data["expect"]["speedup"]["sum_speedup"] == 31.2
    r = scaf("run", str(small))
    assert r.returncode == 0, r.stderr
    for cfg in CONFIGS:
        assert cfg in r.stdout
    assert "(7)" in r.stdout  # the original's number beside the simulated one
    assert "vs original 7X" in r.stdout


def test_run_out_writes_json_csv_png(small: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    r = scaf("run", str(small), "--out", str(out))
    assert r.returncode == 0, r.stderr
    assert json.loads((out / "results.json").read_text())["scenario"] == "small"
    png = (out / "timeline.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 5000
    with open(out / "timeline.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert {r["config"] for r in rows} == set(CONFIGS)
    assert {r["program"] for r in rows} == {"good", "poor"}
    by_time: dict[str, list[int]] = {}
    for row in rows:
        if row["config"] == "equipartition":
            by_time.setdefault(row["time_s"], []).append(int(row["allocation"]))
    together = [a for a in by_time.values() if len(a) == 2]
    assert together and all(a == [4, 4] for a in together)
    assert [8] in by_time.values()  # alone before the second arrives and after it leaves
    assert {r["phase"] for r in rows} == {"1"}
    times = [float(r["time_s"]) for r in rows if r["config"] == "speedup"]
    assert times == sorted(times)


def test_sweep_json_and_table(small: Path) -> None:
    r = scaf("sweep", str(small), "--contexts", "8,16", "--noise", "0,0.1", "--json")
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    assert data["metric"] == "sum_speedup"
    rows = data["rows"]
    assert [(x["contexts"], x["noise"]) for x in rows] == [(8, 0.0), (8, 0.1), (16, 0.0), (16, 0.1)]
    for x in rows:
        assert set(x["sum_speedup"]) == {"equipartition", "speedup", "consumption", "oracle-dynamic"}
        assert set(x["gap"]) == {"equipartition", "speedup", "consumption"}
        assert all(v is not None for v in x["gap"].values())
        assert set(x["cpu_s"]) == set(x["sum_speedup"]) and all(v > 0 for v in x["cpu_s"].values())
        ratio = x["cpu_s"]["consumption"] / x["cpu_s"]["equipartition"]
        assert x["cpu_consumption_vs_equipartition"] == pytest.approx(ratio)
    r = scaf("sweep", str(small), "--contexts", "8,16")
    assert r.returncode == 0, r.stderr
    assert "gap" in r.stdout and "at 8 contexts -> " in r.stdout
    assert "Σ consumption" in r.stdout and "cpu consumption/equip" in r.stdout
    assert "small, 8 contexts: speedup gap " in r.stdout and "small, 16 contexts: speedup gap " in r.stdout


def test_sweep_over_seeds_reports_the_mean_and_the_worst(small: Path) -> None:
    """--seeds N: each point runs N noise seeds; the gap is the mean of each seed's own gap, the worst is theirs."""
    one = json.loads(scaf("sweep", str(small), "--contexts", "8", "--json").stdout)["rows"][0]
    r = scaf("sweep", str(small), "--contexts", "8", "--seeds", "3", "--json")
    assert r.returncode == 0, r.stderr
    (row,) = json.loads(r.stdout)["rows"]
    first = one["seeds"][0]
    assert row["seeds"] == [first, first + 1, first + 2] and len(row["per_seed"]) == 3
    # The first seed is the scenario's own: the same run as without --seeds.
    assert row["per_seed"][0]["sum_speedup"] == one["sum_speedup"]
    sums = [p["sum_speedup"] for p in row["per_seed"]]
    assert len({p["speedup"] for p in sums}) > 1, "the seeds drew the same noise"
    gaps = [1 - p["speedup"] / p["oracle-dynamic"] for p in sums]
    assert row["gap"]["speedup"] == pytest.approx(sum(gaps) / 3)
    assert row["gap_worst"]["speedup"] == pytest.approx(max(gaps))
    assert row["sum_speedup"]["speedup"] == pytest.approx(sum(p["speedup"] for p in sums) / 3)
    assert "per_seed" not in one and one["gap_worst"] == one["gap"]
    r = scaf("sweep", str(small), "--contexts", "8", "--seeds", "3")
    assert r.returncode == 0, r.stderr
    table = r.stdout[: r.stdout.index("summary")]
    assert "worst" in table and "means over seeds" in table and "(mean of 3 seeds, worst " in r.stdout
    for bad in ("0", "x", "101"):
        r = scaf("sweep", str(small), "--contexts", "8", "--seeds", bad)
        assert r.returncode == 2 and "--seeds" in r.stderr and r.stdout == "", bad


def test_sweep_configs_subset_keeps_the_reference(small: Path) -> None:
    r = scaf("sweep", str(small), "--contexts", "8", "--configs", "equipartition", "--json")
    assert r.returncode == 0, r.stderr
    (row,) = json.loads(r.stdout)["rows"]
    assert set(row["sum_speedup"]) == {"equipartition", "oracle-dynamic"} and set(row["gap"]) == {"equipartition"}
    assert "cpu_consumption_vs_equipartition" not in row
    r = scaf("sweep", str(small), "--contexts", "8", "--configs", "equipartition")
    assert r.returncode == 0 and "cpu consumption/equip" not in r.stdout and "summary" not in r.stdout
    r = scaf("sweep", str(small), "--contexts", "8", "--configs", "oracle-static")
    assert r.returncode == 2 and "oracle-static" in r.stderr and r.stdout == ""


def test_lone_program_is_compared_by_its_speedup() -> None:
    """One program alone: no Σspeedup exists, so the sweep and the run table use its work / life."""
    r = scaf("sweep", "memory-bound-alone", "--contexts", "16,32", "--json")
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    assert data["metric"] == "lone_speedup"
    for row in data["rows"]:
        assert all(v is None for v in row["sum_speedup"].values())
        assert all(v is not None and v > 0 for v in row["lone_speedup"].values())
        assert all(g is not None for g in row["gap"].values())
        # consumption right-sizes the falling curve: fewer CPU-seconds than equipartition's whole machine
        assert row["cpu_consumption_vs_equipartition"] < 0.6
    run = json.loads(scaf("run", "memory-bound-alone", "--json", "--configs", "equipartition,oracle-dynamic").stdout)
    for cfg in ("equipartition", "oracle-dynamic"):
        res = run["configs"][cfg]
        assert res["sum_speedup"] is None
        assert res["lone_speedup"] == pytest.approx(res["programs"]["stream"]["speedup"], rel=1e-3)
    row32 = data["rows"][1]["lone_speedup"]
    assert row32["equipartition"] == pytest.approx(run["configs"]["equipartition"]["lone_speedup"], rel=1e-3)
    r = scaf("sweep", "memory-bound-alone", "--contexts", "32")
    assert r.returncode == 0 and "speedup alone" in r.stdout and "n/a" not in r.stdout
    r = scaf("run", "memory-bound-alone", "--configs", "equipartition,consumption")
    assert r.returncode == 0 and "X alone" in r.stdout and "n/a" not in r.stdout


def test_sweep_several_scenarios_and_all(small: Path) -> None:
    r = scaf("sweep", str(small), "memory-bound-alone", "--contexts", "8,16", "--json")
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    assert [s["scenario"] for s in data["scenarios"]] == ["small", "memory-bound-alone"]
    assert [s["metric"] for s in data["scenarios"]] == ["sum_speedup", "lone_speedup"]
    r = scaf("sweep", str(small), "memory-bound-alone", "--contexts", "8,16")
    assert r.returncode == 0, r.stderr
    assert r.stdout.count("sweep of ") == 2
    summary = r.stdout[r.stdout.index("summary"):].splitlines()[1:]
    assert [line.split(":")[0].strip() for line in summary] == [
        "small, 8 contexts", "small, 16 contexts", "memory-bound-alone, 8 contexts", "memory-bound-alone, 16 contexts"]
    assert all("equipartition (" in line for line in summary)
    # all: every shipped scenario, each file validated before anything runs
    bad = small.with_name("bad.toml")
    bad.write_text(SMALL.replace("work_s = 12", "work_s = -12"))
    r = scaf("sweep", "all", str(bad), "--contexts", "8")
    assert r.returncode == 2 and "work_s" in r.stderr and r.stdout == ""
    r = scaf("sweep", "all", "--contexts", "4", "--configs", "equipartition", "--json")
    assert r.returncode == 0, r.stderr
    shipped = sorted(p.stem for p in (Path(__file__).resolve().parents[2] / "scenarios").glob("*.toml"))
    assert [s["scenario"] for s in json.loads(r.stdout)["scenarios"]] == shipped


def test_bad_scenario_names_field_and_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text(SMALL.replace("work_s = 12", "work_s = -12"))
    for action in ("run", "check"):
        r = scaf(action, str(bad))
        assert r.returncode == 2
        assert r.stdout == ""
        assert f"{bad}:18: program[2].work_s: must be > 0" in r.stderr
        assert "Traceback" not in r.stderr
    bad.write_text(SMALL.replace("[machine]", "[machine"))
    r = scaf("run", str(bad))
    assert r.returncode == 2 and f"{bad}:6:" in r.stderr and "syntax" in r.stderr


def test_check_and_unknown_names(small: Path) -> None:
    r = scaf("check", str(small))
    assert r.returncode == 0 and "ok" in r.stdout
    r = scaf("run", "no-such-scenario")
    assert r.returncode == 2 and "cg-lu-36" in r.stderr
    r = scaf("sweep", str(small), "--contexts", "0,8")
    assert r.returncode == 2 and "--contexts" in r.stderr
    r = scaf("run", str(small), "--configs", "fastest")
    assert r.returncode == 2 and "oracle-dynamic" in r.stderr
    r = scaf()
    assert r.returncode == 2 and "ACTION" in r.stderr


def test_run_on_another_machine_size() -> None:
    # --contexts runs a shipped scenario on another machine, scaled as the sweep scales it: a pool's makespan line
    # for 64 contexts without editing the file; a bad size is refused before anything runs.
    r = scaf("run", "pools-dask-16", "--contexts", "64", "--configs", "framework,speedup", "--json")
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    assert data["scenario"] == "pools-dask-16" and data["contexts"] == 64 and data["achievable_s"] > 0
    r = scaf("run", "pools-dask-16", "--contexts", "0")
    assert r.returncode == 2 and "--contexts" in r.stderr and r.stdout == ""
    r = scaf("run", "pools-dask-16", "--contexts", "8,16")
    assert r.returncode == 2 and "one integer" in r.stderr
