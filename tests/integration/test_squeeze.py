"""Never squeeze, end to end: while real programs run under a daemon, no `scaf status` sample shows a
client confined to fewer CPUs than the team it runs (outside gang turns), whether its team comes from
the program's default (steered), a num_threads clause other than the default, a fixed verdict or a
long region. The daemons pin placed teams (--placement cpuset): the default leaves them unconfined, where
nothing can squeeze them. The invariant over the referee's whole input space is test_daemon_referee's."""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from conftest import UNTIL_KILLED, Daemon, Hold, layer_env, parse_result, scaled, wl_env
from scaf.lib import paths
from test_experiment import build_prog

TIMEOUT = 300

# A num_threads clause of 2 in every region, whatever the program's default: a team the layer keeps.
# It runs until the file argv[1] names exists (looked for every 1000 regions).
CLAUSE2 = r"""
#include <omp.h>
#include <stdio.h>
#include <unistd.h>
int main(int argc, char **argv) {
    long sum = 0, it = 0;
    if (argc != 2)
        return 2;
    do {
        for (int k = 0; k < 1000; k++, it++) {
#pragma omp parallel for num_threads(2) reduction(+ : sum) schedule(static)
            for (int i = 0; i < 2048; i++)
                sum += i & 7;
        }
    } while (access(argv[1], F_OK) != 0);
    printf("sum=%ld regions=%ld\n", sum, it);
    return sum == it * 7168 ? 0 : 1;
}
"""


def samples_while(d: Daemon, procs: list[subprocess.Popen[str]], min_s: float = 3.0) -> list[dict]:
    """Status samples every 0.1 s until every program ended (at least min_s of them, or all of the run)."""
    out: list[dict] = []
    start = time.monotonic()
    while time.monotonic() - start < TIMEOUT:
        out.append(d.status())
        if all(p.poll() is not None for p in procs) and time.monotonic() - start >= min_s:
            break
        if all(p.poll() is not None for p in procs):
            break
        time.sleep(0.1)
    else:
        raise AssertionError(f"the programs did not end within {TIMEOUT} s")
    return out


def samples_for(d: Daemon, seconds: float) -> list[dict]:
    """Status samples every 0.1 s for `seconds`."""
    out: list[dict] = []
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        out.append(d.status())
        time.sleep(0.1)
    return out


def squeezed(samples: list[dict], pids: set[int]) -> list[tuple[int, int, list[int]]]:
    """(pid, team, cpuset) of every sample where a client under CPU-set control had fewer CPUs than
    the team of its latest region, outside gang turns. The set lists real CPUs: under `--cpus N` above
    the machine's count, a block of virtual contexts maps onto at most every real CPU (a team of 3
    placed on contexts 0-2 of `--cpus 4` runs on CPUs 0,1 of a 2-CPU machine), so a set holding every
    CPU the daemon has squeezes nothing."""
    real = len(os.sched_getaffinity(0))
    bad = []
    for st in samples:
        for c in st["clients"]:
            if c["pid"] in pids and c["control"] == "cpuset" and c["gang"] == 0 \
                    and min(c["last_team"], real) > len(c["cpuset"]):
                bad.append((c["pid"], c["last_team"], c["cpuset"]))
    return bad


