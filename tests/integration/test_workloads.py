"""The workloads alone (plain libgomp, no scaf): they verify, agree across team sizes, and fail
when their parallel work is really corrupted.

Corruption comes from two tiny preloaded shims compiled here, never from a flag in the
workloads: one makes omp_get_thread_num() answer 0 in every thread (so work split by thread
number is done twice and half is never done), the other changes the team size from region to
region (which every malleable workload must survive bit for bit, and which must break each of
the non-malleable ones: that is what makes them fair tests of scaf's malleability rule).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import UNSCALED, parse_result
from scaf.lib import paths

WORKLOADS = [
    "spin",
    "cg",
    "ep",
    "fixed",
    "regions",
    "crit",
    "chatty",
    "stream",
    "stencil",
    "transpose",
    "irregular",
    "banner",
    "split",
    "partials",
    "phases",
    "explicit",
    "tpscratch",
    "tpcarry",
    "dtgroup",
    "xgbhist",
]
# Not malleable on purpose: each fails when its team changes between regions (one hazard each).
NON_MALLEABLE = ["fixed", "split", "partials", "tpcarry", "xgbhist"]
# Malleable below the count they read at start, which sizes their per-thread buffers once (as
# data.table does): a team above it, which scaf never gives, overruns them.
SIZED_BY_COUNT = ["dtgroup"]
# Workloads whose parallel work is divided by thread number somewhere (static schedules,
# `master`, pipeline bands), so a runtime that misnumbers threads must make them fail.
SPLIT_BY_THREAD_NUMBER = [
    "spin",
    "cg",
    "fixed",
    "regions",
    "crit",
    "chatty",
    "stream",
    "stencil",
    "transpose",
    "banner",
    "split",
    "partials",
    "phases",
    "explicit",
    "tpscratch",
    "tpcarry",
    "dtgroup",
    "xgbhist",
]
TIMEOUT = 120

TID_ZERO_SHIM = r"""
/* Every thread claims to be thread 0: a broken runtime for the workloads to catch. */
int omp_get_thread_num(void) { return 0; }
"""

VARYING_TEAM_SHIM = r"""
/* Gives each parallel region a team of 1, 2, 3, 1, ... threads, through every GOMP_parallel*
 * entry point the workloads use, whatever num_threads the program passed: explicit passes
 * the count it read before its regions to every one of them, and is malleable all the same. */
#include <dlfcn.h>
#include <stdatomic.h>
typedef void (*fn_t)(void *);
static atomic_uint counter;
static unsigned pick(unsigned n) { (void)n; return 1 + atomic_fetch_add(&counter, 1) % 3; }
#define REAL(name, type) static __typeof__(type) real; if (!real) real = (type)dlsym(RTLD_NEXT, #name)
void GOMP_parallel(fn_t fn, void *d, unsigned n, unsigned f) {
  REAL(GOMP_parallel, void (*)(fn_t, void *, unsigned, unsigned));
  real(fn, d, pick(n), f);
}
#define LOOP(name) \
  void name(fn_t fn, void *d, unsigned n, long s, long e, long i, long c, unsigned f) { \
    REAL(name, void (*)(fn_t, void *, unsigned, long, long, long, long, unsigned)); \
    real(fn, d, pick(n), s, e, i, c, f); }
#define RUNTIME(name) \
  void name(fn_t fn, void *d, unsigned n, long s, long e, long i, unsigned f) { \
    REAL(name, void (*)(fn_t, void *, unsigned, long, long, long, unsigned)); \
    real(fn, d, pick(n), s, e, i, f); }
