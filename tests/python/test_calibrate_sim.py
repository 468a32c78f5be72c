"""tools/experiments/calibrate_sim.py on the shipped 16-CPU raw logs (commit 3a4be15's docs/results): the first
loan's pairs, measured on the machine the solo curves came from, decide the exit status; the third loan's are
printed beside them, marked as another machine's; a prediction where both programs' solo curves were measured
and a plain word where they were not; a clear refusal of a commit it cannot read."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys

import pytest
from conftest import ROOT

SCRIPT = ROOT / "tools" / "experiments" / "calibrate_sim.py"
COMMIT = "3a4be15"
FIRST = "first (2026-11-26)"


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=600,
                          check=False)


def have_commit() -> bool:
    r = subprocess.run(["git", "-C", str(ROOT), "cat-file", "-e", f"{COMMIT}^{{commit}}"], capture_output=True,
                       check=False)
    return r.returncode == 0


def load_script():
    spec = importlib.util.spec_from_file_location("calibrate_sim", SCRIPT)
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # dataclasses look their module up there
    spec.loader.exec_module(mod)
    return mod


needs_commit = pytest.mark.skipif(not have_commit(), reason=f"this checkout lacks commit {COMMIT} (a shallow clone)")


@pytest.fixture(scope="module")
def report() -> tuple[int, dict]:
    r = run("--json")
    assert r.returncode in (0, 1), r.stderr
    return r.returncode, json.loads(r.stdout)


@needs_commit
def test_the_first_loans_pairs_are_read_and_predicted_as_makespans(report: tuple[int, dict]) -> None:
    _, out = report
    first = {(row["pair"], row["config"]): row for row in out["rows"] if row["loan"] == FIRST}
    # device-16core.md, "Probe 1" and "Probe 2": the figures as probe-scaling.txt and probe-pairs.txt give them.
    assert {k: row["measured"] for k, row in first.items()} == {
        ("xgbhist+xgbhist", "static"): 2.87, ("xgbhist+xgbhist", "cold"): 5.22, ("xgbhist+xgbhist", "warm"): 3.05,
        ("dtgroup+dtgroup", "static"): 4.83, ("dtgroup+dtgroup", "plain"): 13.76,
        ("dtgroup+dtgroup", "dynamic"): 5.98, ("dtgroup+dtgroup", "checked"): 5.97}
    for row in first.values():
        assert row["same_machine"] and row["figure"] == "makespan", row
        assert row["source"].startswith(f"{COMMIT}:docs/results/device-16core/probe-")
    assert {k: row["sim_config"] for k, row in first.items() if row["judged"]} == {
        ("xgbhist+xgbhist", "static"): "static", ("xgbhist+xgbhist", "cold"): "speedup",
        ("xgbhist+xgbhist", "warm"): "speedup", ("dtgroup+dtgroup", "static"): "static",
        ("dtgroup+dtgroup", "plain"): "unmodified"}
    # Two fixed teams of 8 on 16 contexts interfere in no way the model knows: the makespan is the solo 8-thread
    # time (xgbhist 2.87 s, dtgroup 4.52 s on that machine).
    assert first["xgbhist+xgbhist", "static"]["predicted"] == pytest.approx(2.87, rel=0.01)
    assert first["dtgroup+dtgroup", "static"]["predicted"] == pytest.approx(4.52, rel=0.01)
    # Plain: 32 threads time-sliced on 16 contexts, t8 (1 + k) with the default k = 0.58.
    plain = first["dtgroup+dtgroup", "plain"]
    assert plain["predicted"] == pytest.approx(4.52 * 1.58, rel=0.01)
    assert "k = 2.04" in plain["note"]
    for config in ("dynamic", "checked"):
        row = first["dtgroup+dtgroup", config]
        assert row["predicted"] is None and row["error"] is None and not row["judged"] and row["note"], row
    assert "scaf check" in first["dtgroup+dtgroup", "checked"]["note"]
    # The lines that are no pair of x1 programs the model can run are listed, not dropped.
    skipped = {s["line"]: s for s in out["not_compared"]}
    assert skipped["xgbhist s3 static"]["seconds"] == [7.18, 7.78]
    assert skipped["xgbhist s3 warm"]["seconds"] == [11.34, 12.87]
    assert "not comparable" in skipped["xgbhist s3 warm"]["why"]


@needs_commit
def test_the_third_loans_pairs_are_summed_and_marked_as_another_machine(report: tuple[int, dict]) -> None:
    _, out = report
    third = {(row["pair"], row["config"]): row for row in out["rows"] if row["loan"] != FIRST}
    pairs = {"xgboost+xgboost", "crit+crit", "dtgroup+dtgroup", "xgbhist+xgbhist", "crit+ep"}
    assert {p for p, _ in third} == pairs
    assert {c for _, c in third} == {"static", "cold", "warm"}
    # The third loan's figures, as docs/results.md quotes them, each from the run that gave it.
    assert third["xgbhist+xgbhist", "static"]["measured"] == 5.44
    assert third["dtgroup+dtgroup", "warm"]["measured"] == 9.88
    assert third["dtgroup+dtgroup", "static"]["loan"] == "third (2026-11-27), run 1"
    assert third["crit+crit", "cold"]["measured"] == 7.10
    assert third["crit+crit", "cold"]["loan"] == "third (2026-11-27), run 4"
    for (pair, _), row in third.items():
        assert row["figure"] == "sum" and not row["same_machine"] and not row["judged"], row
        if pair.split("+")[0] in ("xgbhist", "dtgroup"):
            assert row["solo"] == "from another loan's machine"
            assert row["predicted"] is not None and row["predicted"] > 0, row
            assert row["error"] == pytest.approx(row["predicted"] / row["measured"] - 1.0)
        else:
            assert row["predicted"] is None and row["error"] is None
            assert "was measured" in row["note"] and pair.split("+")[0] in row["note"]
    assert third["dtgroup+dtgroup", "static"]["predicted"] == pytest.approx(2 * 4.52, rel=0.01)
    # Cold, both start with their own 16 and are fixed: they take turns, so each takes about twice its solo time.
    assert third["xgbhist+xgbhist", "cold"]["predicted"] > 1.5 * third["xgbhist+xgbhist", "static"]["predicted"]


@needs_commit
def test_the_exit_status_is_the_same_machine_rows(report: tuple[int, dict]) -> None:
    status, out = report
    judged = [row for row in out["rows"] if row["judged"]]
    assert judged and all(row["same_machine"] for row in judged)
    assert status == out["status"] == (0 if all(abs(row["error"]) <= 0.10 for row in judged) else 1)


def test_the_verdict_ignores_other_machines_and_fails_an_unchecked_row() -> None:
    m = load_script()

    def row(solo: str, measured: float | None, predicted: float | None, sim: str | None = "static"):
        return m.Row("x", solo, "a+a", "static", "makespan", measured, predicted, sim_config=sim)

    near = row(m.SAME, 10.0, 10.5)
    assert m.verdict([near, row(m.OTHER, 10.0, 5.0)], 0.10) == 0
    assert m.verdict([near, row(m.SAME, 10.0, 5.0)], 0.10) == 1
    assert m.verdict([near, row(m.SAME, None, 5.0)], 0.10) == 1  # its figure was not read: nothing was checked
    assert m.verdict([near, row(m.SAME, 5.0, None, sim=None)], 0.10) == 0  # no configuration: said, not judged
    assert m.verdict([row(m.OTHER, 10.0, 10.0)], 0.10) == 1  # no same-machine row at all


@needs_commit
def test_the_table_prints_and_a_bad_commit_is_refused() -> None:
    r = run()
    assert r.returncode in (0, 1), r.stderr
    assert r.stdout.startswith("| loan | solo curve | pair | config | figure | measured (s) | predicted (s) | error |")
    assert ("| first (2026-11-26) | from the same machine | dtgroup+dtgroup | plain | makespan | 13.76 | 7.14 | "
            "-48.1% |") in r.stdout
    assert ("| third (2026-11-27), run 1 | from another loan's machine | xgbhist+xgbhist | static | sum | 5.44 | "
            "5.74 | +5.5% |") in r.stdout
    assert "Same-machine rows (they decide the exit status): " in r.stdout
    assert "- xgbhist s3 warm: 11.34, 12.87 (" in r.stdout
    r = run("--commit", "0000000")
    assert r.returncode == 2 and r.stdout == "" and "0000000" in r.stderr


def test_a_new_loans_curves_and_pairs_are_judged_from_a_folder(tmp_path) -> None:  # type: ignore[no-untyped-def]
    # What device_session.sh with CURVES leaves: device_curves.sh's scaling.txt, device_pairs.sh's table and its
    # verdicts (the formats of the loans' raw logs). crit is malleable there, ep has no curve.
    (tmp_path / "scaling.txt").write_text("".join(
        f"{p} alone scale1 T={t}: {s}\n" for p, curve in {"crit": {1: 16.0, 4: 4.4, 8: 2.5, 16: 2.0},
                                                          "xgbhist": {1: 5.24, 4: 3.46, 8: 2.87, 16: 2.49}}.items()
        for t, s in curve.items()))
    (tmp_path / "pairs.txt").write_text(
        "machine: 16 CPUs,  Some CPU\nscaf rows start programs through: scaf run\n"
        "pair                   plain   dynamic    static      cold      warm     cwarm     swarm   checked\n"
        "crit+crit              9.10         -      5.20      4.30      4.20         -         -         -\n"
        "crit+ep                   -         -      4.00      3.10      3.00         -         -         -\n"
        "xgbhist+xgbhist           -         -     5.74*     10.17      5.90         -         -         -\n"
        "summed wall seconds of the two programs (lower is better)\n")
    (tmp_path / "verdicts.txt").write_text(
        "      2 /tmp/scafb/workloads/crit malleable: no team-size call outside a region yet teams [1,7,8]\n"
        "      2 /tmp/scafb/workloads/xgbhist fixed: started with 8 of 16 contexts: remembered fixed teams [8]\n")
    r = run("--from", str(tmp_path), "--json")
    assert r.returncode in (0, 1), r.stderr
    rows = {(row["pair"], row["config"]): row for row in json.loads(r.stdout)["rows"]}
    # Only the columns the session ran (and ran without a differing answer, *); every one of one machine.
    assert set(rows) == {("crit+crit", c) for c in ("plain", "static", "cold", "warm")} | {
        ("crit+ep", c) for c in ("static", "cold", "warm")} | {("xgbhist+xgbhist", c) for c in ("cold", "warm")}
    assert rows["crit+crit", "plain"]["sim_config"] == "unmodified" and rows["crit+crit", "plain"]["measured"] == 9.1
    for (pair, _), row in rows.items():
        assert row["figure"] == "sum" and row["loan"] == f"{tmp_path.name} (--from)"
        if pair == "crit+ep":
            assert not row["judged"] and row["predicted"] is None and "ep" in row["note"]
        else:
            assert row["judged"] and row["same_machine"] and row["predicted"] > 0
    # crit is malleable by its verdict: the static split is two teams of 8 (2 x 2.5 s), and scaf, free to resize
    # them, is not slower than that.
    assert rows["crit+crit", "static"]["predicted"] == pytest.approx(5.0, rel=0.01)
    assert rows["crit+crit", "cold"]["predicted"] <= rows["crit+crit", "static"]["predicted"] * 1.02
    # xgbhist is fixed by its verdict: cold, both keep their 16 and take turns (about twice the solo 16-thread time).
    assert rows["xgbhist+xgbhist", "cold"]["predicted"] > 2 * 2.49 * 0.9
    r = run("--from", str(tmp_path / "missing"))
    assert r.returncode == 2 and "scaling.txt" in r.stderr


def test_a_session_on_another_machine_size_is_judged_at_its_own_size(tmp_path) -> None:  # type: ignore[no-untyped-def]
    # device_pairs.sh names the machine in its first line; a 2-CPU session's curve stops at 2 threads (a run
    # past the machine is no point of it).
    (tmp_path / "scaling.txt").write_text("".join(f"dtgroup alone scale1 T={t}: {s}\n"
                                                  for t, s in {1: 6.0, 2: 4.0, 4: 6.0}.items()))
    (tmp_path / "pairs.txt").write_text(
        "machine: 2 CPUs,  Some CPU\n"
        "pair                   plain   dynamic    static      cold      warm\n"
        "dtgroup+dtgroup       18.00         -     12.00         -         -\n")
    (tmp_path / "verdicts.txt").write_text(
        "      2 /b/workloads/dtgroup fixed: started with 1 of 2 contexts: remembered fixed teams [1]\n")
    r = run("--from", str(tmp_path), "--json")
    assert r.returncode in (0, 1), r.stderr
    rows = {row["config"]: row for row in json.loads(r.stdout)["rows"]}
    # Static: one thread each, t1 each; plain: two threads each on one context, t1 (1 + k) with the default k.
    assert rows["static"]["predicted"] == pytest.approx(2 * 6.0, rel=0.01)
    assert rows["plain"]["predicted"] == pytest.approx(2 * 6.0 * 1.58, rel=0.02)
    # Each copy took 9 s where one thread alone took 6: the row alone would need k = 0.5.
    assert "would need k = 0.50 (t1 (1 + k) = 9.00 s)" in rows["plain"]["note"]


def test_each_row_is_also_judged_over_its_pairs_static_row() -> None:
    m = load_script()

    def row(config: str, measured: float | None, predicted: float | None, pair: str = "a+a"):
        return m.Row("x", m.SAME, pair, config, "sum", measured, predicted, sim_config=config)

    # Both programs ran 20% slower side by side than the model says, in every configuration: over static, the
    # warm row is right, and the plain row is as wrong as the model's k makes it.
    table = [row("static", 12.0, 10.0), row("warm", 12.0, 10.0), row("plain", 30.0, 15.0),
             row("cold", None, 10.0), row("warm", 5.0, 5.0, pair="b+b")]
    m.over_static(table)
    static, warm, plain, cold, other = table
    assert static.error_over_static is None  # itself
    assert warm.error == pytest.approx(-1 / 6) and warm.error_over_static == pytest.approx(0.0)
    assert plain.error_over_static == pytest.approx((15 / 10) / (30 / 12) - 1)
    assert cold.error_over_static is None and other.error_over_static is None  # no figure; no static row