def start(argv: list[str], env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_two_explicit_programs_are_steered_not_squeezed(scafd_factory: Callable[..., Daemon]) -> None:
    """Two copies of `explicit` (Cython's prange: num_threads(omp_get_max_threads()) in every short,
    barrier-heavy region) on 2 contexts. Their clause is their own default, so both are steered to
    one thread each while they run together: the teams they report average well below 2, no sample
    shows a confined team larger than its set, and both verify with the plain checksum."""
    wl = str(paths.workload("explicit"))
    plain = subprocess.run([wl, "--size", "S"], capture_output=True, text=True, timeout=TIMEOUT, check=True,
                           env=wl_env({"OMP_NUM_THREADS": "2"}))
    d = scafd_factory("--policy", "equipartition", "--cpus", "2", "--no-lookout", "--placement", "cpuset")
    env = layer_env(d.socket, {"OMP_NUM_THREADS": "2"})
    # Each repeats its job (--until) until both have been sampled running together for 3 s.
    hold = Hold()
    procs = [start([wl, "--size", "S", *hold.args()], env) for _ in range(2)]
    pids = {p.pid for p in procs}
    try:
        d.wait_for(lambda st: len([c for c in st["clients"] if c["pid"] in pids and c["regions"] > 0]) == 2,
                   what="both running", timeout=60)
        samples = samples_for(d, 3.0)
        hold.release()
        samples += samples_while(d, procs)
    finally:
        hold.release()
        outs = [p.communicate(timeout=TIMEOUT) for p in procs]
    assert not squeezed(samples, pids), squeezed(samples, pids)
    both = [st for st in samples if len([c for c in st["clients"] if c["pid"] in pids and c["regions"] > 0]) == 2]
    assert len(both) >= 5, f"the two ran together for {len(both)} samples only"
    teams = [c["last_team"] for st in both for c in st["clients"] if c["pid"] in pids]
    assert sum(teams) / len(teams) < 1.5, teams
    checksum = next(ln for ln in plain.stdout.splitlines() if ln.startswith("checksum="))
    for p, (out, err) in zip(procs, outs, strict=True):
        assert p.returncode == 0 and parse_result(out)["verified"] == "yes", out + err
        assert checksum in out.splitlines(), out


def test_a_clause_other_than_the_default_gets_cpus_of_its_own(scafd_factory: Callable[..., Daemon],
                                                              tmp_path: Path) -> None:
    """num_threads(2) in a program whose default is 4: the layer keeps the clause, the page reports
    the team, and the daemon (4 contexts) places it on a set of 2 CPUs of its own beside a steered
    program, which gets the rest; never fewer CPUs than the team."""
    src = tmp_path / "clause2.c"
    src.write_text(CLAUSE2)
    exe = tmp_path / "clause2"
    subprocess.run(["gcc", "-O2", "-fopenmp", str(src), "-o", str(exe)], check=True, capture_output=True)
    d = scafd_factory("--policy", "equipartition", "--cpus", "4", "--no-lookout", "--placement", "cpuset")
    env = layer_env(d.socket, {"OMP_NUM_THREADS": "4"})
    hold = Hold()
    procs = [start([str(exe), str(hold.path)], env),
             start([str(paths.workload("ep")), "--size", "W", *UNTIL_KILLED], env)]
    try:
        st = d.wait_for(lambda s: any(c["pid"] == procs[0].pid and c["rigid_team"] == 2 and c["control"] == "cpuset"
                                      for c in s["clients"]), what="the clause's team placed", timeout=60)
        c = next(c for c in st["clients"] if c["pid"] == procs[0].pid)
        assert c["threads"] == 2 and c["share"] == 2 and c["malleable"], c
        samples = samples_for(d, 1.0)
        hold.release()
        samples += samples_while(d, procs[:1])
        assert procs[0].wait(timeout=TIMEOUT) == 0, "the clause's sums are wrong"
    finally:
        hold.release()
        for p in procs:
            if p.poll() is None:
                p.kill()
            p.communicate(timeout=TIMEOUT)
    assert not squeezed(samples, {procs[0].pid, procs[1].pid}), squeezed(samples, {procs[0].pid, procs[1].pid})


def test_a_long_region_keeps_its_team_and_gets_cpus_for_it(scafd_factory: Callable[..., Daemon]) -> None:
    """A region past SCAF_LONG_REGION_S runs the team it started with until it returns: the daemon
    places that team (never confines it to a smaller share), and steers it again after. The first
    region of each program lasts until the test has seen it placed and sampled it, however fast the
    machine (slowregions --hold), then short regions follow."""
    d = scafd_factory("--policy", "equipartition", "--cpus", "4", "--no-lookout", "--placement", "cpuset")
    env = layer_env(d.socket, {"OMP_NUM_THREADS": "4", "SCAF_LONG_REGION_S": "0.2"})
    hold = Hold()
    prog = str(build_prog("slowregions"))
    procs = [start([prog, *hold.args("--hold"), "--regions", "40", "--iters", str(scaled(200_000, 1000))], env)
             for _ in range(2)]
    try:
        d.wait_for(lambda s: sum(1 for c in s["clients"] if c["long_region"] and c["rigid_team"] >= 2) == 2,
                   what="both long regions placed", timeout=120)
        held = samples_for(d, 2.0)
        hold.release()
        samples = held + samples_while(d, procs)
    finally:
        hold.release()
        for p in procs:
            if p.poll() is None:
                p.kill()
        outs = [p.communicate(timeout=TIMEOUT) for p in procs]
    pids = {p.pid for p in procs}
    assert not squeezed(samples, pids), squeezed(samples, pids)
    for p, (out, err) in zip(procs, outs, strict=True):
        assert p.returncode == 0 and "region=39" in out, out + err
