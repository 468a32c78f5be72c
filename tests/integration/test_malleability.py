"""The malleability verdict on the hazard workloads, end to end: real daemon, real layer.

Each hazard workload verifies its own result, so a wrong verdict shows as a failed
verification, not only as a wrong label. The daemon believes it has 2 contexts and the
programs see 4 (OMP_NUM_THREADS), so a steered region runs 2 threads and a fixed or watched
one 4: the team sizes in SCAF_REPORT tell which path each region took, without timing.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import Daemon, Hold, layer_env, parse_result
from scaf.lib import alloclog, paths

BOUND = 4
TIMEOUT = 120
# No baseline while the program is alone: these tests judge the teams the verdict allows, and an in-place
# baseline runs one instance of a steered site on one thread (test_estimate.py tests those).
ALONE = {"SCAF_ALONE_SHARE": "0"}


def plain_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD" and not k.startswith("SCAF_")}
    env.update(extra or {})
    return env


def run(name: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(paths.workload(name)), "--size", "S"], env=env, capture_output=True, text=True, timeout=TIMEOUT,
        check=False,
    )


def checksum(stdout: str) -> str:
    return next(ln for ln in stdout.splitlines() if ln.startswith("checksum="))


# Their verdict waits on a thread-local check that runs beside the program: they run (--until, the same
# checksum) until the daemon shows the verdict reached and, when it is malleable, a region steered to the
# daemon's 2, so that no machine is fast enough to end them first.
TLS_CHECKED = {"tpcarry", "tpscratch"}


def run_until_decided(name: str, d: Daemon, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    hold = Hold()
    p = subprocess.Popen([str(paths.workload(name)), "--size", "S", *hold.args()], env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def decided(st: dict) -> bool:
        c = next((c for c in st["clients"] if c["pid"] == p.pid), None)
        return p.poll() is not None or (c is not None and (
            c["verdict"] == "fixed" or (c["verdict"] == "malleable" and c["last_team"] == 2)))

    try:
        d.wait_for(decided, timeout=TIMEOUT, what=f"{name}'s verdict reached")
    finally:
        hold.release()
        out, err = p.communicate(timeout=TIMEOUT)
    return subprocess.CompletedProcess(p.args, p.returncode, out, err)


def under_scaf(name: str, d: Daemon, tmp_path: Path, extra: dict[str, str] | None = None) -> tuple[dict, dict]:
    """Runs `name` under the layer; returns (the workload's result line, the layer's report)."""
    report = tmp_path / f"{name}.report"
    report.unlink(missing_ok=True)
    env = layer_env(d.socket, {**ALONE, "OMP_NUM_THREADS": str(BOUND), "SCAF_REPORT": str(report), **(extra or {})})
    # The user's word and scaf check's seeded teams decide at once: nothing to wait for.
    forced = bool({"SCAF_CHECK_SEED", "SCAF_MALLEABLE"} & set(extra or {}))
    p = run_until_decided(name, d, env) if name in TLS_CHECKED and not forced else run(name, env)
    assert p.returncode == 0 or "verified=no" in p.stdout, p.stderr
    lines = report.read_text().splitlines()
    assert len(lines) == 1, lines
    return parse_result(p.stdout) | {"checksum": checksum(p.stdout)}, json.loads(lines[0])


@pytest.fixture
def two(scafd_factory: Callable[..., Daemon]) -> Daemon:
    return scafd_factory("--policy", "equipartition", "--cpus", "2", "--no-lookout")


@pytest.mark.parametrize(
    "name,verdict,reason",
    [
        ("banner", "malleable", "omp_get_max_threads() outside regions from banner"),
        ("split", "fixed", "numbers threads without omp_get_num_threads()"),
        ("partials", "fixed", "numbers threads without omp_get_num_threads()"),
        ("fixed", "fixed", f"omp_set_num_threads({BOUND}) outside regions from fixed"),
        ("tpcarry", "fixed", "depends on thread-local (threadprivate) data left by earlier regions"),
        # data.table's shape: thread numbers only inside a dynamic loop's iterations, over per-thread
        # buffers sized by the count read at start. Right for any team up to it (the seeded teams
        # below), but its calls are partials' calls: fixed, a loss of speed (docs/shapes.md).
        ("dtgroup", "fixed", "numbers threads without omp_get_num_threads()"),
        # XGBoost's: blocks cut by that count and given out by thread number (ParallelFor2d).
        ("xgbhist", "fixed", "numbers threads without omp_get_num_threads()"),
    ],
)
def test_hazard_workloads_judged_by_evidence(two: Daemon, tmp_path: Path, name: str, verdict: str, reason: str) -> None:
    plain = run(name, plain_env({"OMP_NUM_THREADS": str(BOUND)}))
    assert parse_result(plain.stdout)["verified"] == "yes", plain.stdout
    result, rep = under_scaf(name, two, tmp_path)
    assert result["verified"] == "yes", result
    assert result["checksum"] == checksum(plain.stdout)
    assert rep["verdict"] == verdict and rep["source"] == "evidence", rep
    assert reason in rep["reason"], rep
    if verdict == "malleable":
        # Steered: the daemon's 2, after at most a first full-team look at each region.
        assert 2 in rep["teams"] and set(rep["teams"]) <= {2, BOUND}, rep
    elif name == "tpcarry":
        # Its first region is checked and steered; the second reads what the first left, so it runs
        # at the first's team until its own check fixes the team there: right at every step.
        assert set(rep["teams"]) <= {2, BOUND}, rep
    else:
        # Never changed: every region at the team the program saw.
        assert rep["teams"] == [BOUND], rep


def test_threadprivate_scratch_is_checked_and_steered(two: Daemon, tmp_path: Path) -> None:
    """tpscratch numbers its threads in code with threadprivate data, which it writes before
    reading in every region: each site is checked once (a pair of serial runs, one with the data
    scrambled) and then steered. It runs until the checks have ended and a region was steered."""
    wl = str(paths.workload("tpscratch"))
    plain = subprocess.run([wl, "--size", "S"], env=plain_env({"OMP_NUM_THREADS": str(BOUND)}),
                           capture_output=True, text=True, timeout=TIMEOUT, check=False)
    report = tmp_path / "tpscratch.report"
    env = layer_env(two.socket, {**ALONE, "OMP_NUM_THREADS": str(BOUND), "SCAF_REPORT": str(report)})
    p = run_until_decided("tpscratch", two, env)
    rep = json.loads(report.read_text().splitlines()[0])
    assert parse_result(p.stdout)["verified"] == "yes", p.stdout + p.stderr
    assert checksum(p.stdout) == checksum(plain.stdout)
    assert rep["verdict"] == "malleable" and rep["source"] == "evidence", rep
    assert 2 in rep["teams"] and set(rep["teams"]) <= {2, BOUND}, rep


def test_without_the_check_threadprivate_code_stays_fixed(two: Daemon, tmp_path: Path) -> None:
    """SCAF_TLS_CHECK=0 (or a check that cannot run): code with threadprivate data keeps its team."""
    result, rep = under_scaf("tpscratch", two, tmp_path, {"SCAF_TLS_CHECK": "0"})
    assert result["verified"] == "yes", result
    assert rep["verdict"] == "fixed" and "could not be checked" in rep["reason"], rep
    assert rep["teams"] == [BOUND], rep


def test_the_first_look_is_what_keeps_split_correct(two: Daemon, tmp_path: Path) -> None:
    """The same workload steered without the rule (SCAF_MALLEABLE=yes) gives a wrong result:
    the hazard is real, and the override reaches the layer."""
    result, rep = under_scaf("split", two, tmp_path, {"SCAF_MALLEABLE": "yes"})
    assert rep["verdict"] == "malleable" and rep["source"] == "user", rep
    assert rep["teams"] == [2], rep
    assert result["verified"] == "no", result


@pytest.mark.parametrize("name", ["split", "partials", "fixed", "tpcarry", "xgbhist"])
def test_seeded_teams_break_the_hazards(two: Daemon, tmp_path: Path, name: str) -> None:
    """scaf check's mode: a seeded team at every region. Each fixed-verdict workload fails."""
    result, rep = under_scaf(name, two, tmp_path, {"SCAF_CHECK_SEED": "3"})
    assert rep["source"] == "check" and len(rep["teams"]) > 1, rep
    assert set(rep["teams"]) <= set(range(1, BOUND + 1)), rep
    assert result["verified"] == "no", result


