"""scaf check's malleable, remembered, is the user's word as a `malleable` rule is (docs/memory.md, "scaf check's
malleable"): real daemons with a memory of their own, the real layer, and dtgroup, the workload with R's
data.table's shape, which the evidence rule keeps fixed although any team up to its count gives the same bits.

The daemon believes it has 2 contexts and dtgroup sees 4 (OMP_NUM_THREADS): a steered region runs at most 2
threads, a fixed one 4. SCAF_REPORT's team sizes cover every region of the run, so each test judges the whole
run, not a moment of it; the workload verifies its own result, and its checksum is compared with a plain run's.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import SCAF, Daemon, layer_env, parse_result
from scaf.lib import paths, progkey, proto
from support import wire
from test_layer import MAXSEC, QUIET, build_probe

BOUND = 4
TIMEOUT = 120
DTGROUP = str(paths.workload("dtgroup"))
ARGV = [DTGROUP, "--size", "S"]
REASON = "scaf check found it malleable (remembered)"
# What the rule says of dtgroup by evidence (docs/shapes.md): a suspicion, not a hazard seen.
SUSPICION = "numbers threads without omp_get_num_threads()"


def checksum(stdout: str) -> str:
    return next(ln for ln in stdout.splitlines() if ln.startswith("checksum="))


def clean(env: dict[str, str]) -> dict[str, str]:
    """The layer's settings of this shell dropped (no rules files, no user's word), the program's count BOUND."""
    for k in [k for k in env if k.startswith("SCAF_") and k not in ("SCAF_SOCKET", "SCAF_BUILD")]:
        del env[k]
    env["SCAF_RULES"] = ""
    env["OMP_NUM_THREADS"] = str(BOUND)
    return env


@pytest.fixture(scope="module")
def plain() -> str:
    """dtgroup's checksum without scaf, at its count."""
    env = clean({k: v for k, v in os.environ.items() if k != "LD_PRELOAD"})
    p = subprocess.run(ARGV, env=env, capture_output=True, text=True, timeout=TIMEOUT, check=False)
    assert p.returncode == 0 and parse_result(p.stdout)["verified"] == "yes", p.stdout + p.stderr
    return checksum(p.stdout)


@pytest.fixture
def two(scafd_factory: Callable[..., Daemon]) -> Daemon:
    return scafd_factory("--policy", "equipartition", "--cpus", "2", "--no-lookout")


def key() -> int:
    k = progkey.key_of(DTGROUP, ARGV).key
    assert k != 0
    return k


def remember(d: Daemon, verdict: int = proto.VERDICT_MALLEABLE) -> None:
    """What scaf check records (its REMEMBER), through scaf's own client."""
    r = proto.memory(d.socket, proto.MEMORY_REMEMBER, key(), verdict=verdict, name=b"dtgroup")
    assert r.status == proto.MEMORY_OK, r


def recalled(d: Daemon) -> tuple[int, int, int]:
    r = proto.memory(d.socket, proto.MEMORY_RECALL, key(), BOUND)
    return r.runs, r.verdict, r.source


def under_layer(d: Daemon, tmp_path: Path, extra: dict[str, str] | None = None,
                own_count: bool = False) -> tuple[str, dict]:
    """dtgroup under the layer against `d`, to its end (its departure learned); its checksum and report, with the
    count it read at start (`count`). `own_count`: no OMP_NUM_THREADS, the program's count is its CPUs."""
    report = tmp_path / "dtgroup.report"
    report.unlink(missing_ok=True)
    env = clean(layer_env(d.socket, QUIET))
    if own_count:
        del env["OMP_NUM_THREADS"]
    env.update({"SCAF_REPORT": str(report), **(extra or {})})
    p = subprocess.run(ARGV, env=env, capture_output=True, text=True, timeout=TIMEOUT, check=False)
    assert p.returncode == 0 and parse_result(p.stdout)["verified"] == "yes", p.stdout + p.stderr
    lines = report.read_text().splitlines()
    assert len(lines) == 1, lines
    d.wait_for(lambda st: not st["clients"], what="dtgroup's departure")
    count = next(int(f.split("=")[1]) for f in p.stdout.split() if f.startswith("count="))
    return checksum(p.stdout), json.loads(lines[0]) | {"count": count}


def steered_by_check(rep: dict) -> None:
    """Over the whole run: malleable by scaf check's word, and no region above the daemon's 2 of the 4 it asked."""
    assert (rep["verdict"], rep["source"], rep["reason"]) == ("malleable", "check", REASON), rep
    assert rep["regions"] > 0 and rep["teams"] and max(rep["teams"]) <= 2 < BOUND, rep


