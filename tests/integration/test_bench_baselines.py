"""`scaf bench pairs` against what a user can do without scaf: the `static` configuration, the baselines
reaching the user's own programs, and the report's comparison with the best baseline of each pair.
No assertion on timings or on the value of a ratio: only on what each program got and on the figures
being complete and consistent with each other."""

from __future__ import annotations

import csv
import json
import math
import os
import re
import subprocess
from pathlib import Path

import pytest
from conftest import SCAF
from scaf.lib import paths, startteam
from scaf.lib.bench import configs, machine, report

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


def test_the_baselines_are_what_a_user_can_type() -> None:
    assert configs.BASELINES == ("unmodified", "omp-dynamic", "static", "partition")
    assert all(configs.CONFIGS[b].policy is None for b in configs.BASELINES)


@pytest.mark.parametrize("ncpus", [1, 2, 3, 4, 7, 64])
def test_static_gives_each_program_its_share_as_a_thread_count_unpinned(ncpus: int) -> None:
    cpus = list(range(10, 10 + ncpus))  # not starting at 0: the split is of the set, not of CPU numbers
    shares = []
    for slot in (0, 1):
        env, mine = configs.program_settings("static", slot, 2, cpus)
        # Every runtime's own count variable (the start environment's one table), all the same share.
        assert set(env) == {"OMP_NUM_THREADS", *startteam.counts(1)}, env
        assert env == {"OMP_NUM_THREADS": env["OMP_NUM_THREADS"], **startteam.counts(int(env["OMP_NUM_THREADS"]))}
        assert mine == cpus  # no pinning: every program may run anywhere in the set
        shares.append(int(env["OMP_NUM_THREADS"]))
        # The same split as partition's CPU sets, as a number instead of a set.
        _, pinned = configs.program_settings("partition", slot, 2, cpus)
        assert shares[-1] == len(pinned)
    if ncpus >= 2:
        assert sum(shares) == ncpus and shares[0] - shares[1] in (0, 1)
    else:
        assert shares == [1, 1]  # at least one thread each


def test_static_with_three_programs_gives_the_remainder_to_the_first() -> None:
    shares = [configs.program_settings("static", s, 3, list(range(8)))[0]["OMP_NUM_THREADS"]
              for s in range(3)]
    assert shares == ["3", "3", "2"]


def test_baselines_settings() -> None:
    cpus = [0, 1, 2, 3]
    assert configs.program_settings("unmodified", 0, 2, cpus) == ({}, cpus)
    assert configs.program_settings("omp-dynamic", 1, 2, cpus) == ({"OMP_DYNAMIC": "true"}, cpus)


# ---------------------------------------------------------------- the comparison, on known entries


def entry(total: float | None, ok: int = 1) -> report.PairEntry:
    e = report.PairEntry(ok_runs=ok, failed_runs=1 - ok)
    if total is not None:
        e.speedups = [total / 2, total / 2]
    return e


def test_vs_best_picks_the_best_that_worked_and_flags_more_than_5_percent_below() -> None:
    entries = {
        ("a", "a"): {"unmodified": entry(1.0), "omp-dynamic": entry(1.5), "static": entry(2.0),
                     "speedup": entry(1.8)},
        ("a", "b"): {"unmodified": entry(1.0), "static": entry(None, ok=0), "speedup": entry(1.0)},
        ("b", "b"): {"omp-dynamic": entry(2.0), "static": entry(2.0), "speedup": entry(1.9)},
        ("c", "c"): {"unmodified": entry(1.0), "speedup": entry(None, ok=0)},
        ("d", "d"): {"unmodified": entry(1.0)},  # the candidate did not run: no comparison
    }
    out = report.vs_best(entries, "speedup", ["unmodified", "omp-dynamic", "static"])
    assert set(out) == {("a", "a"), ("a", "b"), ("b", "b"), ("c", "c")}
    aa = out[("a", "a")]
    assert (aa.best, aa.best_total) == ("static", 2.0)
    assert aa.factor_best == pytest.approx(0.9) and aa.below
    assert aa.factor_unmodified == pytest.approx(1.8)
    ab = out[("a", "b")]
    assert ab.best == "unmodified" and ab.factor_best == pytest.approx(1.0) and not ab.below  # failed static
    bb = out[("b", "b")]
    assert bb.best == "omp-dynamic"  # a tie goes to the first listed
    assert bb.factor_best == pytest.approx(0.95) and not bb.below  # 5% below exactly is not flagged
    assert bb.unmodified_total is None and bb.factor_unmodified is None
    cc = out[("c", "c")]
    assert cc.candidate_total is None and cc.factor_best is None and not cc.below


