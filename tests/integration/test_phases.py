"""No ratchet: a program the speedup policy held at one thread regains threads when its phase changes."""

from __future__ import annotations

import subprocess
import threading
import time
from collections.abc import Callable

import pytest
from conftest import Daemon, layer_env
from scaf.lib import paths
from test_estimate import Kept, client


def test_phases_workload_verifies_at_any_team() -> None:
    for threads in ("1", "3"):
        r = subprocess.run([str(paths.workload("phases")), "--size", "S"], env={"OMP_NUM_THREADS": threads},
                           capture_output=True, text=True, timeout=60, check=False)
        assert r.returncode == 0, r.stderr
        assert "phase=scalable" in r.stdout and "verified=yes" in r.stdout


def test_phase_change_regains_threads(scafd_factory: Callable[..., Daemon]) -> None:
    """phases (critical-section bound, then scalable) beside ep on 4 contexts. Held at one thread in its
    first phase, it must not stay there once its second phase runs: the daemon re-probes a client at one
    chunk after --probe-interval seconds (doubling, at most 4x, while probes find it serial), and
    without that it would hold exactly one thread for good.

    Averaged over 16 s after the change it holds more than one thread, and its model was refitted from
    reports at 2 or more threads after the change. How much more depends on the estimate: on a lightly
    loaded machine it reaches an equal share (2.0); under heavy foreign load the run-queue correction
    under-reads its second phase and it gets about 1.2 (docs/estimation.md, Noise)."""
    d = scafd_factory("--policy", "speedup", "--cpus", "4", "--no-lookout", "--probe-interval", "2")
    env = layer_env(d.socket, {"OMP_NUM_THREADS": "4"})
    p = subprocess.Popen([str(paths.workload("phases")), "--size", "A"], env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    changed = threading.Event()

    def watch() -> None:
        assert p.stdout is not None
        for line in p.stdout:
            if line.startswith("phase=scalable"):
                changed.set()

    threading.Thread(target=watch, daemon=True).start()
    ep = Kept("ep", env)  # ep --size A outlasts the test; were it to end, samples pause while a new one settles
    try:
        d.wait_for(lambda s: client(s, p.pid) is not None, timeout=20, what="phases a client")
        # Estimates settle: the first windows of phase 1 can read a high E, and damping waits for the noise
        # of E before it moves. Sampling starts once the policy first put it on one thread (at most 8 s:
        # phase 1 lasts about 10 s at size A, less on an idle machine).
        settle = time.monotonic() + 8.0
        while time.monotonic() < settle and not changed.is_set():
            c = client(d.status(), p.pid)
            if c and c["threads"] == 1 and time.monotonic() > settle - 6.0:
                break
            time.sleep(0.25)
        first: list[int] = []  # phase 1, between probes: a probe's share says nothing about the hold
        while not changed.is_set() and p.poll() is None:
            c = client(d.status(), p.pid)
            if ep.ready() and c and not c["probing"]:
                first.append(c["threads"])
            time.sleep(0.5)
        assert changed.is_set(), f"phases ended before its phase change (exit {p.poll()})"
        # The longest probe interval (2 s doubled twice after probes that found it serial), plus
        # the probe itself and time for the estimate at the new team.
        t_end = time.monotonic() + 11.0
        while time.monotonic() < t_end:
            ep.tick()
            time.sleep(0.5)
        later: list[dict] = []
        deadline = time.monotonic() + 16.0
        while time.monotonic() < deadline and p.poll() is None:
            c = client(d.status(), p.pid)
            if ep.ready() and c:
                later.append(c)
            time.sleep(0.5)
    finally:
        ep.stop()
        if p.poll() is None:
            p.kill()
        p.communicate(timeout=30)
    assert len(first) >= 3 and len(later) >= 12, (first, later)
    m1 = sum(first) / len(first)
    m2 = sum(c["threads"] for c in later) / len(later)
    # Phase 1 serialises: it sits at one thread between the probes (under load a probe lasts longer, up to
    # 5 s, which is why probe samples are left out of m1). When the estimate did not see that on
    # this run (its noise under load is an open problem of the speedup policy: docs/estimation.md, Noise), there
    # was no ratchet to escape and the rest says nothing; the closed loop is covered without noise by
    # tests/unit/test_policy.c (run_ratchet).
    if m1 >= 1.6:
        pytest.xfail(f"phase 1 was not held at one thread on this run (mean {m1:.2f}): nothing to regain")
    # Phase 2: not held at one thread (the ratchet gives exactly 1.0), and the model was refitted
    # from a report at 2 or more threads: its coefficient is the policy's fit, not the old one.
    assert m2 > 1.05, (m1, m2, [c["threads"] for c in later])
    assert any(c["eff_threads"] >= 2 for c in later), [(c["threads"], c["eff_threads"]) for c in later]
