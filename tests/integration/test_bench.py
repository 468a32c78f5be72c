"""`scaf bench` end to end with real workloads at size S (no timing assertions)."""

from __future__ import annotations

import csv
import json
import os
import signal
import subprocess
import time
import uuid
from pathlib import Path

import pytest
from conftest import SCAF

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
WORKLOADS = "ep,crit"
CONFIGS = "unmodified,equipartition"
PAIRS = {("ep", "ep"), ("ep", "crit"), ("crit", "crit")}
PNGS = ("improvement_sorted.png", "pairs_bars.png", "solo_speedup.png")
TABLES = ("summary.csv", "pairs.csv", "improvement.csv", "solo.csv", "report.md")


def bench(*args: str, env: dict[str, str] | None = None, timeout: float = 240) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(SCAF), "bench", *args], check=False, capture_output=True, text=True,
                          timeout=timeout, env=env)


def pairs_args(out: Path, stagger: str = "0") -> list[str]:
    return ["pairs", "--workloads", WORKLOADS, "--configs", CONFIGS, "--size", "S",
            "--stagger", stagger, "--out", str(out)]


def keys(results: Path) -> set[tuple]:
    data = json.loads(results.read_text())
    out = set()
    for r in data["runs"]:
        if r["kind"] == "pair":
            out.add(("pair", *r["pair"], r["config"], r["repeat"]))
        else:
            out.add((r["kind"], r["workload"], r["threads"], r["repeat"]))
    return out


def assert_png(path: Path) -> None:
    data = path.read_bytes()
    assert data[:8] == PNG_MAGIC and len(data) > 1000, path


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, subprocess.CompletedProcess[str]]:
    out = tmp_path_factory.mktemp("bench") / "b"
    return out, bench(*pairs_args(out))


def test_pairs_end_to_end(uninterrupted: tuple[Path, subprocess.CompletedProcess[str]]) -> None:
    out, res = uninterrupted
    assert res.returncode == 0, res.stdout + res.stderr
    data = json.loads((out / "results.json").read_text())
    assert data["format"] == "scaf-bench" and data["params"]["size"] == "S"
    m = data["machine"]
    for key in ("cpu_model", "kernel", "topology", "hardware_counters", "cgroup"):
        assert key in m
    assert m["topology"]["logical_cpus"] >= 1 and isinstance(m["hardware_counters"]["available"], bool)
    assert data["sessions"][0]["machine"] == m
    pair_runs = [r for r in data["runs"] if r["kind"] == "pair"]
    assert {tuple(r["pair"]) for r in pair_runs} == PAIRS
    assert len(pair_runs) == 6
    assert keys(out / "results.json") == {("solo", "ep", 1, 0), ("solo", "crit", 1, 0)} | {
        ("pair", a, b, c, 0) for a, b in PAIRS for c in CONFIGS.split(",")}
    for r in data["runs"]:
        for p in r["programs"]:
            assert p["error"] is None and p["verified"] == "yes" and p["time_s"] > 0, p
        if r.get("config") == "equipartition":
            # Each program really was a client of the run's private daemon, which then stopped.
            assert all(p["scaf_client"] for p in r["programs"])
            assert r["daemon"]["returncode"] == 0 and (out / r["alloc_log"]).stat().st_size > 0
            assert all(p["settings"]["LD_PRELOAD"].endswith("libscaf_gomp.so") for p in r["programs"])
            # Its private folder (socket, lock) is gone.
            argv = r["daemon"]["argv"]
            assert not Path(argv[argv.index("--socket") + 1]).parent.exists()
        if r.get("config") == "unmodified":
            assert all(p["settings"] == {} for p in r["programs"])
    for name in PNGS:
        assert_png(out / name)
    rows = list(csv.DictReader((out / "summary.csv").open()))
    # unmodified, and each pair's best baseline (here unmodified again: the only one that ran).
    assert {r["baseline"] for r in rows} == {"unmodified", "best"}
    assert {r["candidate"] for r in rows} == {"equipartition"}
    by_class = {r["class"]: r for r in rows if r["baseline"] == "unmodified"}
    assert int(by_class["all"]["pairs"]) == 3
    assert sum(int(by_class[c]["pairs"]) for c in ("wins", "even", "losses")) == 3
    pairs = list(csv.DictReader((out / "pairs.csv").open()))
    assert len(pairs) == 6
    for r in pairs:
        assert float(r["sum_speedup"]) == pytest.approx(float(r["speedup_first"]) + float(r["speedup_second"]))
    assert "improvement of equipartition" in res.stdout and "crit+crit" in res.stdout