def test_scaf_cpuset_is_scaf_with_fixed_teams_pinned() -> None:
    c = configs.CONFIGS["scaf-cpuset"]
    assert c.policy == "speedup" and c.daemon_args == ("--placement", "cpuset") and not c.env
    assert configs.warm_of("scaf-cpuset") == "scaf-cpuset-warm" and configs.CONFIGS["scaf-cpuset-warm"].warm
    assert "scaf-cpuset" not in configs.DEFAULT_CONFIGS and "scaf-cpuset" not in configs.BASELINES


def pair_run(config: str, repeat: int, t0: float | None, t1: float | None) -> dict:
    """A pair run of workloads a and b taking t0 and t1 seconds (None: that program failed)."""
    progs = [{"workload": w, "slot": k, "time_s": t, "error": None if t else "exit status 1"}
             for k, (w, t) in enumerate((("a", t0), ("b", t1)))]
    return {"kind": "pair", "pair": ["a", "b"], "config": config, "repeat": repeat, "programs": progs}


def test_paired_factors_compare_within_each_repeat() -> None:
    serial = {"a": report.Serial(4.0, None, 1), "b": report.Serial(2.0, None, 1)}
    runs = [
        # Repeat 0, a fast minute: static Σ = 2 + 1 = 3, unmodified 1 + 0.5; scaf Σ = 2 + 1.
        pair_run("static", 0, 2.0, 2.0), pair_run("unmodified", 0, 4.0, 4.0), pair_run("scaf", 0, 2.0, 2.0),
        # Repeat 1, everything 25% slower: the factor is the same, though scaf's Σ is below repeat 0's static.
        pair_run("static", 1, 2.5, 2.5), pair_run("scaf", 1, 2.5, 2.5),
        # Repeat 2: scaf 10% slower than static in the same minute.
        pair_run("static", 2, 2.0, 2.0), pair_run("scaf", 2, 2.2, 2.2),
        # Repeat 3: a failed scaf run gives no factor; repeat 4: no baseline worked, no factor.
        pair_run("static", 3, 2.0, 2.0), pair_run("scaf", 3, None, 2.0),
        pair_run("static", 4, None, 2.0), pair_run("scaf", 4, 2.0, 2.0),
    ]
    out = report.paired_factors(runs, serial, ["scaf"], ["unmodified", "static"])
    assert list(out) == [("a", "b")]
    assert out[("a", "b")]["scaf"] == pytest.approx([1.0, 1.0, 2.0 / 2.2])


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
                assert p["settings"] == configs.count_env(share) and p["cpus"] == cpus, p
                assert p["threads"] == share, p
            elif r["config"] == "unmodified":
                assert p["settings"] == {} and p["cpus"] == cpus and p["threads"] == len(cpus), p
            elif r["config"] == "omp-dynamic":
                assert p["settings"] == {"OMP_DYNAMIC": "true"} and p["cpus"] == cpus, p
                assert 1 <= p["threads"] <= len(cpus), p