def test_scaf_check_finds_dtgroup_malleable_and_later_runs_are_steered(
        two: Daemon, plain: str, tmp_path: Path) -> None:
    """End to end: scaf check records its malleable with the daemon; the next run of dtgroup is steered to the
    daemon's share from its first region, gives the plain run's bits, and leaves the record as it was."""
    env = clean({k: v for k, v in os.environ.items() if k != "LD_PRELOAD"})
    env["SCAF_SOCKET"] = two.socket
    r = subprocess.run([str(SCAF), "check", "--seeds", "2", "--threads", str(BOUND), "--ignore", "^name=", "--",
                        *ARGV], env=env, capture_output=True, text=True, timeout=300, check=False)
    assert r.returncode == 0, r.stdout + r.stderr
    name = progkey.key_of(DTGROUP, ARGV).name
    assert f"remembered: {name} malleable (its later runs are steered as a `malleable` rule" in r.stdout, r.stdout
    assert recalled(two) == (1, proto.VERDICT_MALLEABLE, proto.SOURCE_CHECK)
    got, rep = under_layer(two, tmp_path)
    steered_by_check(rep)
    assert got == plain
    # The run steered on check's word is not evidence: the record stays scaf check's.
    assert recalled(two) == (2, proto.VERDICT_MALLEABLE, proto.SOURCE_CHECK)


def test_the_report_names_the_program_as_the_memory_does(two: Daemon, tmp_path: Path) -> None:
    """SCAF_REPORT carries the program's key and name, with SCAF_MEMORY=0 too (scaf check's runs keep no memory)."""
    want = progkey.key_of(DTGROUP, ARGV)
    for extra in ({}, {"SCAF_MEMORY": "0"}):
        _, rep = under_layer(two, tmp_path, extra)
        assert (rep["key"], rep["program"]) == (f"{want.key:016x}", want.name), (extra, rep)


def test_check_behind_a_launcher_records_the_program_that_ran_the_regions(two: Daemon) -> None:
    """`scaf check -- sh -c 'exec dtgroup ...'`: the regions ran in dtgroup, and its record is dtgroup's (the key the
    layer reported), found by dtgroup's next run however it is started."""
    env = clean({k: v for k, v in os.environ.items() if k != "LD_PRELOAD"})
    env["SCAF_SOCKET"] = two.socket
    r = subprocess.run([str(SCAF), "check", "--seeds", "2", "--threads", str(BOUND), "--ignore", "^name=", "--",
                        "sh", "-c", 'exec "$0" "$@"', *ARGV], env=env, capture_output=True, text=True, timeout=300,
                       check=False)
    assert r.returncode == 0, r.stdout + r.stderr
    name = progkey.key_of(DTGROUP, ARGV).name
    assert f"remembered: {name} malleable" in r.stdout and "scaf forget forgets it" in r.stdout, r.stdout
    assert recalled(two) == (1, proto.VERDICT_MALLEABLE, proto.SOURCE_CHECK)


def test_without_the_record_dtgroup_stays_fixed(two: Daemon, plain: str, tmp_path: Path) -> None:
    """The negative: nothing remembered (or a record of another kind), and the rule's suspicion keeps the team."""
    got, rep = under_layer(two, tmp_path)
    assert (rep["verdict"], rep["source"]) == ("fixed", "evidence") and SUSPICION in rep["reason"], rep
    assert rep["teams"] == [BOUND] and got == plain, rep
    # Its run is remembered as evidence's fixed, which is not check's word: the next run starts with its share.
    assert recalled(two)[1:] == (proto.VERDICT_FIXED, proto.SOURCE_EVIDENCE)


@pytest.mark.parametrize(("case", "extra", "source", "reason"), [
    # SCAF_MEMORY=0 (scaf run --no-memory): nothing recalled, judged by evidence as before.
    ("SCAF_MEMORY=0", {"SCAF_MEMORY": "0"}, "evidence", SUSPICION),
    # The user's own word beats check's: it keeps its team (the count OMP_NUM_THREADS gives it).
    ("SCAF_MALLEABLE=no", {"SCAF_MALLEABLE": "no"}, "user", "SCAF_MALLEABLE=no (scaf run --fixed)"),
    ("a fixed rule", {"SCAF_RULES": "RULES"}, "rules", ": fixed dtgroup"),
])
def test_the_users_word_and_no_memory_win_over_checks_record(
        case: str, extra: dict[str, str], source: str, reason: str, two: Daemon, plain: str, tmp_path: Path) -> None:
    remember(two)
    if extra.get("SCAF_RULES") == "RULES":
        rules = tmp_path / "rules"
        rules.write_text("fixed dtgroup\n")
        extra = {"SCAF_RULES": str(rules)}
    got, rep = under_layer(two, tmp_path, extra)
    assert (rep["verdict"], rep["source"]) == ("fixed", source) and reason in rep["reason"], (case, rep)
    # Fixed: its count for the whole run (OMP_NUM_THREADS is the user's, so nothing starts it with a share).
    assert rep["teams"] == [BOUND] and got == plain, (case, rep)
    # Neither the user's word nor a run kept out of the memory changes what scaf check found.
    assert recalled(two)[1:] == (proto.VERDICT_MALLEABLE, proto.SOURCE_CHECK), case