def test_report_rerenders_from_results_alone(uninterrupted: tuple[Path, subprocess.CompletedProcess[str]],
                                             tmp_path: Path) -> None:
    src, _ = uninterrupted
    # A copy with results.json only (same folder name, which the report's title shows).
    out = tmp_path / src.name
    out.mkdir()
    (out / "results.json").write_text((src / "results.json").read_text())
    res = bench("report", str(out))
    assert res.returncode == 0, res.stderr
    for name in PNGS:
        assert_png(out / name)
    for name in TABLES:
        assert (out / name).read_text() == (src / name).read_text(), name
    assert "crit+crit" in res.stdout and "equipartition" in res.stdout
    # In place: the PNGs come back after being deleted.
    for name in PNGS:
        (src / name).unlink()
    res = bench("report", str(src))
    assert res.returncode == 0, res.stderr
    for name in PNGS:
        assert_png(src / name)


def test_interrupted_then_resumed_gives_the_same_pairs(
        uninterrupted: tuple[Path, subprocess.CompletedProcess[str]], tmp_path: Path) -> None:
    out = tmp_path / "b"
    tag = uuid.uuid4().hex
    env = dict(os.environ, SCAF_BENCH_TAG=tag)
    proc = subprocess.Popen([str(SCAF), "bench", *pairs_args(out, stagger="0.3")], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    results = out / "results.json"
    deadline = time.monotonic() + 120
    first: list[dict] = []
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            first = [r for r in json.loads(results.read_text())["runs"] if r["kind"] == "pair"]
        except (OSError, ValueError):
            first = []
        if first:
            break
        time.sleep(0.01)
    assert first, "no pair finished"
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "interrupted" in err and "resume" in err
    partial = keys(results)
    full = keys(uninterrupted[0] / "results.json")
    assert partial < full, "the interrupt came too late to test resuming"
    # Nothing the bench started survives it: no workload, no private daemon.
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                environ = Path(f"/proc/{entry.name}/environ").read_bytes()
            except OSError:
                continue
            assert f"SCAF_BENCH_TAG={tag}".encode() not in environ.split(b"\0"), entry.name
    before = {json.dumps(r, sort_keys=True) for r in json.loads(results.read_text())["runs"]}
    res = bench(*pairs_args(out, stagger="0.3"))
    assert res.returncode == 0, res.stdout + res.stderr
    assert "already done" in res.stderr
    assert keys(results) == full
    after = json.loads(results.read_text())
    # Finished runs were kept as they were, not measured again.
    kept = {json.dumps(r, sort_keys=True) for r in after["runs"] if r["session"] == 0}
    assert kept == before
    assert len(after["sessions"]) == 2


def fake_build(tmp_path: Path) -> Path:
    """A build folder with the real ep, and two programs that break the workload contract."""
    real = Path(str(SCAF)).parent.parent
    build = tmp_path / "build"
    (build / "workloads").mkdir(parents=True)
    (build / "bin").mkdir()
    (build / "lib").mkdir()
    os.symlink(real / "workloads" / "ep", build / "workloads" / "ep")
    os.symlink(real / "bin" / "scafd", build / "bin" / "scafd")
    os.symlink(real / "lib" / "libscaf_gomp.so", build / "lib" / "libscaf_gomp.so")
    os.symlink(real / "lib" / "libscaf_launch.so", build / "lib" / "libscaf_launch.so")  # the start table
    bad = build / "workloads" / "unverified"
    bad.write_text("#!/bin/sh\necho checksum=1\necho name=unverified threads=1 time_s=0.01 verified=no\nexit 1\n")
    drift = build / "workloads" / "drift"
    # Verifies, but its checksum depends on the thread count: a wrong result under sharing.
    drift.write_text("#!/bin/sh\necho checksum=${OMP_NUM_THREADS:-all}\n"
                     "echo name=drift threads=1 time_s=0.01 verified=yes\n")
    bad.chmod(0o755)
    drift.chmod(0o755)
    return build


def test_failures_are_recorded_and_shown_not_averaged(tmp_path: Path) -> None:
    env = dict(os.environ, SCAF_BUILD=str(fake_build(tmp_path)))
    out = tmp_path / "b"
    res = bench("pairs", "--workloads", "ep,unverified,drift", "--configs", "unmodified,partition", "--candidate", "partition",
                "--size", "S", "--stagger", "0", "--out", str(out), env=env)
    assert res.returncode == 1, res.stdout + res.stderr
    assert "verification failed" in res.stdout
    assert "differs from the 1-thread run" in res.stdout
    rows = list(csv.DictReader((out / "pairs.csv").open()))
    for r in rows:
        if {r["first"], r["second"]} & {"unverified", "drift"}:
            assert r["sum_speedup"] == "" and int(r["failed_runs"]) == 1 and int(r["ok_runs"]) == 0
        else:
            assert float(r["sum_speedup"]) > 0
    report = (out / "report.md").read_text()
    assert "## Failures" in report and "unverified" in report
    summary = {(r["baseline"], r["class"]): r for r in csv.DictReader((out / "summary.csv").open())}
    assert summary[("unmodified", "all")]["pairs"] == "1"  # only ep+ep counts


def test_solo_curves(tmp_path: Path) -> None:
    out = tmp_path / "s"
    res = bench("solo", "--workloads", "ep", "--threads", "1,2", "--size", "S", "--out", str(out))
    assert res.returncode == 0, res.stderr
    rows = list(csv.DictReader((out / "solo.csv").open()))
    assert [(r["workload"], r["threads"]) for r in rows] == [("ep", "1"), ("ep", "2")]
    assert float(rows[0]["speedup"]) == 1.0 and float(rows[1]["speedup"]) > 0
    assert_png(out / "solo_speedup.png")


def test_overhead_alternates_variants(tmp_path: Path) -> None:
    out = tmp_path / "o"
    res = bench("overhead", "--workload", "regions", "--rounds", "2", "--size", "S", "--feedback",
                "--out", str(out))
    assert res.returncode == 0, res.stdout + res.stderr
    runs = json.loads((out / "results.json").read_text())["runs"]
    order = [(r["round"], r["variant"]) for r in runs]
    variants = ["plain", "inert", "scaf", "scaf-noestimate", "scaf-eager"]
    assert order == [(rnd, v) for rnd in range(2) for v in variants]
    for r in runs:
        p = r["programs"][0]
        assert p["error"] is None, p
        assert ("LD_PRELOAD" in p["settings"]) == (r["variant"] != "plain")
        if r["variant"].startswith("scaf"):
            assert p["scaf_client"]
    rows = {r["variant"]: r for r in csv.DictReader((out / "overhead.csv").open())}
    assert set(rows) == set(variants) and float(rows["plain"]["median_ratio"]) == 1.0


def test_bad_input(tmp_path: Path) -> None:
    res = bench("pairs", "--configs", "unmodified,bogus", "--size", "S", "--out", str(tmp_path / "x"))
    assert res.returncode == 2 and "unknown configuration bogus" in res.stderr
    res = bench("pairs", "--workloads", "ep,nosuch", "--size", "S", "--out", str(tmp_path / "x"))
    assert res.returncode == 2 and "nosuch" in res.stderr
    res = bench("pairs", "--workloads", "ep", "--cpus", "0", "--out", str(tmp_path / "x"))
    assert res.returncode == 2 and "--cpus" in res.stderr
    res = bench("pairs", "--workloads", "ep", "--taskset", "0-", "--out", str(tmp_path / "x"))
    assert res.returncode == 2 and "--taskset" in res.stderr
    res = bench("solo", "--workloads", "ep", "--threads", "1,x", "--out", str(tmp_path / "x"))
    assert res.returncode == 2 and "--threads" in res.stderr
    res = bench("report", str(tmp_path / "missing"))
    assert res.returncode == 2 and "does not exist" in res.stderr
    junk = tmp_path / "junk"
    junk.mkdir()
    (junk / "results.json").write_text("{not json")
    res = bench("report", str(junk))
    assert res.returncode == 2 and "cannot read" in res.stderr
    assert (junk / "results.json").read_text() == "{not json"  # loses nothing


def test_resume_refuses_a_different_size(tmp_path: Path) -> None:
    out = tmp_path / "s"
    res = bench("solo", "--workloads", "ep", "--threads", "1", "--size", "S", "--out", str(out))
    assert res.returncode == 0, res.stderr
    before = (out / "results.json").read_text()
    res = bench("solo", "--workloads", "ep", "--threads", "1", "--size", "W", "--out", str(out))
    assert res.returncode == 2 and "size=S" in res.stderr
    assert (out / "results.json").read_text() == before


def test_help() -> None:
    for args in ((), ("solo",), ("pairs",), ("report",), ("overhead",)):
        res = bench(*args, "--help")
        assert res.returncode == 0 and "examples:" in res.stdout, args
    res = bench("pairs", "--help")
    for c in ("unmodified", "omp-dynamic", "static", "partition", "share2", "equipartition", "speedup"):
        assert c in res.stdout


def test_programs_do_not_share_a_working_directory(tmp_path: Path) -> None:
    # chatty writes chatty.out in its working directory and checks it: two copies in one
    # folder would fail verification.
    out = tmp_path / "c"
    res = bench("pairs", "--workloads", "chatty", "--configs", "unmodified", "--size", "S",
                "--stagger", "0", "--out", str(out))
    assert res.returncode == 0, res.stdout + res.stderr
    runs = json.loads((out / "results.json").read_text())["runs"]
    assert [r["kind"] for r in runs] == ["solo", "pair"]
    assert all(p["verified"] == "yes" for r in runs for p in r["programs"])


def test_a_daemon_that_cannot_start_is_a_recorded_failure(tmp_path: Path) -> None:
    out = tmp_path / "d"
    res = bench("pairs", "--workloads", "ep", "--configs", "unmodified,equipartition", "--size", "S",
                "--stagger", "0", "--daemon-arg=--no-such-option", "--out", str(out))
    assert res.returncode == 1, res.stdout + res.stderr
    runs = {r.get("config"): r for r in json.loads((out / "results.json").read_text())["runs"]}
    assert runs["unmodified"]["error"] is None
    assert "scafd exited" in runs["equipartition"]["error"]
    assert runs["equipartition"]["programs"] == []
    assert "scafd exited" in res.stdout and "FAILED" in res.stdout


def test_consumption_reports_cpu_seconds_saved(tmp_path: Path) -> None:
    """The resources table: CPU-seconds per configuration, what consumption saves against
    equipartition, and energy (or why there is none)."""
    out = tmp_path / "b"
    r = bench("pairs", "--workloads", "ep", "--configs", "equipartition,consumption", "--size", "S",
              "--stagger", "0", "--out", str(out))
    assert r.returncode == 0, r.stdout + r.stderr
    data = json.loads((out / "results.json").read_text())
    runs = [x for x in data["runs"] if x["kind"] == "pair"]
    assert {x["config"] for x in runs} == {"equipartition", "consumption"}
    for x in runs:
        assert all(p["cpu_s"] is not None and p["cpu_s"] > 0 for p in x["programs"]), x
        assert x["daemon"]["argv"][x["daemon"]["argv"].index("--policy") + 1] == x["config"]
    rows = {row["config"]: row for row in csv.DictReader((out / "resources.csv").open())}
    assert set(rows) == {"equipartition", "consumption"}
    assert rows["equipartition"]["saved_s_vs_equipartition"] == ""
    assert rows["consumption"]["saved_s_vs_equipartition"] != ""
    assert "resources: CPU-seconds" in r.stdout and "saved vs equipartition" in r.stdout
    has_energy = any(x.get("energy_j") is not None for x in runs)
    assert ("energy: not readable here (no RAPL)" in r.stdout) == (not has_energy)


def test_rapl_reading_from_a_powercap_tree(tmp_path: Path) -> None:
    """This machine has no RAPL; the reader is checked on a tree laid out as the kernel lays it out:
    packages summed, their subzones not counted again, a wrapped counter unwrapped, unreadable = None."""
    from scaf.lib.bench import energy

    def zone(name: str, uj: int, rng: int = 1000) -> None:
        (tmp_path / name).mkdir(exist_ok=True)
        (tmp_path / name / "energy_uj").write_text(f"{uj}\n")
        (tmp_path / name / "max_energy_range_uj").write_text(f"{rng}\n")

    assert energy.read_uj(tmp_path) is None
    zone("intel-rapl:0", 100)
    zone("intel-rapl:1", 900)
    zone("intel-rapl:0:0", 50)  # core: part of package 0
    before = energy.read_uj(tmp_path)
    assert before is not None and set(before) == {"intel-rapl:0", "intel-rapl:1"}
    zone("intel-rapl:0", 400)
    zone("intel-rapl:1", 100)  # wrapped at 1000: 200 used
    assert energy.joules_between(before, energy.read_uj(tmp_path)) == pytest.approx(500e-6)
    assert energy.joules_between(None, before) is None