def test_report_sets_the_candidate_against_the_best_baseline(
        baselines_run: tuple[Path, subprocess.CompletedProcess[str]]) -> None:
    out, res = baselines_run
    assert res.returncode == 0, res.stdout + res.stderr
    doc = json.loads((out / "report.json").read_text())
    assert doc["format"] == "scaf-bench-report" and doc["candidate"] == "equipartition"
    assert doc["best_of"] == ["unmodified", "omp-dynamic", "static"]
    sums = {(p["first"], p["second"]): {c: v["sum_speedup"] for c, v in p["configs"].items()}
            for p in doc["pairs"]}
    assert set(sums) == PAIRS and all(set(s) == set(CONFIGS) for s in sums.values())
    versus = {(v["first"], v["second"]): v for v in doc["vs_best"]}
    assert set(versus) == PAIRS
    for pair, v in versus.items():
        s = sums[pair]
        assert all(v[k] is not None for k in ("best_baseline", "best_sum_speedup", "candidate_sum_speedup",
                                              "factor_vs_best", "unmodified_sum_speedup", "factor_vs_unmodified"))
        assert v["best_sum_speedup"] == max(s[b] for b in doc["best_of"]) == s[v["best_baseline"]]
        assert v["candidate_sum_speedup"] == s["equipartition"]
        assert v["factor_vs_best"] == pytest.approx(s["equipartition"] / v["best_sum_speedup"])
        assert v["factor_vs_unmodified"] == pytest.approx(s["equipartition"] / s["unmodified"])
        assert v["below_best"] == (v["factor_vs_best"] < 0.95)
    gm = doc["geomean"]
    assert gm["pairs_vs_best"] == gm["pairs_vs_unmodified"] == 3

    def geo(xs: list[float]) -> float:
        return math.exp(sum(math.log(x) for x in xs) / len(xs))

    assert gm["factor_vs_best"] == pytest.approx(geo([v["factor_vs_best"] for v in versus.values()]))
    assert gm["factor_vs_unmodified"] == pytest.approx(geo([v["factor_vs_unmodified"] for v in versus.values()]))

    # The same figures in the CSV, the summary's "best" rows, the Markdown and the printed table.
    rows = {(r["first"], r["second"]): r for r in csv.DictReader((out / "best_baseline.csv").open())}
    assert set(rows) == PAIRS
    for pair, r in rows.items():
        v = versus[pair]
        assert r["best_baseline"] == v["best_baseline"] and r["below_best"] == ("yes" if v["below_best"] else "no")
        assert float(r["factor_vs_best"]) == pytest.approx(v["factor_vs_best"])
        assert float(r["factor_vs_unmodified"]) == pytest.approx(v["factor_vs_unmodified"])
    summary = {(r["baseline"], r["class"]): r for r in csv.DictReader((out / "summary.csv").open())}
    assert summary[("best", "all")]["pairs"] == "3"
    assert float(summary[("best", "all")]["mean_factor"]) == pytest.approx(gm["factor_vs_best"])
    assert float(summary[("unmodified", "all")]["mean_factor"]) == pytest.approx(gm["factor_vs_unmodified"])
    md = (out / "report.md").read_text()
    header = "| pair | best baseline | Σ best | Σ equipartition | factor vs best | factor vs unmodified | flag |"
    assert header in md
    for (a, b), v in versus.items():
        line = next(ln for ln in md.splitlines() if ln.startswith(f"| {a}+{b} | {v['best_baseline']} |"))
        assert line.endswith("| BELOW |") == v["below_best"], line
        assert f"| {v['factor_vs_best']:.3f} | {v['factor_vs_unmodified']:.3f} |" in line
    assert f"| geometric mean (3 pairs) | - | - | - | {gm['factor_vs_best']:.3f} | " \
           f"{gm['factor_vs_unmodified']:.3f} |" in md
    for col in ("best baseline", "factor vs best", "factor vs unmodified", "flag", "geometric mean (3 pairs)"):
        assert col in res.stdout, col
    assert "equipartition against the best baseline" in res.stdout


def test_report_json_is_rendered_again_identically(
        baselines_run: tuple[Path, subprocess.CompletedProcess[str]], tmp_path: Path) -> None:
    src, _ = baselines_run
    out = tmp_path / src.name
    out.mkdir()
    (out / "results.json").write_text((src / "results.json").read_text())
    res = bench("report", str(out))
    assert res.returncode == 0, res.stdout + res.stderr
    for name in ("report.json", "best_baseline.csv", "summary.csv", "report.md"):
        assert (out / name).read_text() == (src / name).read_text(), name


def test_pairs_help_describes_static_and_the_comparison() -> None:
    res = bench("pairs", "--help")
    assert res.returncode == 0, res.stderr
    assert res.stdout.isascii()  # help2man makes the manual page from it: no symbols it cannot render
    text = " ".join(res.stdout.split())
    assert "static OMP_NUM_THREADS = each program's half of the CPUs" in text
    assert "not pinned" in text
    for words in ("best baseline", "unmodified, omp-dynamic, static and partition", "BELOW",
                  "more than 5% under the best", "geometric means", "best_baseline.csv", "report.json"):
        assert words in text, words


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
                assert p["settings"] == configs.count_env(share) and p["threads"] == share, p
                assert icv == {"OMP_DYNAMIC": "FALSE", "OMP_NUM_THREADS": str(share)} and team == share
            elif config == "unmodified":
                assert p["settings"] == {} and icv == {"OMP_DYNAMIC": "FALSE", "OMP_NUM_THREADS": str(len(cpus))}
                assert team == len(cpus)
            else:
                assert p["settings"] == {"OMP_DYNAMIC": "true"} and icv["OMP_DYNAMIC"] == "TRUE"
                assert 1 <= team <= len(cpus)
    assert seen == {("solo", 0)} | {(c, s) for c in ("unmodified", "omp-dynamic", "static") for s in (0, 1)}