LOOP(GOMP_parallel_loop_static)
LOOP(GOMP_parallel_loop_dynamic)
LOOP(GOMP_parallel_loop_guided)
LOOP(GOMP_parallel_loop_nonmonotonic_dynamic)
LOOP(GOMP_parallel_loop_nonmonotonic_guided)
RUNTIME(GOMP_parallel_loop_runtime)
RUNTIME(GOMP_parallel_loop_maybe_nonmonotonic_runtime)
RUNTIME(GOMP_parallel_loop_nonmonotonic_runtime)
void GOMP_parallel_sections(fn_t fn, void *d, unsigned n, unsigned count, unsigned f) {
  REAL(GOMP_parallel_sections, void (*)(fn_t, void *, unsigned, unsigned, unsigned));
  real(fn, d, pick(n), count, f);
}
unsigned GOMP_parallel_reductions(fn_t fn, void *d, unsigned n, unsigned f) {
  REAL(GOMP_parallel_reductions, unsigned (*)(fn_t, void *, unsigned, unsigned));
  return real(fn, d, pick(n), f);
}
"""


def plain_env(threads: int, preload: Path | None = None) -> dict[str, str]:
    """The caller's environment without scaf or OpenMP settings, plus OMP_NUM_THREADS."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("SCAF_", "OMP_", "GOMP_")) and k != "LD_PRELOAD"
    }
    env["OMP_NUM_THREADS"] = str(threads)
    if preload is not None:
        env["LD_PRELOAD"] = str(preload)
    return env