@pytest.mark.parametrize("name", ["banner", "tpscratch", "dtgroup"])
def test_seeded_teams_keep_malleable_hazards_correct(two: Daemon, tmp_path: Path, name: str) -> None:
    """banner queries a count before its regions, tpscratch numbers its threads over
    threadprivate scratch, dtgroup numbers them inside dynamic iterations over buffers sized by a
    count read at start: they only look like hazards, and stay right under any teams up to it."""
    plain = run(name, plain_env({"OMP_NUM_THREADS": str(BOUND)}))
    for seed in ("1", "2", "3"):
        result, rep = under_scaf(name, two, tmp_path / seed if (tmp_path / seed).mkdir() is None else tmp_path,
                                 {"SCAF_CHECK_SEED": seed})
        assert len(rep["teams"]) > 1, rep
        assert result["verified"] == "yes" and result["checksum"] == checksum(plain.stdout), (seed, result)


def test_seeds_are_reproducible(two: Daemon, tmp_path: Path) -> None:
    a = tmp_path / "a"
    b = tmp_path / "b"
    a.mkdir()
    b.mkdir()
    _, ra = under_scaf("split", two, a, {"SCAF_CHECK_SEED": "7"})
    _, rb = under_scaf("split", two, b, {"SCAF_CHECK_SEED": "7"})
    assert ra["teams"] == rb["teams"] and ra["regions"] == rb["regions"]


