"""The daemon's memory in measurements: `scaf bench pairs`' cold and warm configurations (a priming run, then the
measured run on a daemon that reads its memory from disk), and the private daemons of the bench, `scaf doctor`
and `scaf check`, which never touch the user's memory. Assertions on what the daemon and the layer report, never
on times."""

from __future__ import annotations

import csv
import json
import os
import subprocess
from pathlib import Path

import pytest
from conftest import SCAF
from scaf.lib import paths
from scaf.lib.bench import configs


def scaf(*args: str, env: dict[str, str] | None = None, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(SCAF), *args], check=False, capture_output=True, text=True, timeout=timeout,
                          env=env)


def small_env(state_home: Path) -> dict[str, str]:
    """The user's state home somewhere the test looks, and the workloads at a small fraction of their work (a
    smaller one when the suite runs smaller still)."""
    scale = min(float(os.environ.get("WL_SCALE", "1")), 0.1)
    return dict(os.environ, XDG_STATE_HOME=str(state_home), WL_SCALE=repr(scale))


def state_dir_of(daemon: dict) -> str:
    argv = daemon["argv"]
    return argv[argv.index("--state-dir") + 1]


# ---------------------------------------------------------------- naming


def test_warm_configurations_are_the_scaf_ones() -> None:
    assert configs.parse_configs("unmodified,scaf,scaf-warm, speedup-warm,fixed-gang-warm") == [
        "unmodified", "scaf", "scaf-warm", "speedup-warm", "fixed-gang-warm"]
    warm = {n for n, c in configs.CONFIGS.items() if c.warm}
    assert warm == {f"{n}-warm" for n, c in configs.CONFIGS.items() if c.policy is not None and not c.warm}
    assert all(configs.CONFIGS[n].policy == configs.CONFIGS[n[:-len("-warm")]].policy for n in warm)
    # Asked for by name: the defaults measure what they did before.
    assert "scaf" not in configs.DEFAULT_CONFIGS and not warm & set(configs.DEFAULT_CONFIGS)
    assert configs.warm_of("scaf") == "scaf-warm" and configs.warm_of("static") is None
    assert configs.warm_of("scaf-warm") is None
    assert configs.candidate(["unmodified", "scaf", "scaf-warm"]) == "scaf"


@pytest.mark.parametrize(("given", "said"), [
    (["--configs", "unmodified-warm"], ("configuration unmodified-warm: unmodified runs no scaf daemon, so it has "
                                       "no memory to warm")),
    (["--configs", "static,nosuch-warm"], "unknown configuration nosuch-warm; choose from"),
    (["--configs", "scaf,scaf-warm", "--daemon-arg=--no-memory"],
     "scaf-warm: a warm configuration needs the daemon's memory, which --daemon-arg=--no-memory turns off"),
    (["--configs", ","], "no configuration given"),
    (["--program", "nosuch"], ("or the name of a program the bench knows: xgboost-hist, datatable, lapack, polars, "
                              "duckdb, onnxruntime, arrow, numba, numexpr, go, java, tbb-for, tbb-reduce")),
])
def test_configurations_refused_say_why(tmp_path: Path, given: list[str], said: str) -> None:
    out = tmp_path / "b"
    r = scaf("bench", "pairs", "--workloads", "fixed", "--size", "S", "--out", str(out), *given)
    assert r.returncode == 2, r.stdout + r.stderr
    assert said in " ".join(r.stderr.split()), r.stderr
    assert not out.exists()  # refused before anything ran


def test_help_documents_cold_and_warm() -> None:
    r = scaf("bench", "pairs", "--help")
    text = " ".join(r.stdout.split())
    assert r.returncode == 0
    for what in ("memory, cold and warm:", "NAME-warm", "scaf-warm", "priming run", "SCAF_START_TEAM=T",
                 "a bench never reads or writes your memory", "WARM BELOW", "COLD < PLAIN"):
        assert what in text, what


# ---------------------------------------------------------------- a warm run


@pytest.fixture(scope="module")
def warm_bench(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, subprocess.CompletedProcess[str]]:
    """fixed+fixed (fixed by evidence: the layer's rule) cold and warm beside unmodified, on a daemon that hands
    out one context (--cpus=1): a program it remembers fixed is offered a start team of 1 whatever the load, below
    its count as soon as the bench's CPU set has two."""
    where = tmp_path_factory.mktemp("warm")
    out, home = where / "b", where / "home"
    r = scaf("bench", "pairs", "--workloads", "fixed", "--configs", "unmodified,scaf,scaf-warm", "--size", "S",
             "--stagger", "0", "--daemon-arg=--cpus=1", "--out", str(out), env=small_env(home))
    return out, home, r


def pair_run(out: Path, config: str) -> dict:
    (run,) = [r for r in json.loads((out / "results.json").read_text())["runs"]
              if r["kind"] == "pair" and r["config"] == config]
    return run