def test_checks_fixed_is_not_steered(two: Daemon, plain: str, tmp_path: Path) -> None:
    """Only check's malleable is taken as the user's word. Its fixed starts a program with its share (not here:
    OMP_NUM_THREADS is the user's) and the evidence decides the rest, as before (docs/memory.md, "The start
    team"): dtgroup is fixed by its suspicion, at its count, and the record stays check's."""
    remember(two, proto.VERDICT_FIXED)
    got, rep = under_layer(two, tmp_path)
    assert (rep["verdict"], rep["source"]) == ("fixed", "evidence") and SUSPICION in rep["reason"], rep
    assert rep["teams"] == [BOUND] and got == plain, rep
    assert recalled(two) == (2, proto.VERDICT_FIXED, proto.SOURCE_CHECK)


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="a share below the program's count needs 2 CPUs")
@pytest.mark.parametrize("verdict", [proto.VERDICT_MALLEABLE, proto.VERDICT_FIXED])
def test_checks_malleable_starts_with_the_whole_machine(
        verdict: int, scafd_factory: Callable[..., Daemon], plain: str, tmp_path: Path) -> None:
    """Its own count (the CPUs, no OMP_NUM_THREADS) and a daemon of 1 context: the count dtgroup reads at start
    (data.table's initDTthreads) is the whole machine's when check found it malleable, and it is steered to the
    daemon's 1 from its first region; check's fixed starts it with its share, 1, which it keeps."""
    one = scafd_factory("--policy", "equipartition", "--cpus", "1", "--no-lookout")
    cpus = len(os.sched_getaffinity(0))
    remember(one, verdict)
    got, rep = under_layer(one, tmp_path, own_count=True)
    assert rep["teams"] == [1], rep
    if verdict == proto.VERDICT_MALLEABLE:
        steered_by_check(rep)
        assert rep["count"] == cpus, rep
    else:
        assert (rep["verdict"], rep["source"]) == ("fixed", "check"), rep
        assert rep["reason"] == "started with 1 of 1 contexts: remembered fixed by scaf check; cannot grow", rep
        assert rep["count"] == 1, rep
    # The checksum is the same at any team up to the count; the plain run's was made at BOUND.
    assert got == plain


@pytest.fixture(scope="module")
def probe(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_probe(tmp_path_factory)


def test_status_says_why(two: Daemon, probe: Path, tmp_path: Path) -> None:
    """scaf status -v names scaf check's remembered word as the reason, while the program runs."""
    stop = tmp_path / "stop"
    argv = [str(probe), "follow", str(stop), MAXSEC]
    r = proto.memory(two.socket, proto.MEMORY_REMEMBER, progkey.key_of(str(probe), argv).key,
                     verdict=proto.VERDICT_MALLEABLE, name=b"omp_probe")
    assert r.status == proto.MEMORY_OK
    env = clean(layer_env(two.socket, QUIET))
    p = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        st = two.wait_for(lambda st: any(c["pid"] == p.pid and c["verdict_source"] == "check" for c in st["clients"]),
                          what="the probe's verdict")
        (c,) = st["clients"]
        assert (c["verdict"], c["reason"]) == ("malleable", REASON), c
        assert c["memory"] == {"runs": 1, "verdict": "malleable", "source": "check", "run_s": 0}, c
        assert c["started_with"] == 0, c  # malleable: it started with the whole machine
        s = subprocess.run([str(SCAF), "status", "-v", "--socket", two.socket], capture_output=True, text=True,
                           timeout=60, check=False)
        assert s.returncode == 0, s.stderr
        assert (f"malleable (by check): {REASON}; malleable, remembered by scaf check from 1 run"
                in " ".join(s.stdout.split())), s.stdout
    finally:
        stop.touch()
        _, err = p.communicate(timeout=TIMEOUT)
    assert p.returncode == 0, err


def test_a_raw_client_steered_on_checks_word_keeps_the_record(two: Daemon) -> None:
    """The daemon's side alone: a run whose page says malleable by check (what the layer writes when it recalled
    check's word) and a run that arrived before the record and left fixed by evidence leave check's record."""
    remember(two)
    for verdict, source in ((wire.VERDICT_MALLEABLE, wire.SOURCE_CHECK), (wire.VERDICT_FIXED, wire.SOURCE_EVIDENCE)):
        s, page, _ = wire.register(two.socket, BOUND, key=key())
        page.decide(verdict, source, b"x")
        s.close()
        two.wait_for(lambda st: not st["clients"], what="the departure")
    assert recalled(two) == (3, proto.VERDICT_MALLEABLE, proto.SOURCE_CHECK)