def test_user_fixed_keeps_a_malleable_team(two: Daemon, tmp_path: Path) -> None:
    result, rep = under_scaf("banner", two, tmp_path, {"SCAF_MALLEABLE": "no"})
    assert rep["verdict"] == "fixed" and rep["source"] == "user", rep
    assert rep["teams"] == [BOUND] and result["verified"] == "yes", rep


@pytest.mark.parametrize("word", ["maybe", "", "auto"])
def test_unknown_or_auto_setting_means_auto(two: Daemon, tmp_path: Path, word: str) -> None:
    result, rep = under_scaf("split", two, tmp_path, {"SCAF_MALLEABLE": word, "SCAF_VERBOSE": "0"})
    assert rep["verdict"] == "fixed" and rep["source"] == "evidence", rep
    assert result["verified"] == "yes"


def test_rules_file_by_basename_and_path(two: Daemon, tmp_path: Path) -> None:
    rules = tmp_path / "rules"
    rules.write_text(
        "# comment line\n"
        "this line is not a rule\n"
        f"fixed {paths.workload('banner')}\n"  # by absolute path
        "malleable banner\n"  # a later match never wins
        "malleable spl?t   # by basename glob\n"
    )
    _, rep = under_scaf("banner", two, tmp_path, {"SCAF_RULES": str(rules)})
    assert rep["verdict"] == "fixed" and rep["source"] == "rules", rep
    assert f"{rules}:3: fixed " in rep["reason"], rep
    result, rep = under_scaf("split", two, tmp_path, {"SCAF_RULES": f"/nonexistent/rules:{rules}"})
    assert rep["verdict"] == "malleable" and rep["source"] == "rules", rep
    assert f"{rules}:5:" in rep["reason"], rep
    assert result["verified"] == "no", "a user's wrong rule is obeyed (and check would have said so)"
    # The environment beats any rule.
    _, rep = under_scaf("banner", two, tmp_path, {"SCAF_RULES": str(rules), "SCAF_MALLEABLE": "yes"})
    assert rep["source"] == "user", rep


def test_xdg_rules_file_is_read(two: Daemon, tmp_path: Path) -> None:
    cfg = tmp_path / "cfg"
    (cfg / "scaf").mkdir(parents=True)
    (cfg / "scaf" / "rules").write_text("fixed banner\n")
    env = {k: v for k, v in os.environ.items() if k != "SCAF_RULES"}
    env["XDG_CONFIG_HOME"] = str(cfg)
    old = os.environ.pop("SCAF_RULES", None)
    try:
        _, rep = under_scaf("banner", two, tmp_path, {"XDG_CONFIG_HOME": str(cfg)})
    finally:
        if old is not None:
            os.environ["SCAF_RULES"] = old
    assert rep["verdict"] == "fixed" and rep["source"] == "rules", rep


def test_status_shows_verdict_and_reason(two: Daemon) -> None:
    env = layer_env(two.socket, {**ALONE, "OMP_NUM_THREADS": str(BOUND)})
    p = subprocess.Popen([str(paths.workload("split")), "--size", "W"], env=env, stdout=subprocess.DEVNULL)
    try:
        st = two.wait_for(
            lambda st: any(c["pid"] == p.pid and c["verdict"] == "fixed" and not c["malleable"] for c in st["clients"]),
            what="split judged fixed in status",
            timeout=60,
        )
        c = next(c for c in st["clients"] if c["pid"] == p.pid)
        assert c["verdict_source"] == "evidence" and not c["malleable"], c
        assert "split" in c["reason"] and "omp_get_max_threads()" in c["reason"], c
        # A fixed team of 4, alone, larger than the daemon's 2 contexts: never confined to fewer CPUs
        # than its threads, it runs unconfined, as without scaf.
        assert c["threads"] == BOUND and c["cpuset"] == [] and c["control"] == "threads", c
    finally:
        p.wait(timeout=TIMEOUT)