def test_the_priming_run_leaves_a_memory_the_warm_run_recalls(
        warm_bench: tuple[Path, Path, subprocess.CompletedProcess[str]]) -> None:
    out, _, r = warm_bench
    assert r.returncode == 0, r.stdout + r.stderr
    warm = pair_run(out, "scaf-warm")
    assert warm["error"] is None
    prime = warm["prime"]
    assert prime["error"] is None and all(p["error"] is None for p in prime["programs"])
    assert prime["memory_files"] == [f"memory-{os.getuid()}.bin"]
    assert prime["alloc_log"] == "logs/fixed+fixed.scaf-warm.r0.prime.alloc.jsonl"
    assert (out / prime["alloc_log"]).exists() and (out / warm["alloc_log"]).exists()
    # Two daemons, one memory: the measured run's daemon read it from the directory the priming run's left.
    assert state_dir_of(prime["daemon"]) == state_dir_of(warm["daemon"])
    assert prime["daemon"]["argv"] != warm["daemon"]["argv"]  # not the same socket: a fresh daemon
    two_cpus = len(os.sched_getaffinity(0)) >= 2
    for p in warm["programs"]:
        assert p["error"] is None and p["scaf_client"], p
        # What the daemon says it remembered at the program's arrival (its log), before anything ran.
        remembered = p["memory"]["remembered"]
        assert remembered is not None and remembered["verdict"] == "fixed" and remembered["runs"] >= 1, p
        assert remembered["source"] == "evidence" and p["memory"]["start_team"] == 1, p
        # scaf run's recall, as the bench made it when the program started.
        assert p["recall"]["asked"] and "remembered fixed from" in p["recall"]["why"], p
        if two_cpus:
            assert p["recall"]["team"] == 1, p
            assert p["settings"]["OMP_NUM_THREADS"] == p["settings"]["SCAF_START_TEAM"] == "1", p
            assert p["threads"] == 1, p  # the team the program itself reports it ran
    # Nothing of the memory outlives the measurement.
    assert not os.path.exists(state_dir_of(warm["daemon"]))


def test_the_cold_run_starts_from_an_empty_memory(
        warm_bench: tuple[Path, Path, subprocess.CompletedProcess[str]]) -> None:
    out, _, r = warm_bench
    assert r.returncode == 0, r.stdout + r.stderr
    cold = pair_run(out, "scaf")
    assert "prime" not in cold
    first = next(p for p in cold["programs"] if p["slot"] == 0)
    assert first["error"] is None and first["memory"]["remembered"] is None, first
    assert first["recall"] == {"team": 0, "why": "nothing is remembered of it", "asked": True}
    assert "OMP_NUM_THREADS" not in first["settings"] and "SCAF_START_TEAM" not in first["settings"]
    # Its own memory, in a directory of its own, gone with it; the warm run's is another.
    assert state_dir_of(cold["daemon"]) != state_dir_of(pair_run(out, "scaf-warm")["daemon"])
    assert not os.path.exists(state_dir_of(cold["daemon"]))


def test_the_report_has_a_warm_column(warm_bench: tuple[Path, Path, subprocess.CompletedProcess[str]]) -> None:
    out, _, r = warm_bench
    assert r.returncode == 0, r.stdout + r.stderr
    rep = json.loads((out / "report.json").read_text())
    assert rep["candidate"] == "scaf" and rep["warm"] == "scaf-warm" and rep["best_of"] == ["unmodified"]
    (row,) = rep["vs_best"]
    assert row["best_baseline"] == "unmodified" and row["warm"]["config"] == "scaf-warm"
    assert row["warm"]["sum_speedup"] is not None and row["warm"]["factor_vs_best"] is not None
    assert isinstance(row["warm"]["below_best"], bool) and isinstance(row["below_unmodified"], bool)
    assert {"warm_factor_vs_best", "warm_factor_vs_unmodified"} <= rep["geomean"].keys()
    # The warm twin has its own columns, and is no baseline of the summary.
    assert {s["baseline"] for s in rep["summary"]} == {"unmodified", "best"}
    with open(out / "best_baseline.csv") as f:
        (line,) = list(csv.DictReader(f))
    assert line["candidate"] == "scaf" and line["warm"] == "scaf-warm" and line["warm_sum_speedup"]
    assert line["warm_below_best"] in ("yes", "no")
    with open(out / "pairs.csv") as f:
        assert {row["config"] for row in csv.DictReader(f)} == {"unmodified", "scaf", "scaf-warm"}
    md = (out / "report.md").read_text()
    assert "## scaf and scaf-warm against the best baseline of each pair" in md
    assert "| Σ scaf-warm |" in md and "| scaf-warm / best |" in md
    # Re-rendered from results.json alone: the same.
    again = scaf("bench", "report", str(out))
    assert again.returncode == 0, again.stderr
    assert json.loads((out / "report.json").read_text())["vs_best"] == rep["vs_best"]


# ---------------------------------------------------------------- the user's memory is left alone


def test_the_bench_leaves_the_users_memory_alone(warm_bench: tuple[Path, Path, subprocess.CompletedProcess[str]]) -> None:
    _, home, r = warm_bench
    assert r.returncode == 0, r.stdout + r.stderr
    assert not (home / "scaf").exists()


def test_doctor_and_check_leave_the_users_memory_alone(tmp_path: Path) -> None:
    home = tmp_path / "home"
    env = small_env(home)
    doc = scaf("doctor", "--quick", "--out", str(tmp_path / "doc"), env=env)
    assert doc.returncode == 0, doc.stdout + doc.stderr
    # --no-memory: nothing recorded with the user's daemon either (which would keep the user's memory, rightly).
    ck = scaf("check", "--no-memory", "--threads", "2", "--ignore", "^name=", "--", str(paths.workload("fixed")),
              "--size", "S", env=dict(os.environ, XDG_STATE_HOME=str(home)))
    assert ck.returncode == 1 and "not malleable" in ck.stdout, ck.stdout + ck.stderr  # its private daemon ran
    assert not (home / "scaf").exists()
