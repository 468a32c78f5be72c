"""`scaf bench pairs` against what a user can do without scaf: the `static` configuration, and the
baselines reaching the user's own programs. No assertion on timings: only on what each program got."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest
from conftest import SCAF
from scaf.lib import paths
from scaf.lib.bench import configs, machine

CONFIGS = ("unmodified", "omp-dynamic", "static", "equipartition")
PAIRS = {("ep", "ep"), ("ep", "crit"), ("crit", "crit")}


def bench(*args: str, env: dict[str, str] | None = None, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(SCAF), "bench", *args], check=False, capture_output=True, text=True,
                          timeout=timeout, env=env)


def bench_cpus(out: Path) -> list[int]:
    return machine.parse_cpulist(json.loads((out / "results.json").read_text())["params"]["cpus"])


# ---------------------------------------------------------------- the configuration


def test_static_is_a_default_configuration() -> None:
    assert configs.parse_configs("unmodified, static,omp-dynamic") == ["unmodified", "static", "omp-dynamic"]
    assert "static" in configs.DEFAULT_CONFIGS


@pytest.mark.parametrize("ncpus", [1, 2, 3, 4, 7, 64])
def test_static_gives_each_program_its_share_as_a_thread_count_unpinned(ncpus: int) -> None:
    cpus = list(range(10, 10 + ncpus))  # not starting at 0: the split is of the set, not of CPU numbers
    shares = []
    for slot in (0, 1):
        env, mine = configs.program_settings("static", slot, 2, cpus, None, "ep")
        assert set(env) == {"OMP_NUM_THREADS"}, env
        assert mine == cpus  # no pinning: every program may run anywhere in the set
        shares.append(int(env["OMP_NUM_THREADS"]))
        # The same split as partition's CPU sets, as a number instead of a set.
        _, pinned = configs.program_settings("partition", slot, 2, cpus, None, "ep")
        assert shares[-1] == len(pinned)
    if ncpus >= 2:
        assert sum(shares) == ncpus and shares[0] - shares[1] in (0, 1)
    else:
        assert shares == [1, 1]  # at least one thread each


def test_static_with_three_programs_gives_the_remainder_to_the_first() -> None:
    shares = [configs.program_settings("static", s, 3, list(range(8)), None)[0]["OMP_NUM_THREADS"]
              for s in range(3)]
    assert shares == ["3", "3", "2"]


def test_baselines_settings() -> None:
    cpus = [0, 1, 2, 3]
    assert configs.program_settings("unmodified", 0, 2, cpus, None) == ({}, cpus)
    assert configs.program_settings("omp-dynamic", 1, 2, cpus, None) == ({"OMP_DYNAMIC": "true"}, cpus)


# ---------------------------------------------------------------- a real bench


@pytest.fixture(scope="module")
def baselines_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, subprocess.CompletedProcess[str]]:
    out = tmp_path_factory.mktemp("baselines") / "b"
    return out, bench("pairs", "--workloads", "ep,crit", "--configs", ",".join(CONFIGS), "--size", "S",
                      "--stagger", "0", "--out", str(out))


def test_each_baseline_gives_the_programs_what_it_says(
        baselines_run: tuple[Path, subprocess.CompletedProcess[str]]) -> None:
    out, res = baselines_run
    assert res.returncode == 0, res.stdout + res.stderr
    cpus = bench_cpus(out)
    runs = [r for r in json.loads((out / "results.json").read_text())["runs"] if r["kind"] == "pair"]
    assert {(tuple(r["pair"]), r["config"]) for r in runs} == {(p, c) for p in PAIRS for c in CONFIGS}
    for r in runs:
        assert r["error"] is None and len(r["programs"]) == 2, r
        for p in r["programs"]:
            # Every figure the report derives from is there, per program.
            for key in ("time_s", "wall_s", "cpu_s", "threads", "checksum", "start_s", "end_s"):
                assert p[key] is not None, (key, p)
            assert p["error"] is None and p["verified"] == "yes" and p["time_s"] > 0, p
            # `threads` is the largest team the workload reports having run.
            if r["config"] == "static":
                share = max(1, len(configs.partition(cpus, p["slot"], 2)))
                assert p["settings"] == {"OMP_NUM_THREADS": str(share)} and p["cpus"] == cpus, p
                assert p["threads"] == share, p
            elif r["config"] == "unmodified":
                assert p["settings"] == {} and p["cpus"] == cpus and p["threads"] == len(cpus), p
            elif r["config"] == "omp-dynamic":
                assert p["settings"] == {"OMP_DYNAMIC": "true"} and p["cpus"] == cpus, p
                assert 1 <= p["threads"] <= len(cpus), p


# ---------------------------------------------------------------- the user's own programs


def test_baselines_reach_the_users_program(tmp_path: Path) -> None:
    """A built workload given as --program, through a shell script that keeps its stdout and stderr
    under the pid results.json records: its result line shows the team it ran, and libgomp itself
    (OMP_DISPLAY_ENV) shows the settings it read."""
    logs = tmp_path / "logs"
    logs.mkdir()
    wrapper = tmp_path / "keep-output"
    wrapper.write_text(f'#!/bin/sh\n"$@" >"{logs}/$$.out" 2>"{logs}/$$.err"\nstatus=$?\ncat "{logs}/$$.out"\n'
                       'exit $status\n')
    wrapper.chmod(0o755)
    out = tmp_path / "b"
    env = dict(os.environ, OMP_DISPLAY_ENV="true")
    res = bench("pairs", "--program", f"e={wrapper} {paths.workload('ep')} --size S", "--ignore", "time_s=",
                "--configs", "unmodified,omp-dynamic,static", "--stagger", "0", "--out", str(out), env=env)
    assert res.returncode == 0, res.stdout + res.stderr
    cpus = bench_cpus(out)
    runs = json.loads((out / "results.json").read_text())["runs"]
    assert sorted(r.get("config", "solo") for r in runs) == ["omp-dynamic", "solo", "static", "unmodified"]
    seen = set()
    for r in runs:
        for p in r["programs"]:
            assert p["error"] is None and p["command"] and p["time_s"] == p["wall_s"], p
            result = (logs / f"{p['pid']}.out").read_text().splitlines()[-1]
            team = int(re.search(r"threads=(\d+)", result).group(1))
            icv = dict(re.findall(r"(OMP_DYNAMIC|OMP_NUM_THREADS) = '([^']*)'",
                                  (logs / f"{p['pid']}.err").read_text()))
            config = r.get("config", "solo")
            seen.add((config, p["slot"]))
            if config in ("solo", "static"):
                share = 1 if config == "solo" else max(1, len(configs.partition(cpus, p["slot"], 2)))
                assert p["settings"] == {"OMP_NUM_THREADS": str(share)} and p["threads"] == share, p
                assert icv == {"OMP_DYNAMIC": "FALSE", "OMP_NUM_THREADS": str(share)} and team == share
            elif config == "unmodified":
                assert p["settings"] == {} and icv == {"OMP_DYNAMIC": "FALSE", "OMP_NUM_THREADS": str(len(cpus))}
                assert team == len(cpus)
            else:
                assert p["settings"] == {"OMP_DYNAMIC": "true"} and icv["OMP_DYNAMIC"] == "TRUE"
                assert 1 <= team <= len(cpus)
    assert seen == {("solo", 0)} | {(c, s) for c in ("unmodified", "omp-dynamic", "static") for s in (0, 1)}