# ---------------------------------------------------------------- patterns no workload has

ESCAPE = r"""
/* The team size read inside a first region becomes the size of per-thread slots. */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
int main(void) {
    int nt = 0, ok = 1;
#pragma omp parallel
    {
#pragma omp single
        nt = omp_get_num_threads();
    }
    long *part = calloc((size_t)nt, sizeof *part);
    for (int it = 0; it < 200; it++) {
#pragma omp parallel
        {
            int t = omp_get_thread_num();
            long l = 0;
#pragma omp for schedule(dynamic, 64) nowait
            for (long i = 0; i < 20000; i++) l += i % 5 + it;
            part[t] = l;
        }
        long s = 0, w = 0;
        for (int t = 0; t < nt; t++) s += part[t];
        for (long i = 0; i < 20000; i++) w += i % 5 + it;
        ok &= s == w;
    }
    printf("ok=%d\n", ok);
    return !ok;
}
"""

THREADPRIVATE = r"""
/* threadprivate state filled in one region and read in later ones (a running sum, like NPB IS's
 * bucket pointers carried to full_verify). It runs 2 s, so that the layer's check of it ends. */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
static long acc;
#pragma omp threadprivate(acc)
static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}
int main(void) {
    long total = 0, iters = 0;
    int nt = atoi(getenv("OMP_NUM_THREADS")); /* not omp_get_max_threads(): only the data is evidence */
    double end = now() + 2.0;
    while (now() < end || iters < 50) {
#pragma omp parallel
        acc += omp_get_thread_num() + 1;
        iters++;
    }
#pragma omp parallel reduction(+ : total)
    total += acc;
    printf("%s\n", total == iters * nt * (nt + 1) / 2 ? "ok" : "wrong");
    return 0;
}
"""


SETNUM_SHARED = r"""
/* Sets its count from an option's default, as many programs do, and only shares work out: no
 * thread numbers, so its results cannot depend on the team. Prints the largest team it saw. */
#include <omp.h>
#include <stdio.h>
int main(void) {
    omp_set_num_threads(3);
    long sum = 0;
    int most = 0;
    for (int it = 0; it < 2000; it++) {
#pragma omp parallel for schedule(dynamic, 64) reduction(+ : sum) reduction(max : most)
        for (int i = 0; i < 4096; i++) {
            sum += i % 7;
            most = most > 1 ? most : 1;
        }
    }
    printf("sum=%ld\n", sum);
    return 0;
}
"""


def build(tmp_path: Path, name: str, src: str) -> Path:
    c = tmp_path / f"{name}.c"
    c.write_text(src)
    exe = tmp_path / name
    subprocess.run(["gcc", "-O2", "-fopenmp", str(c), "-o", str(exe)], check=True, capture_output=True)
    return exe


def report_of(exe: Path, d: Daemon, tmp_path: Path) -> tuple[subprocess.CompletedProcess[str], dict]:
    rep = tmp_path / f"{exe.name}.report"
    env = layer_env(d.socket, {**ALONE, "OMP_NUM_THREADS": str(BOUND), "SCAF_REPORT": str(rep)})
    p = subprocess.run([str(exe)], env=env, capture_output=True, text=True, timeout=TIMEOUT, check=False)
    return p, json.loads(rep.read_text().splitlines()[0])


def test_team_size_read_in_a_region_caps_later_teams(two: Daemon, tmp_path: Path) -> None:
    """A region that reads omp_get_num_threads() without thread numbers lets the count escape:
    it counts as a query, and no later region may get more threads than that region had."""
    exe = build(tmp_path, "escape", ESCAPE)
    p, rep = report_of(exe, two, tmp_path)
    assert p.returncode == 0 and p.stdout == "ok=1\n", (p.stdout, p.stderr)
    assert rep["verdict"] == "fixed" and "read the team size" in rep["reason"], rep
    assert rep["teams"] == [2], rep  # the first region was steered to 2; never 4 afterwards


