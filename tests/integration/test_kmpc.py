"""libscaf_omp.so with LLVM libomp (clang) and Intel libiomp5 (clang, and gcc through its GOMP_* names):
the libgomp layer's promises, checked with the same real programs and daemons, and `scaf run`'s choice.

The probe tests are test_layer.py's own, run against a probe built for each runtime, with
layer_env() preloading libscaf_omp.so instead of libscaf_gomp.so.
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import test_layer as tl
from conftest import SCAF, UNSCALED, Daemon, layer_env, parse_result
from elftools.elf.elffile import ELFFile
from scaf.lib import paths, runtimes
from test_workloads_under_scaf import checksum, run_while_churning

IOMP5 = paths.build_dir() / "venv" / "lib" / "libiomp5.so"

# runtime id -> (compiler, link flags, folder of the workloads built by make)
RUNTIMES = {
    "libomp-clang": ("clang", ["-fopenmp"], "workloads-clang"),
    "libiomp5-clang": ("clang", ["-fopenmp=libiomp5", f"-L{IOMP5.parent}", f"-Wl,-rpath,{IOMP5.parent}"],
                       "workloads-iomp5-clang"),
    "libiomp5-gcc": ("gcc", [f"-L{IOMP5.parent}", f"-Wl,-rpath,{IOMP5.parent}", "-liomp5"], "workloads-iomp5-gcc"),
}


def build_probe(rt: str, out_dir: Path) -> Path:
    """tests/progs/omp_probe.c for runtime RT (LLVM's runtimes lack omp_set_num_threads_8_)."""
    cc, link, _ = RUNTIMES[rt]
    out = out_dir / f"omp_probe-{rt}"
    src = str(tl.PROGS / "omp_probe.c")
    flags = ["-O2", "-Wall", "-Wextra", "-Werror", "-DPROBE_NO_FORTRAN8"]
    if cc == "gcc":  # compiled with gcc's own OpenMP, linked to libiomp5 instead of libgomp
        obj = out_dir / f"omp_probe-{rt}.o"
        subprocess.run([cc, "-fopenmp", *flags, "-c", "-o", str(obj), src], check=True)
        subprocess.run([cc, "-o", str(out), str(obj), *link], check=True)
    else:
        subprocess.run([cc, *flags, *link, "-o", str(out), src], check=True)
    return out


@pytest.fixture(scope="module", params=sorted(RUNTIMES))
def rt(request: pytest.FixtureRequest) -> str:
    if "iomp5" in request.param and not IOMP5.exists():
        pytest.fail(f"{IOMP5} missing: the intel-openmp wheel (requirements.txt) is not installed")
    return request.param


@pytest.fixture(scope="module")
def probe(rt: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_probe(rt, tmp_path_factory.mktemp("kmpc"))


@pytest.fixture(autouse=True)
def omp_layer(monkeypatch: pytest.MonkeyPatch) -> None:
    """layer_env() (conftest) preloads paths.layer(): here the LLVM/Intel layer."""
    omp = paths.layer("omp")
    monkeypatch.setattr(paths, "layer", lambda kind="omp": omp)


@pytest.fixture(autouse=True)
def no_registration_left() -> Iterator[None]:
    """libomp and libiomp5 register each process in /dev/shm and remove the file at a normal exit only: the
    probes these tests SIGKILL on purpose would leave theirs behind. Removes those of dead processes."""
    before = set(Path("/dev/shm").glob("__KMP_REGISTERED_LIB_*"))
    yield
    for f in set(Path("/dev/shm").glob("__KMP_REGISTERED_LIB_*")) - before:
        pid = f.name.split("_")[-2]
        if pid.isdigit() and not Path(f"/proc/{pid}").exists():
            f.unlink(missing_ok=True)


@pytest.fixture
def probes() -> Iterator[Callable[..., tl.Probe]]:
    """test_layer's fixture of the same name: probe processes, killed at teardown."""
    started: list[tl.Probe] = []

    def start(exe: Path, args: list[str], env: dict[str, str]) -> tl.Probe:
        p = tl.Probe(exe, args, env)
        started.append(p)
        return p

    yield start
    for p in started:
        p.kill()


def test_probe_loads_only_its_runtime(rt: str, probe: Path) -> None:
    """The test programs really run the runtime they are named after, and no other."""
    found = [runtimes._family(s) for s in runtimes.dependencies(str(probe)).found]
    omp = [f for f in found if f in runtimes.STEERABLE]
    assert omp == ["libomp" if rt == "libomp-clang" else "libiomp5"], found


# ---------------------------------------------------------------- the libgomp layer's tests, per runtime


def test_team_follows_arrivals_and_departures(probe: Path, scafd: Daemon, probes: Callable[..., tl.Probe]) -> None:
    """Shows as a client; every outermost region runs the daemon's count: 4 -> 2 -> 4."""
    tl.test_team_follows_arrivals_and_departures(probe, scafd, probes)


def test_bound_is_initial_nthreads_var(probe: Path, scafd: Daemon, probes: Callable[..., tl.Probe]) -> None:
    """A team never exceeds what the program saw (OMP_NUM_THREADS=2 with 4 contexts offered)."""
    tl.test_bound_is_initial_nthreads_var(probe, scafd, probes)


def test_explicit_counts_if_false_and_nested_untouched(probe: Path, scafd_factory: Callable[..., Daemon]) -> None:
    """num_threads(3) kept, if(0) kept, nested regions as written; only the default region follows."""
    tl.test_explicit_counts_if_false_and_nested_untouched(probe, scafd_factory)


def test_split_entry_points_follow_allocation(rt: str, probe: Path, scafd_factory: Callable[..., Daemon]) -> None:
    """The GOMP 1.0 names called directly: libomp's and libiomp5's compatibility entry points are steered too
    (libiomp5 itself runs some of them with one thread even plain; with one context, all get one)."""
    d = scafd_factory("--policy", "equipartition", "--cpus", "1", "--no-lookout")
    extra = {"OMP_NUM_THREADS": "3", **tl.NO_ESTIMATE}
    plain = tl.run(probe, ["split"], tl.plain_env(extra))
    under = tl.run(probe, ["split"], layer_env(d.socket, extra))
    assert plain.returncode == under.returncode == 0, (plain.stderr, under.stderr)
    split_plain = next(ln for ln in plain.stdout.splitlines() if ln.startswith("split "))
    split_under = next(ln for ln in under.stdout.splitlines() if ln.startswith("split "))
    assert "3" in {kv.split("=")[1] for kv in split_plain.split()[1:]}, split_plain
    assert {kv.split("=")[1] for kv in split_under.split()[1:]} == {"1"}, split_under
    assert plain.stdout.splitlines()[-2:] == under.stdout.splitlines()[-2:]


@pytest.mark.parametrize("args,team", [(["setnum", "1", "STOP", tl.MAXSEC], 1), (["fsetnum", "1", "STOP", tl.MAXSEC], 1)],
                         ids=["set_num_threads", "set_num_threads_"])
def test_set_num_threads_weighed_by_the_regions(rt: str, probe: Path, scafd_factory: Callable[..., Daemon],
                                               probes: Callable[..., tl.Probe], args: list[str], team: int) -> None:
    """omp_set_num_threads outside regions is weighed by what the regions do, by the same rule as
    with libgomp. gcc expands the probe's static loops into omp_get_thread_num() calls: thread
    numbers in a program that set its count, fixed, kept, confined by CPU set. clang expands them
    into __kmpc_for_static_init: no thread number is asked, so the probe is steered, within the 1 it set."""
    if rt.endswith("-gcc"):
        tl.test_nonmalleable_fixed_team_under_cpuset(probe, scafd_factory, probes, args, team)
        return
    d = scafd_factory("--policy", "equipartition", "--cpus", "2", "--no-lookout")
    p = probes(probe, args, layer_env(d.socket, {"OMP_NUM_THREADS": "3", **tl.QUIET}))
    st = d.wait_for(lambda st: (c := tl.client(st, p.pid)) is not None and c["verdict"] == "malleable"
                    and c["regions"] > 50, what="the probe judged malleable")
    c = tl.client(st, p.pid)
    assert c["verdict_source"] == "evidence" and f"omp_set_num_threads({team}) outside regions" in c["reason"], c
    rc, text = p.finish()
    assert rc == 0, text
    assert p.teams() and max(p.teams()) <= team, text


def test_count_query_alone_stays_malleable(probe: Path, scafd_factory: Callable[..., Daemon],
                                           probes: Callable[..., tl.Probe]) -> None:
    """A banner's omp_get_max_threads() alone is evidence, not a verdict, as with libgomp."""
    tl.test_count_query_alone_stays_malleable(probe, scafd_factory, probes, "fixed")


@pytest.mark.parametrize("mode", [["sum"], ["explicit"], ["split"], ["fixed", "/nonexistent", "0.05"]])
def test_no_daemon_same_output_and_exit_code(probe: Path, mode: list[str]) -> None:
    tl.test_no_daemon_same_output_and_exit_code(probe, mode)


def test_disabled_and_refused_are_inert(probe: Path, scafd_factory: Callable[..., Daemon],
                                        probes: Callable[..., tl.Probe]) -> None:
    tl.test_disabled_and_refused_are_inert(probe, scafd_factory, probes)


def test_daemon_restart_clients_reconnect(probe: Path, scafd: Daemon, probes: Callable[..., tl.Probe]) -> None:
    tl.test_daemon_restart_clients_reconnect(probe, scafd, probes)


def test_probe_checksum_identical_under_estimator(probe: Path, scafd: Daemon, probes: Callable[..., tl.Probe]) -> None:
    tl.test_probe_checksum_identical_under_estimator_experiments(probe, scafd, probes)


# ---------------------------------------------------------------- strict num_threads


def exports(lib: Path, name: str) -> bool:
    with open(lib, "rb") as f:
        dynsym = ELFFile(f).get_section_by_name(".dynsym")
        return any(s.name == name and s["st_shndx"] != "SHN_UNDEF" for s in dynsym.iter_symbols())


STRICT_PROG = r"""
#include <omp.h>
#include <stdio.h>
struct ident { int r1, flags, r2, r3; const char *psource; };
static struct ident loc = {0, 2, 0, 0, ";strict.c;main;1;1;;"};
int __kmpc_global_thread_num(struct ident *);
void __kmpc_push_num_threads_strict(struct ident *, int, int, int, const char *);
int main(void)
{
    int plain = 0, strict = 0;
#pragma omp parallel
#pragma omp single
    plain = omp_get_num_threads();
    for (int i = 0; i < 200; i++) {
        __kmpc_push_num_threads_strict(&loc, __kmpc_global_thread_num(&loc), 3, 2, "strict");
#pragma omp parallel
#pragma omp single
        strict = omp_get_num_threads();
        if (strict != 3)
            break;
    }
    printf("plain=%d strict=%d\n", plain, strict);
    return 0;
}
"""


def test_strict_num_threads_never_lowered(rt: str, scafd_factory: Callable[..., Daemon], tmp_path: Path) -> None:
    """num_threads(strict: 3) as the compiler emits it (__kmpc_push_num_threads_strict): 3 threads with 1
    context allocated, while the default region in the same program gets 1."""
    if rt == "libomp-clang":
        lib = Path(runtimes.dependencies(str(paths.build_dir() / "workloads-clang" / "spin")).found["libomp.so.5"])
        if not exports(lib, "__kmpc_push_num_threads_strict"):
            pytest.skip(f"{lib} has no __kmpc_push_num_threads_strict (added after LLVM 14)")
    if rt == "libiomp5-gcc":
        pytest.skip("gcc emits no strict clause; the GOMP_* names have none")
    cc, link, _ = RUNTIMES[rt]
    src = tmp_path / "strict.c"
    src.write_text(STRICT_PROG)
    exe = tmp_path / "strict"
    subprocess.run([cc, "-O2", *link, "-o", str(exe), str(src)], check=True)
    d = scafd_factory("--policy", "equipartition", "--cpus", "1", "--no-lookout")
    extra = {"OMP_NUM_THREADS": "3", **tl.NO_ESTIMATE}
    r = tl.run(exe, [], layer_env(d.socket, extra))
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["plain=1", "strict=3"], (r.stdout, r.stderr)


# ---------------------------------------------------------------- the workloads, per runtime


@pytest.mark.parametrize("name", ["spin", "stencil", "partials", "banner"])
def test_workload_verifies_plain_inert_and_while_allocation_changes(rt: str, name: str, scafd_factory,
                                                                   tmp_path: Path) -> None:
    """The same checksum plain, inert and while the daemon's allocation keeps changing (a client comes and
    goes), and the daemon did change this workload's share while it ran."""
    exe = paths.build_dir() / RUNTIMES[rt][2] / name
    assert exe.exists(), f"{exe} not built (make all)"
    d: Daemon = scafd_factory("--policy", "equipartition", "--cpus", "2", "--no-lookout")
    plain_env = {k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS", "LD_PRELOAD")}
    inert_env = layer_env(None, {})
    live_env = layer_env(d.socket, {})
    outs: dict[str, subprocess.CompletedProcess[str]] = {}
    for mode, env in (("plain", plain_env), ("inert", inert_env)):
        outs[mode] = subprocess.run([str(exe), "--size", "S"], env=env, capture_output=True, text=True,
                                    timeout=180, check=False)
    for mode, r in outs.items():
        assert r.returncode == 0, (mode, r.stdout, r.stderr)
        assert parse_result(r.stdout)["verified"] == "yes", (mode, r.stdout)
    assert checksum(outs["plain"].stdout) == checksum(outs["inert"].stdout)
    run_while_churning([str(exe), "--size", "S"], live_env, d, checksum(outs["plain"].stdout), tmp_path)


# Workloads whose verdict waits on a check that takes a few regions (tpcarry's thread-local check):
# they run with --until until the daemon shows a verdict, so a fast machine cannot end them first.
UNTIL_DECIDED = {"tpcarry"}


def report_of(exe: Path, d: Daemon, tmp_path: Path, tag: str) -> dict:
    import json

    rep = tmp_path / f"{tag}.jsonl"
    stop = tmp_path / f"{tag}.stop"
    argv = [str(exe), "--size", "S"]
    if exe.name in UNTIL_DECIDED:
        argv += ["--until", str(stop)]
    p = subprocess.Popen(argv, env=layer_env(d.socket, {"OMP_NUM_THREADS": "2", "SCAF_REPORT": str(rep)}),
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        if exe.name in UNTIL_DECIDED:
            d.wait_for(lambda st: p.poll() is not None or any(
                c["pid"] == p.pid and c.get("verdict") in ("fixed", "malleable") for c in st["clients"]),
                timeout=120, what=f"{exe} to reach a verdict")
    finally:
        stop.touch()
        _, err = p.communicate(timeout=180)
    assert p.returncode == 0, err
    return json.loads(rep.read_text().splitlines()[-1])


@pytest.mark.parametrize("name", ["banner", "fixed", "split", "stencil", "tpcarry"])
def test_malleability_verdict_same_as_libgomp(rt: str, name: str, scafd_factory, tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """The verdict for the same workload built for this runtime is the one libgomp's build gets."""
    d: Daemon = scafd_factory("--policy", "equipartition", "--cpus", "2", "--no-lookout")
    mine = report_of(paths.build_dir() / RUNTIMES[rt][2] / name, d, tmp_path, "omp")
    gomp = paths.build_dir() / "lib" / "libscaf_gomp.so"
    monkeypatch.setattr(paths, "layer", lambda kind="gomp": gomp)
    theirs = report_of(paths.build_dir() / "workloads" / name, d, tmp_path, "gomp")
    assert mine["verdict"] == theirs["verdict"] != "undecided", (mine, theirs)


def test_experiments_run_on_llvm_runtimes(rt: str, scafd: Daemon) -> None:
    """The estimator's forked serial experiments complete on these runtimes too (their fork handler restarts
    the runtime in the child; the layer finishes that before the sandbox), results stay identical, and no
    experiment child leaves its runtime registration file in /dev/shm."""
    exe = paths.build_dir() / RUNTIMES[rt][2] / "stencil"
    forced = {"SCAF_LAZY": "0", "SCAF_INPLACE_MAX_MS": "0", "SCAF_EXPERIMENT_INTERVAL_S": "0",
              "SCAF_VERBOSE": "1", "OMP_NUM_THREADS": "2"}
    # W, not S: an S run can end while its only experiment is still running (no outcome line at all).
    # UNSCALED: that is a count, the regions after the fork (each as long as the serial child's run).
    plain = subprocess.run([str(exe), "--size", "W", *UNSCALED], capture_output=True, text=True, timeout=180,
                           check=False)
    under = subprocess.run([str(exe), "--size", "W", *UNSCALED], env=layer_env(scafd.socket, forced), capture_output=True,
                           text=True, timeout=180, check=False)
    assert under.returncode == 0, under.stderr
    assert checksum(plain.stdout) == checksum(under.stdout)
    outcomes = re.findall(r"experiment (\d+) at site \S+: ([a-z ]+)", under.stderr)
    assert outcomes and {o.strip() for _, o in outcomes} == {"done"}, under.stderr
    left = [pid for pid, _ in outcomes if list(Path("/dev/shm").glob(f"__KMP_REGISTERED_LIB_{pid}_*"))]
    assert left == [], left


# ---------------------------------------------------------------- scaf run's choice


def scaf_run(argv: list[str], *opts: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SCAF_") and k != "LD_PRELOAD"}
    env["SCAF_SOCKET"] = "/nonexistent/scaf-test/none.sock"
    return subprocess.run([str(SCAF), "run", "--no-start", *opts, "--", *argv], env=env, capture_output=True,
                          text=True, timeout=120, check=False)


@pytest.mark.parametrize("folder,layer,runtime", [
    ("workloads", "libscaf_gomp.so", "GNU libgomp"),
    ("workloads-clang", "libscaf_omp.so", "LLVM libomp"),
    ("workloads-iomp5-clang", "libscaf_omp.so", "Intel libiomp5"),
    ("workloads-iomp5-gcc", "libscaf_omp.so", "Intel libiomp5"),
])
def test_scaf_run_picks_the_layer(folder: str, layer: str, runtime: str) -> None:
    r = scaf_run([str(paths.build_dir() / folder / "stencil"), "--size", "S"], "--verbose")
    assert r.returncode == 0, r.stderr
    lines = r.stderr.splitlines()
    assert lines[0].startswith(f"scaf: layer {layer} for {runtime} ("), r.stderr
    # One layer; the other --verbose lines say what the start team was (docs/cli.md, "The start team").
    assert len([ln for ln in lines if ln.startswith("scaf: layer")]) == 1, r.stderr
    assert parse_result(r.stdout)["verified"] == "yes"


def test_scaf_run_silent_without_verbose_and_default_for_python() -> None:
    r = scaf_run([str(paths.build_dir() / "workloads-clang" / "stencil"), "--size", "S"])
    assert r.returncode == 0 and r.stderr == "", r.stderr
    r = scaf_run(["python3", "-c", "import os; print(os.environ['LD_PRELOAD'])"], "--verbose")
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip().endswith("libscaf_gomp.so"), r.stdout
    assert "libscaf_gomp.so for GNU libgomp (default): no OpenMP runtime among its dynamic dependencies" in r.stderr


def test_scaf_run_layer_override() -> None:
    exe = str(paths.build_dir() / "workloads-clang" / "stencil")
    r = scaf_run(["/usr/bin/env"], "--layer", "omp")
    assert r.returncode == 0 and "libscaf_omp.so" in r.stdout and "KMP_BLOCKTIME=1" in r.stdout, r.stdout
    r = scaf_run([exe, "--size", "S"], "--layer", "gomp", "--verbose")
    assert r.returncode == 0 and "layer libscaf_gomp.so" in r.stderr, r.stderr
    r = scaf_run([exe], "--layer", "nope")
    assert r.returncode == 2 and "invalid choice" in r.stderr, r.stderr


def test_scaf_run_says_at_once_when_it_cannot_steer(tmp_path: Path) -> None:
    """A program linked with TBB: one line on stderr, before the program's own output, and it still runs."""
    tbb = next(iter(sorted(Path("/usr/lib/x86_64-linux-gnu").glob("libtbb.so.*"))), None) \
        or next(iter(sorted(Path("/usr/lib").glob("**/libtbb.so.*"))), None)
    assert tbb is not None, "libtbb12 not installed (.ci/run installs it)"
    src = tmp_path / "t.c"
    src.write_text('#include <stdio.h>\nint main(void){puts("ran");return 3;}\n')
    exe = tmp_path / "tbbprog"
    subprocess.run(["gcc", "-o", str(exe), str(src), "-Wl,--no-as-needed", str(tbb)], check=True)
    r = scaf_run([str(exe)])
    assert r.returncode == 3 and r.stdout == "ran\n", (r.returncode, r.stdout)
    # Debian's libtbb12 (bookworm: 2021.8) predates oneTBB's TCM interface (2021.11): the line names the
    # version, as the package states it, and the reason.
    pkg = subprocess.run(["dpkg-query", "-W", "-f=${Version}", "libtbb12"], capture_output=True, text=True,
                         check=True).stdout
    version = ".".join(pkg.split(".")[:2])
    lines = r.stderr.splitlines()
    assert len(lines) == 1, r.stderr
    assert lines[0].startswith(f"scaf: tbbprog cannot be steered by scaf: oneTBB {version} ("), r.stderr
    assert lines[0].endswith("schedules its own worker threads and asks no Thread Composability Manager for them "
                             "(oneTBB does from 2021.11 on)"), r.stderr


def test_scaf_run_two_runtimes_runs_without_layer(tmp_path: Path) -> None:
    src = tmp_path / "t.c"
    src.write_text('#include <stdio.h>\n#include <stdlib.h>\n'
                   'int main(void){const char*p=getenv("LD_PRELOAD");puts(p?p:"none");return 0;}\n')
    exe = tmp_path / "both"
    subprocess.run(["gcc", "-o", str(exe), str(src), "-Wl,--no-as-needed", "-lgomp",
                    f"-L{IOMP5.parent}", f"-Wl,-rpath,{IOMP5.parent}", "-liomp5"], check=True)
    r = scaf_run([str(exe)])
    assert r.returncode == 0 and r.stdout == "none\n", r.stdout
    assert "loads two OpenMP runtimes" in r.stderr and "without the layer" in r.stderr, r.stderr


def test_status_shows_the_daemons_threads_over_a_window(probe: Path, scafd_factory: Callable[..., Daemon],
                                                       probes: Callable[..., tl.Probe]) -> None:
    """The daemon's status (`scaf status --json` once, then the socket directly), sampled for 2 s while a second client holds half of the contexts: the program is a
    client, the daemon gives it 2 of 4, and the teams its regions ran with (last_team) average exactly that."""
    import json
    import time

    d = scafd_factory("--policy", "equipartition", "--cpus", "4", "--no-lookout")
    env = layer_env(d.socket, {"OMP_NUM_THREADS": "4", **tl.NO_ESTIMATE})
    a = probes(probe, ["follow", "STOP", tl.MAXSEC], env)
    b = probes(probe, ["follow", "STOP", tl.MAXSEC], env)
    d.wait_for(lambda st: [tl.client(st, p)["threads"] if tl.client(st, p) else 0 for p in (a.pid, b.pid)] == [2, 2],
               what="2 each")
    a.wait_output(tl.last_team_is(a, 2), "A at 2 threads")
    r = subprocess.run([str(SCAF), "status", "--json", "--socket", d.socket], capture_output=True, text=True,
                       timeout=60, check=False)
    assert r.returncode == 0, r.stderr
    assert any(c["pid"] == a.pid and c["threads"] == 2 for c in json.loads(r.stdout)["clients"]), r.stdout
    samples = []
    deadline = time.monotonic() + 2.0
    while time.monotonic() < deadline:
        c = tl.client(d.status(), a.pid)
        assert c is not None
        samples.append((c["threads"], c["last_team"]))
        time.sleep(0.05)
    assert len(samples) >= 5, samples
    assert {t for t, _ in samples} == {2}, samples
    assert sum(team for _, team in samples) / len(samples) == 2, samples
    for p in (a, b):
        assert p.finish()[0] == 0


FORK_IF_PROG = r"""
#include <omp.h>
#include <stdio.h>
struct ident { int r1, flags, r2, r3; const char *psource; };
static struct ident loc = {0, 2, 0, 0, ";forkif.c;main;1;1;;"};
void __kmpc_fork_call_if(struct ident *, int, void (*)(int *, int *, void *), int, void *);
static void body(int *gtid, int *btid, void *arg)
{
    (void)gtid; (void)btid;
    if (omp_get_thread_num() == 0)
        *(int *)arg = omp_get_num_threads();
}
int main(void)
{
    int on = 0, off = 0;
    for (int i = 0; i < 50; i++) {
        __kmpc_fork_call_if(&loc, 1, body, 1, &on);
        __kmpc_fork_call_if(&loc, 1, body, 0, &off);
    }
    printf("on=%d off=%d\n", on, off);
    return 0;
}
"""


def test_fork_call_if_steered_once_and_false_left_alone(rt: str, scafd_factory: Callable[..., Daemon],
                                                        tmp_path: Path) -> None:
    """__kmpc_fork_call_if (libiomp5 has it): a true condition is steered and counted once, although the
    runtime passes it on to __kmpc_fork_call; a false one runs the runtime's serial path, not counted."""
    import json

    if rt != "libiomp5-clang":
        pytest.skip("called from a clang-built program on libiomp5 only (LLVM 14's libomp has no __kmpc_fork_call_if)")
    cc, link, _ = RUNTIMES[rt]
    src = tmp_path / "forkif.c"
    src.write_text(FORK_IF_PROG)
    exe = tmp_path / "forkif"
    subprocess.run([cc, "-O2", *link, "-o", str(exe), str(src)], check=True)
    plain = tl.run(exe, [], tl.plain_env({"OMP_NUM_THREADS": "3"}))
    assert plain.stdout.split() == ["on=3", "off=1"], plain.stdout
    d = scafd_factory("--policy", "equipartition", "--cpus", "1", "--no-lookout")
    rep = tmp_path / "rep.jsonl"
    r = tl.run(exe, [], layer_env(d.socket, {"OMP_NUM_THREADS": "3", "SCAF_REPORT": str(rep), **tl.NO_ESTIMATE}))
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["on=1", "off=1"], r.stdout
    assert json.loads(rep.read_text().splitlines()[-1])["regions"] == 50, rep.read_text()


def test_scaf_check_uses_the_runtimes_layer() -> None:
    """`scaf check` on a clang program preloads libscaf_omp.so: seeded teams are really tried (1 and 2)."""
    exe = paths.build_dir() / "workloads-clang" / "stencil"
    r = subprocess.run([str(SCAF), "check", "--no-memory", "--ignore", "time_s", "--", str(exe), "--size", "S"],
                       capture_output=True, text=True, timeout=600, check=False)
    assert r.returncode == 0, (r.stdout, r.stderr)
    out = r.stdout + r.stderr
    assert "verdict: malleable" in out and "teams 1,2 tried" in out, out


def test_scaf_run_says_when_the_runtime_is_linked_in(tmp_path: Path) -> None:
    """gcc -fopenmp -static: the program carries its own libgomp, which no preloaded layer reaches."""
    src = tmp_path / "s.c"
    src.write_text('#include <stdio.h>\nint main(void){int n=0;\n#pragma omp parallel reduction(+:n)\nn++;\n'
                   'printf("%d\\n",n>0);return 0;}\n')
    exe = tmp_path / "staticomp"
    subprocess.run(["gcc", "-fopenmp", "-static", "-o", str(exe), str(src)], check=True, capture_output=True)
    r = scaf_run([str(exe)])
    assert r.returncode == 0 and r.stdout == "1\n", (r.stdout, r.stderr)
    line = "scaf: staticomp cannot be steered by scaf: it contains a statically linked GNU libgomp, which scaf " \
           "cannot reach by preloading"
    assert r.stderr.splitlines() == [line], r.stderr
