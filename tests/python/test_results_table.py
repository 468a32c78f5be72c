"""tools/experiments/results_table.py: the tables of docs/results.md from a bench's results.json (real runs',
trimmed: a pairs run in tests/fixtures/bench-lapack, the first 3 of 8 rounds of a pools run in
tests/fixtures/bench-pools-loky), and a clear refusal of what it cannot read."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from conftest import ROOT

SCRIPT = ROOT / "tools" / "experiments" / "results_table.py"
FIXTURE = ROOT / "tests" / "fixtures" / "bench-lapack"
POOLS = ROOT / "tests" / "fixtures" / "bench-pools-loky"


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=60,
                          check=False)


def rows(text: str, first: str) -> list[list[str]]:
    """The cells of every Markdown table row whose first cell is FIRST."""
    out = []
    for line in text.splitlines():
        if line.startswith("|"):
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if cells[0] == first:
                out.append(cells)
    return out


def test_pairs_tables_from_a_real_run() -> None:
    r = run(str(FIXTURE))
    assert r.returncode == 0, r.stderr
    assert r.stderr == ""
    out = r.stdout
    assert "- commit: 4f24e70" in out
    assert ("- command: `scaf bench pairs --program lapack --configs unmodified,omp-dynamic,static,scaf,scaf-warm "
            "--timeout 120 --out /tmp/bench-lapack`") in out
    assert "AMD EPYC, 2 logical CPUs" in out
    headers = rows(out, "pair")
    assert headers[0] == ["pair", "unmodified", "omp-dynamic", "static", "scaf", "scaf-warm"]
    assert headers[1][:5] == ["pair", "best baseline", "Σ best", "Σ scaf", "scaf / best"]
    per_config, versus = rows(out, "lapack+lapack")
    assert per_config == ["lapack+lapack", "1.10", "1.25", "1.96", "2.36", "2.15"]
    assert versus == ["lapack+lapack", "static", "1.96", "2.36", "1.207", "2.15", "1.097", "2.138"]
    assert rows(out, "geometric mean") == [["geometric mean", "", "", "", "1.207", "", "1.097", "2.138"]]


def test_the_best_of_the_baselines_named() -> None:
    r = run("--baselines", "omp-dynamic,unmodified", str(FIXTURE))
    assert r.returncode == 0, r.stderr
    assert rows(r.stdout, "lapack+lapack")[1][:5] == ["lapack+lapack", "omp-dynamic", "1.25", "2.36", "1.894"]


def test_results_json_itself_gives_the_same_tables() -> None:
    assert run(str(FIXTURE / "results.json")).stdout == run(str(FIXTURE)).stdout


def test_pools_makespans_as_the_pools_bench_prints_them() -> None:
    r = run(str(POOLS))
    assert r.returncode == 0, r.stderr
    assert "- commit: not recorded" in r.stdout
    assert rows(r.stdout, "loky") == [
        ["loky", "default", "2.249", "0.971", "0.971", "0.979", "1.087", "-", "yes", "3 (0)"],
        ["loky", "scaf", "2.185", "1.000", "1.000", "1.063", "1.000", "-", "yes", "3 (0)"],
        ["loky", "scaf-warm", "2.229", "0.980", "0.976", "1.045", "1.017", "-", "yes", "3 (0)"]]


def test_a_missing_file_is_refused_with_exit_status_2(tmp_path: Path) -> None:
    missing = tmp_path / "nothing-here" / "results.json"
    r = run(str(missing))
    assert r.returncode == 2
    assert r.stdout == ""
    assert f"results_table.py: {missing}: no such file or folder" in r.stderr


def test_a_folder_without_results_is_refused_with_exit_status_2(tmp_path: Path) -> None:
    r = run(str(tmp_path))
    assert r.returncode == 2
    assert "does not exist" in r.stderr and "scaf bench" in r.stderr