def test_set_count_without_thread_numbers_is_steered_within_it(two: Daemon, tmp_path: Path) -> None:
    """omp_set_num_threads(3) is knowledge of a count, not a verdict: regions that only share work
    out (a dynamic loop, reductions) are steered, to the daemon's 2 and never above the 3 it set
    (OMP_NUM_THREADS says 4)."""
    exe = build(tmp_path, "setshared", SETNUM_SHARED)
    plain = subprocess.run([str(exe)], env=plain_env({"OMP_NUM_THREADS": str(BOUND)}), capture_output=True,
                           text=True, timeout=TIMEOUT, check=True)
    p, rep = report_of(exe, two, tmp_path)
    assert p.stdout == plain.stdout, (p.stdout, plain.stdout)
    assert rep["verdict"] == "malleable" and "omp_set_num_threads(3) outside regions" in rep["reason"], rep
    assert 2 in rep["teams"] and max(rep["teams"]) <= 3, rep


def test_threadprivate_state_fixes_the_team(two: Daemon, tmp_path: Path) -> None:
    exe = build(tmp_path, "tp", THREADPRIVATE)
    plain = subprocess.run([str(exe)], env=plain_env({"OMP_NUM_THREADS": str(BOUND)}), capture_output=True,
                           text=True, timeout=TIMEOUT, check=True)
    p, rep = report_of(exe, two, tmp_path)
    assert p.stdout == plain.stdout == "ok\n", (p.stdout, plain.stdout)
    # The check found the running sum carried from region to region; meanwhile (and after) every
    # region kept the team the first one ran with.
    assert rep["verdict"] == "fixed" and "depends on thread-local" in rep["reason"], rep
    assert rep["teams"] == [BOUND], rep


# A region in code with threadprivate data: the layer checks it once, in a forked coordinator.
TLS_LIB = r"""
#include <omp.h>
long scratch[64];
#pragma omp threadprivate(scratch)
long work(long n)
{
    long total = 0;
#pragma omp parallel reduction(+ : total)
    {
        int t = omp_get_thread_num(), nt = omp_get_num_threads();
        for (long i = t; i < n; i += nt) {
            scratch[i % 64] = i;
            total += scratch[i % 64];
        }
    }
    return total;
}
"""

# numpy first: its OpenBLAS pool is what the layer's helper watches for in a Python process, and what it would
# find in a forked child of one. Then regions until the test releases it.
TLS_DRIVER = """
import ctypes, os, sys
import numpy
lib = ctypes.CDLL(sys.argv[1])
lib.work.restype = ctypes.c_long
lib.work.argtypes = [ctypes.c_long]
while not os.path.exists(sys.argv[2]):
    assert lib.work(100000) == 100000 * 99999 // 2
print("done")
"""


def test_the_thread_local_check_never_becomes_a_client(two: Daemon, tmp_path: Path) -> None:
    """The check's coordinator is a fork of the program. In a Python process with a BLAS pool the layer's own
    fork handler used to start a helper in every child, which connected the coordinator to the daemon: a client
    of its own, given a share of the program's CPUs while it ran. It must never speak to the daemon."""
    lib = tmp_path / "libtls.so"
    (tmp_path / "tls.c").write_text(TLS_LIB)
    subprocess.run(["gcc", "-fopenmp", "-O0", "-shared", "-fPIC", "-o", str(lib), str(tmp_path / "tls.c")],
                   check=True)
    hold = Hold()
    err = tmp_path / "stderr"
    env = layer_env(two.socket, {**ALONE, "SCAF_VERBOSE": "1", "OMP_NUM_THREADS": "2"})
    with err.open("w") as e:
        p = subprocess.Popen([sys.executable, "-c", TLS_DRIVER, str(lib), str(hold.path)], env=env,
                             stdout=subprocess.PIPE, stderr=e, text=True)
    try:
        deadline = time.monotonic() + TIMEOUT
        while "thread-local data check: per-region scratch" not in err.read_text():
            assert p.poll() is None and time.monotonic() < deadline, err.read_text()
            time.sleep(0.05)
    finally:
        hold.release()
        out, _ = p.communicate(timeout=TIMEOUT)
    text = err.read_text()
    assert p.returncode == 0 and out == "done\n", text
    coordinator = int(text.split("checking a region's thread-local data (pid ")[1].split(")")[0])
    assert f"scaf[{coordinator}]: connected" not in text, text
    clients = {c["pid"] for st in alloclog.read(two.log) for c in st["clients"]}
    assert p.pid in clients and coordinator not in clients, (p.pid, coordinator, clients)
