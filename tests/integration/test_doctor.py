"""`scaf doctor`: a --quick run end to end, and the advice thresholds."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from conftest import SCAF
from scaf.lib import advice, paths
from test_cgroup import expected_real_version


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(SCAF), "doctor", *args], check=False, capture_output=True, text=True,
                          timeout=120)


def test_quick_end_to_end(tmp_path: Path) -> None:
    out = tmp_path / "doc"
    res = run("--quick", "--out", str(out))
    assert res.returncode == 0, res.stdout + res.stderr
    for what in ("CPU model:", "sockets x cores:", "cpu quota:", "scafd hands out:", "hardware counters:", "scafd:",
                 "layer:", "workloads:", "daemon:", "advice:", "equi / unmod"):
        assert what in res.stdout, what
    # Which cgroup version and which bound apply, as scafd itself finds them.
    (view,) = [ln for ln in res.stdout.splitlines() if ln.startswith("scafd hands out:")]
    version = expected_real_version()
    assert (f"cgroup v{version}" if version else "no cgroup cpu controller") in view
    assert " set by " in view
    data = json.loads((out / "results.json").read_text())
    pairs = [r for r in data["runs"] if r["kind"] == "pair"]
    assert {r["config"] for r in pairs} == {"unmodified", "equipartition", "speedup"}
    assert len({tuple(r["pair"]) for r in pairs}) == 1
    # A fresh folder is not "resumed"; the advice says how many runs, how spread, and how to apply it.
    assert "resuming" not in res.stdout + res.stderr
    assert "1 run(s) per pair" in res.stdout and "1 pair, range" in res.stdout
    assert "to apply it:" in res.stdout
    assert all(p["error"] is None for r in data["runs"] for p in r["programs"])
    # Run again on the same folder: now it is a resume, and nothing runs twice.
    again = run("--quick", "--out", str(out))
    assert again.returncode == 0, again.stdout + again.stderr
    assert f"resuming {out}: {len(data['runs'])} runs are already there" in again.stdout.replace("\n", "")
    assert len(json.loads((out / "results.json").read_text())["runs"]) == len(data["runs"])
    # The folder is a bench folder: the full report renders from it.
    rep = subprocess.run([str(SCAF), "bench", "report", str(out)], check=False, capture_output=True,
                         text=True, timeout=120)
    assert rep.returncode == 0, rep.stderr
    assert (out / "summary.csv").exists()


def test_default_folder_is_the_state_home_not_the_cwd(tmp_path: Path) -> None:
    cwd, state = tmp_path / "cwd", tmp_path / "state"
    cwd.mkdir()
    env = dict(os.environ, XDG_STATE_HOME=str(state))
    res = subprocess.run([str(SCAF), "doctor", "--quick"], check=False, capture_output=True, text=True,
                         timeout=120, cwd=cwd, env=env)
    assert res.returncode == 0, res.stdout + res.stderr
    assert list(cwd.iterdir()) == []
    (folder,) = (state / "scaf").iterdir()
    assert folder.name.startswith("doctor-") and (folder / "results.json").exists()
    assert str(folder) in res.stdout.replace("\n", "")


def test_pairs_it_skips_are_not_announced(tmp_path: Path) -> None:
    """A budget that fits one pair: only that pair is named, and the stop says how many ran."""
    res = run("--size", "S", "--budget", "1", "--out", str(tmp_path / "doc"))
    assert res.returncode == 0, res.stdout + res.stderr
    data = json.loads((tmp_path / "doc" / "results.json").read_text())
    (pair,) = {tuple(r["pair"]) for r in data["runs"] if r["kind"] == "pair"}
    named = [ln for ln in res.stdout.splitlines() if ln.startswith("pair ")]
    assert named == [f"pair 1: {pair[0]}+{pair[1]}"]
    assert "stopped after 1 pair(s)" in res.stdout
    for a, b in advice.choose_pairs(sorted(os.listdir(paths.workloads_dir())), quick=False)[1:]:
        assert f"{a}+{b}" not in res.stdout


def test_advice_thresholds() -> None:
    assert advice.advise({"equipartition": 1.2, "speedup": 1.3}, 8).verdict == "speedup"
    # speedup stays the advice unless equipartition is clearly (> 2%) better.
    assert advice.advise({"equipartition": 1.31, "speedup": 1.3}, 8).verdict == "speedup"
    assert advice.advise({"equipartition": 1.4, "speedup": 1.3}, 8).verdict == "equipartition"
    assert advice.advise({"equipartition": 1.04, "speedup": 1.01}, 8).verdict == "none"
    assert advice.advise({"equipartition": 1.05, "speedup": None}, 8).verdict == "equipartition"
    assert advice.advise({"equipartition": None, "speedup": None}, 8).verdict == "none"
    assert advice.advise({"equipartition": 2.0, "speedup": 2.0}, 1).verdict == "none"
    text = advice.advise({"equipartition": 1.2, "speedup": 1.3}, 8).text
    assert "1.300X" in text and "1.200X" in text


def test_pairs_follow_what_is_built() -> None:
    assert advice.choose_pairs(["cg", "ep", "spin", "stream"], quick=False) == [("ep", "spin"), ("cg", "stream"), ("ep", "ep")]
    assert advice.choose_pairs(["cg", "ep", "spin", "stream"], quick=True) == [("ep", "spin")]
    assert advice.choose_pairs(["a", "b"], quick=False) == [("a", "b")]
    assert advice.choose_pairs([], quick=False) == []
    assert advice.choose_pairs(["ep"], quick=False, programs=["x", "y"]) == [("x", "y"), ("x", "x"), ("y", "y")]
    assert advice.choose_pairs(["ep"], quick=True, programs=["x", "y"]) == [("x", "y")]


def test_bad_input_and_help() -> None:
    res = run("--budget", "0")
    assert res.returncode == 2 and "--budget" in res.stderr
    res = run("--help")
    assert res.returncode == 0 and "examples:" in res.stdout and "equipartition" in res.stdout
