"""`scaf bench pairs --program` and `scaf doctor --program`: the user's own programs, judged by exit status and output."""

from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import SCAF
from scaf.lib import paths

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def scaf(*args: str, cwd: str | None = None, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, XDG_STATE_HOME=os.environ.get("XDG_STATE_HOME", "/nonexistent-not-used"))
    return subprocess.run([str(SCAF), *args], check=False, capture_output=True, text=True, timeout=timeout,
                          cwd=cwd, env=env)


def real_programs() -> tuple[list[str], str]:
    """Two real Debian OpenMP programs of the corpus when installed (GraphicsMagick, ImageMagick), each
    writing out.ppm; else two of our workloads named as commands, their timing field ignored."""
    if shutil.which("gm") and shutil.which("convert-im6.q16"):
        return ["--program", "gm=gm convert -size 512x2048 gradient: -blur 0x20 out.ppm",
                "--program", "im=convert-im6.q16 -size 256x2048 gradient: -blur 0x6 out.ppm",
                "--output", "gm=out.ppm", "--output", "im=out.ppm"], "debian"
    ep, crit = paths.workload("ep"), paths.workload("crit")
    return ["--program", f"a={ep} --size S", "--program", f"b={crit} --size S",
            "--ignore", "time_s="], "workloads"


def test_two_programs_all_configurations(tmp_path: Path) -> None:
    args, kind = real_programs()
    out = tmp_path / "b"
    res = scaf("bench", "pairs", *args, "--configs", "unmodified,partition,equipartition,speedup",
               "--stagger", "0", "--out", str(out), cwd=str(tmp_path))
    assert res.returncode == 0, res.stdout + res.stderr
    data = json.loads((out / "results.json").read_text())
    names = sorted(data["params"]["programs"])
    assert len(names) == 2
    pair_runs = [r for r in data["runs"] if r["kind"] == "pair"]
    assert {tuple(r["pair"]) for r in pair_runs} == {(names[0], names[0]), (names[0], names[1]),
                                                     (names[1], names[1])}
    assert {r["config"] for r in pair_runs} == {"unmodified", "partition", "equipartition", "speedup"}
    digests: dict[str, set[str]] = {}
    for r in data["runs"]:
        for p in r["programs"]:
            assert p["error"] is None, (kind, p)
            assert p["time_s"] == p["wall_s"] and p["command"]
            digests.setdefault(p["workload"], set()).add(p["checksum"])
            if r.get("config") in ("equipartition", "speedup"):
                assert p["scaf_client"], p  # the layer steered the user's program
    # The same output in every configuration: one digest per program.
    assert all(len(d) == 1 for d in digests.values()), digests
    with open(out / "pairs.csv") as f:
        rows = list(csv.DictReader(f))
    assert {(r["first"], r["second"], r["config"]) for r in rows} >= {(names[0], names[1], "speedup")}
    assert all(r["failed_runs"] == "0" for r in rows)
    for png in ("pairs_bars.png", "improvement_sorted.png"):
        assert (out / png).read_bytes()[:8] == PNG_MAGIC


def test_output_that_changes_is_a_failure_unless_ignored(tmp_path: Path) -> None:
    """Our ep prints its time on its result line: as a command, that line differs between runs."""
    ep = paths.workload("ep")
    common = ["bench", "pairs", "--program", f"e={ep} --size S", "--configs", "unmodified", "--repeat", "2",
              "--stagger", "0"]
    res = scaf(*common, "--out", str(tmp_path / "strict"))
    assert res.returncode == 1, res.stdout + res.stderr
    assert "differs from the 1-thread run's" in res.stdout
    res = scaf(*common, "--ignore", r"time_s=", "--out", str(tmp_path / "lenient"))
    assert res.returncode == 0, res.stdout + res.stderr
    assert "differs" not in res.stdout


def test_exit_status_and_missing_output_are_failures(tmp_path: Path) -> None:
    ep = paths.workload("ep")
    res = scaf("bench", "pairs", "--program", f"bad={ep} --size nonsense", "--program", f"quiet={ep} --size S",
               "--output", "quiet=never-written.txt", "--configs", "unmodified", "--out", str(tmp_path / "b"))
    assert res.returncode == 1, res.stdout + res.stderr
    data = json.loads((tmp_path / "b" / "results.json").read_text())
    errors = {p["workload"]: p["error"] for r in data["runs"] if r["kind"] == "solo" for p in r["programs"]}
    assert errors["bad"].startswith("exit status ")
    assert "did not write its --output never-written.txt" in errors["quiet"]


@pytest.mark.parametrize("args,message", [
    (["--program", "noequals"], "expected NAME='COMMAND ARGS...'"),
    (["--program", "a b=true"], "expected NAME='COMMAND ARGS...'"),
    (["--program", "x="], "no command after '='"),
    (["--program", "x=no-such-command-here --flag"], "'no-such-command-here' is not found in PATH"),
    (["--program", "x=./relative/missing"], "is not an executable file"),
    (["--program", "x=true", "--program", "x=true"], "--program x is given twice"),
    (["--program", "x=true", "--output", "y=out"], "no --program named 'y'"),
    (["--program", "x=true", "--ignore", "("], "is not a regular expression"),
    (["--ignore", "time"], "--output and --ignore apply to --program commands"),
    (["--program", "ep=true"], "a built-in workload has that name"),
    (["--program", "x='unclosed"], "No closing quotation"),
])
def test_bad_program_options(tmp_path: Path, args: list[str], message: str) -> None:
    res = scaf("bench", "pairs", *args, "--out", str(tmp_path / "b"))
    assert res.returncode == 2, res.stdout + res.stderr
    assert message in res.stderr and res.stderr.startswith("scaf bench pairs: ")
    assert not (tmp_path / "b").exists()  # nothing written for a command line that is refused


def test_doctor_advises_from_the_users_programs(tmp_path: Path) -> None:
    args, _ = real_programs()
    out = tmp_path / "doc"
    res = scaf("doctor", *args, "--quick", "--out", str(out), cwd=str(tmp_path))
    assert res.returncode == 0, res.stdout + res.stderr
    data = json.loads((out / "results.json").read_text())
    names = sorted(data["params"]["programs"])
    assert {tuple(r["pair"]) for r in data["runs"] if r["kind"] == "pair"} == {(names[0], names[1])}
    assert f"pair 1: {names[0]}+{names[1]}" in res.stdout
    assert "advice:" in res.stdout and "to apply it:" in res.stdout
    assert "1 pair, range" in res.stdout


def test_doctor_bad_program_is_a_usage_error() -> None:
    res = scaf("doctor", "--program", "nothing")
    assert res.returncode == 2 and "scaf doctor: --program 'nothing'" in res.stderr