def run(
    args: list[str],
    env: dict[str, str] | None = None,
    cwd: Path | None = None,
    timeout: float = TIMEOUT,
) -> subprocess.CompletedProcess[str]:
    """Runs a command to completion; the tests judge its exit status themselves."""
    return subprocess.run(
        args,
        check=False,
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def run_workload(
    name: str,
    threads: int,
    tmp: Path,
    preload: Path | None = None,
    extra: list[str] | None = None,
) -> subprocess.CompletedProcess[str]:
    args = [str(paths.workload(name)), "--size", "S"]
    if name == "chatty":
        args += ["--file", str(tmp / f"chatty-{threads}.out")]
    args += extra or []
    return run(args, env=plain_env(threads, preload), cwd=tmp)


def checksum(stdout: str) -> str:
    found = re.findall(r"^checksum=([0-9a-f]{16})$", stdout, re.MULTILINE)
    assert len(found) == 1, stdout
    return found[0]


@pytest.fixture(scope="module", autouse=True)
def built() -> None:
    missing = [w for w in WORKLOADS if not paths.workload(w).exists()]
    assert not missing, f"build the workloads first (make c): missing {missing}"


def compile_shim(tmp: Path, name: str, source: str) -> Path:
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler to build the corruption shim")
    src = tmp / f"{name}.c"
    lib = tmp / f"{name}.so"
    src.write_text(source)
    subprocess.run(
        [cc, "-shared", "-fPIC", "-O1", "-o", str(lib), str(src), "-ldl"], check=True
    )
    return lib


@pytest.fixture(scope="module")
def shims(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    tmp = tmp_path_factory.mktemp("shims")
    return {
        "tid_zero": compile_shim(tmp, "tid_zero", TID_ZERO_SHIM),
        "varying_team": compile_shim(tmp, "varying_team", VARYING_TEAM_SHIM),
    }


@pytest.fixture(scope="module")
def plain_runs(
    tmp_path_factory: pytest.TempPathFactory,
) -> dict[tuple[str, int], subprocess.CompletedProcess[str]]:
    """Each workload at 1, 2 and 3 (oversubscribed) threads on plain libgomp, run once."""
    tmp = tmp_path_factory.mktemp("plain")
    return {(w, n): run_workload(w, n, tmp) for w in WORKLOADS for n in (1, 2, 3)}


@pytest.mark.parametrize("name", WORKLOADS)
def test_verifies_at_1_2_3_threads_with_identical_checksums(
    name: str, plain_runs: dict[tuple[str, int], subprocess.CompletedProcess[str]]
) -> None:
    sums = set()
    for n in (1, 2, 3):
        p = plain_runs[(name, n)]
        assert p.returncode == 0, (
            f"{name} at {n} threads: rc {p.returncode}\n{p.stdout}{p.stderr}"
        )
        res = parse_result(p.stdout)
        assert res["name"] == name
        assert res["verified"] == "yes"
        assert int(res["threads"]) == n, (
            f"{name}: largest team {res['threads']}, expected {n}"
        )
        assert float(res["time_s"]) >= 0.0
        sums.add(checksum(p.stdout))
    assert len(sums) == 1, f"{name}: checksums differ across team sizes: {sums}"


@pytest.mark.parametrize("name", WORKLOADS)
def test_help_describes_behaviour_first(name: str) -> None:
    p = run([str(paths.workload(name)), "--help"])
    assert p.returncode == 0
    first = p.stdout.splitlines()[0]
    assert first.startswith(f"{name}: ") and len(first) > len(name) + 20, first
    assert f"usage: {name} [--size S|W|A]" in p.stdout
    assert "verified=yes|no" in p.stdout


@pytest.mark.parametrize("name", WORKLOADS)
@pytest.mark.parametrize(
    "bad",
    [
        ["--bogus"],
        ["--size", "X"],
        ["--size"],
        ["--size=Q"],
        ["extra"],
        ["--file", "x"],
    ],
)
def test_bad_arguments_exit_2_with_message(
    name: str, bad: list[str], tmp_path: Path
) -> None:
    if name == "chatty" and bad[0] == "--file":
        bad = ["--file"]  # chatty takes --file PATH; a missing path is its bad form
    p = run([str(paths.workload(name)), *bad], cwd=tmp_path)
    assert p.returncode == 2, (bad, p.stdout, p.stderr)
    assert p.stdout == ""
    assert p.stderr.startswith(f"{name}: ") and "usage:" in p.stderr


def test_size_equals_form_is_accepted(tmp_path: Path) -> None:
    p = run([str(paths.workload("ep")), "--size=S"], env=plain_env(1), cwd=tmp_path)
    assert p.returncode == 0 and parse_result(p.stdout)["verified"] == "yes"


def test_chatty_prints_and_appends_one_numbered_line_per_instance(
    tmp_path: Path,
) -> None:
    out = tmp_path / "lines.out"
    out.write_text("stale line from an earlier run\n")
    p = run(
        [str(paths.workload("chatty")), "--size", "S", "--file", str(out)],
        env=plain_env(2),
    )
    assert p.returncode == 0, p.stderr
    printed = [ln for ln in p.stdout.splitlines() if ln.startswith("chatty instance=")]
    instances = int(re.search(r"^instances=(\d+)", p.stdout, re.MULTILINE).group(1))
    assert [
        int(re.match(r"chatty instance=(\d+) ", ln).group(1)) for ln in printed
    ] == list(range(instances))
    assert out.read_text().splitlines() == printed


def test_chatty_detects_a_duplicated_line(
    tmp_path: Path, shims: dict[str, Path]
) -> None:
    """With every thread claiming to be the master, each instance writes twice."""
    out = tmp_path / "dup.out"
    p = run(
        [str(paths.workload("chatty")), "--size", "S", "--file", str(out)],
        env=plain_env(2, shims["tid_zero"]),
    )
    assert p.returncode == 1
    assert parse_result(p.stdout)["verified"] == "no"
    assert "lines, expected" in p.stderr or "line 2 of" in p.stderr


def test_chatty_unwritable_file_is_a_clear_failure(tmp_path: Path) -> None:
    bad = tmp_path / "no-such-dir" / "x.out"
    p = run(
        [str(paths.workload("chatty")), "--size", "S", "--file", str(bad)],
        env=plain_env(1),
    )
    assert p.returncode == 1
    assert f"cannot create {bad}" in p.stderr
    assert parse_result(p.stdout)["verified"] == "no"


@pytest.mark.parametrize("name", SPLIT_BY_THREAD_NUMBER)
def test_misnumbered_threads_fail_verification(
    name: str, tmp_path: Path, shims: dict[str, Path]
) -> None:
    """Two threads both numbered 0 skip half the work: verification must say no. Only where both threads took
    part of a region's loop: on a loaded machine one of them may sleep through every dynamic chunk of all the
    regions of a run (its slot then holds the whole sum), so a run that verified is tried again a few times."""
    for _ in range(5):
        p = run_workload(name, 2, tmp_path, preload=shims["tid_zero"])
        if p.returncode != 0:
            break
    assert p.returncode == 1, f"{name} verified corrupted work:\n{p.stdout}{p.stderr}"
    assert parse_result(p.stdout)["verified"] == "no"


@pytest.mark.parametrize("name", [w for w in WORKLOADS if w not in NON_MALLEABLE])
def test_team_changing_every_region_keeps_result_bit_identical(
    name: str,
    tmp_path: Path,
    shims: dict[str, Path],
    plain_runs: dict[tuple[str, int], subprocess.CompletedProcess[str]],
) -> None:
    # At 3 the shim's teams (1, 2, 3, ...) never exceed the count the program read, as scaf's never do.
    p = run_workload(name, 3 if name in SIZED_BY_COUNT else 2, tmp_path, preload=shims["varying_team"])
    assert p.returncode == 0, (
        f"{name} under varying teams: rc {p.returncode}\n{p.stdout}{p.stderr}"
    )
    assert parse_result(p.stdout)["verified"] == "yes"
    assert checksum(p.stdout) == checksum(plain_runs[(name, 1)].stdout)


def test_fixed_really_depends_on_a_constant_team(
    tmp_path: Path, shims: dict[str, Path]
) -> None:
    """fixed is the non-malleable one: a team that changes between its regions breaks it,
    which is why scaf must keep its team fixed (and why it verifies under scaf at all)."""
    p = run_workload("fixed", 2, tmp_path, preload=shims["varying_team"], extra=UNSCALED)
    assert p.returncode == 1, p.stdout + p.stderr
    assert parse_result(p.stdout)["verified"] == "no"
    assert "fixed: iteration" in p.stderr


def test_banner_prints_its_thread_count_but_leaves_it_out_of_the_result(
    tmp_path: Path,
    shims: dict[str, Path],
    plain_runs: dict[tuple[str, int], subprocess.CompletedProcess[str]],
) -> None:
    """banner reads omp_get_max_threads() before any region only to print it, like almost
    every real program: the count differs, the checksum does not, and teams that differ from
    the printed count (1, 2, 3, 1, ... under the shim) still give the same bits."""
    for n in (1, 2, 3):
        assert f" Total threads = {n}\n" in plain_runs[("banner", n)].stdout
    p = run_workload("banner", 3, tmp_path, preload=shims["varying_team"])
    assert p.returncode == 0, p.stdout + p.stderr
    assert " Total threads = 3\n" in p.stdout
    assert parse_result(p.stdout)["verified"] == "yes"
    assert checksum(p.stdout) == checksum(plain_runs[("banner", 1)].stdout)


@pytest.mark.parametrize(
    ("name", "says"),
    [
        ("split", (r"split: iteration \d+: \d+ of \d+ elements not processed: a team of [12] "
                   r"ran work cut into 3 chunks before the regions; chunk\(s\) (1 2|2) skipped")),
        ("partials", (r"partials: region \d+: .*: a team of [12] left slots holding an "
                      r"earlier region's partials")),
        ("xgbhist", (r"xgbhist: round \d+, level \d+: node \d+'s histogram of feature \d+ holds -?\d+ of \d+ "
                     r"rows: a team of [12] ran blocks cut for 3 threads before the regions; the blocks of "
                     r"thread\(s\) (1 to 2|2) were skipped")),
    ],
)
def test_hazard_fails_when_a_team_shrinks_below_the_count_read_before_the_regions(
    name: str, says: str, tmp_path: Path, shims: dict[str, Path]
) -> None:
    """split (work cut into omp_get_max_threads() chunks) and partials (per-thread slots
    summed whole) are wrong as soon as a region's team is smaller than the count they read
    at level 0. At OMP_NUM_THREADS=3 the shim's teams (1, 2, 3, ...) never exceed that count,
    as scaf's never do: every failure is a shrink, the case the layer must prevent."""
    # A count: enough regions for the shrinks to show even on a loaded machine (a thread that takes no
    # chunk leaves nothing stale behind), whatever the suite's work scale.
    p = run_workload(name, 3, tmp_path, preload=shims["varying_team"], extra=UNSCALED)
    assert p.returncode == 1, p.stdout + p.stderr
    assert parse_result(p.stdout)["verified"] == "no"
    assert re.search(says, p.stderr), p.stderr


@pytest.mark.parametrize("name", ["explicit", "tpscratch"])
def test_malleable_in_truth_under_teams_larger_than_the_program_saw(
    name: str,
    tmp_path: Path,
    shims: dict[str, Path],
    plain_runs: dict[tuple[str, int], subprocess.CompletedProcess[str]],
) -> None:
    """explicit passes num_threads(omp_get_max_threads()), read once before its regions, to
    every region; tpscratch numbers its threads over threadprivate scratch. Both divide their
    work only by the team a region really has. At OMP_NUM_THREADS=1 every team of 2 or 3 the
    shim gives is one the program never asked for: the largest team on the result line shows
    that the shim reached their regions, the checksum that the bits did not change."""
    p = run_workload(name, 1, tmp_path, preload=shims["varying_team"])
    assert p.returncode == 0, p.stdout + p.stderr
    res = parse_result(p.stdout)
    assert res["verified"] == "yes" and int(res["threads"]) == 3, res
    assert checksum(p.stdout) == checksum(plain_runs[(name, 1)].stdout)
    if name == "explicit":
        assert " num_threads(1) at every region" in p.stdout


def test_dtgroup_needs_no_team_above_the_count_it_sized_its_buffers_by(
    tmp_path: Path,
    shims: dict[str, Path],
    plain_runs: dict[tuple[str, int], subprocess.CompletedProcess[str]],
) -> None:
    """dtgroup reads its count once at start and sizes its per-thread buffers by it, as data.table
    does: every team up to that count gives the same bits (at 3 the shim's teams never exceed it,
    and the checksum is that of one thread); a team of 3 at a count of 2, which scaf never gives
    and data.table never asks for, has a thread without a buffer, and verification says so."""
    p = run_workload("dtgroup", 3, tmp_path, preload=shims["varying_team"])
    assert p.returncode == 0, p.stdout + p.stderr
    res = parse_result(p.stdout)
    assert res["verified"] == "yes" and int(res["threads"]) == 3, res
    assert checksum(p.stdout) == checksum(plain_runs[("dtgroup", 1)].stdout)
    p = run_workload("dtgroup", 2, tmp_path, preload=shims["varying_team"])
    assert p.returncode == 1, p.stdout + p.stderr
    assert parse_result(p.stdout)["verified"] == "no"
    assert re.search(r"^dtgroup: round \d+: .*: a team of 3 exceeded the 2 per-thread buffers sized from the "
                     r"count read at start$", p.stderr, re.MULTILINE), p.stderr


def test_tpcarry_fails_every_round_whose_two_regions_have_different_teams(
    tmp_path: Path, shims: dict[str, Path]
) -> None:
    """tpcarry keeps each thread's partial in threadprivate storage from one region to the
    next, which OpenMP allows only when both have the same team. Under the shim the two regions
    of every round have different teams (1 then 2, 3 then 1, 2 then 3, ...): a team that shrank
    leaves partials out, one that grew adds partials that an earlier region (or none) left."""
    p = run_workload("tpcarry", 3, tmp_path, preload=shims["varying_team"], extra=UNSCALED)
    assert p.returncode == 1, p.stdout + p.stderr
    assert parse_result(p.stdout)["verified"] == "no"
    said = re.findall(
        r"^tpcarry: round \d+: total [0-9a-f]{16}, expected [0-9a-f]{16}: threadprivate partials "
        r"computed by a team of ([123]) were combined by a team of ([123])$",
        p.stderr,
        re.MULTILINE,
    )
    assert said and all(a != b for a, b in said), p.stderr
    assert any(a > b for a, b in said) and any(a < b for a, b in said), p.stderr
    rounds = int(re.search(r"^elements=\d+ rounds=(\d+)", p.stdout, re.MULTILINE).group(1))
    assert f"tpcarry: {rounds} of {rounds} rounds summed wrongly" in p.stderr, p.stderr
