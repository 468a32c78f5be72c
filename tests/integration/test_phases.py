"""No ratchet: a program the speedup policy held at one thread regains threads when its phase changes."""

from __future__ import annotations

import subprocess
import threading
import time
from collections.abc import Callable

import pytest
from conftest import Daemon, Hold, layer_env, wl_env
from scaf.lib import paths
from test_estimate import Kept, client


def test_phases_workload_verifies_at_any_team() -> None:
    for threads in ("1", "3"):
        r = subprocess.run([str(paths.workload("phases")), "--size", "S"], env=wl_env({"OMP_NUM_THREADS": threads}),
                           capture_output=True, text=True, timeout=60, check=False)
        assert r.returncode == 0, r.stderr
        assert "phase=scalable" in r.stdout and "verified=yes" in r.stdout


def test_phase_change_regains_threads(scafd_factory: Callable[..., Daemon]) -> None:
    """phases (critical-section bound, then scalable) beside ep on 4 contexts. Held at one thread in its
    first phase, it must not stay there once its second phase runs: the daemon re-probes a client at one
    chunk after --probe-interval seconds (doubling, at most 4x, while probes find it serial), and
    without that it would hold exactly one thread for good.

    The test makes each condition it judges instead of counting on a size to last: phase 1 goes on
    (--switch) until the policy has held it at one thread over a window of samples, phase 2 (--until)
    until the window after the change is sampled. Averaged over 16 s after the change it holds more
    than one thread, and its model was refitted from reports at 2 or more threads after the change.
    How much more depends on the estimate: on a lightly loaded machine it reaches an equal share (2.0);
    under heavy foreign load the run-queue correction under-reads its second phase and it gets about
    1.2 (docs/estimation.md, Noise)."""
    d = scafd_factory("--policy", "speedup", "--cpus", "4", "--no-lookout", "--probe-interval", "2")
    env = layer_env(d.socket, {"OMP_NUM_THREADS": "4"})
    switch, until = Hold("switch"), Hold("until")
    p = subprocess.Popen([str(paths.workload("phases")), "--size", "S", *switch.args("--switch"), *until.args()],
                         env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    changed = threading.Event()
    out: list[str] = []

    def watch() -> None:
        assert p.stdout is not None
        for line in p.stdout:
            out.append(line)
            if line.startswith("phase=scalable"):
                changed.set()

    threading.Thread(target=watch, daemon=True).start()
    ep = Kept("ep", env)  # runs until stopped; were it to end, samples pause while a new one settles
    try:
        d.wait_for(lambda s: client(s, p.pid) is not None, timeout=20, what="phases a client")
        # Phase 1 between probes (a probe's share says nothing about the hold), until the last 8 such
        # samples average under 1.6 threads: the policy holds it at one thread. Estimates settle first:
        # the first windows of phase 1 can read a high E, and damping waits for the noise of E.
        first: list[int] = []
        deadline = time.monotonic() + 90.0
        while time.monotonic() < deadline and p.poll() is None:
            c = client(d.status(), p.pid)
            if ep.ready() and c and not c["probing"]:
                first.append(c["threads"])
            if len(first) >= 8 and sum(first[-8:]) / 8 < 1.6:
                break
            time.sleep(0.5)
        assert p.poll() is None, f"phases ended in its first phase (exit {p.poll()})"
        held = first[-8:]
        switch.release()
        assert changed.wait(timeout=60), "phases did not begin its second phase"
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
        assert p.poll() is None, f"phases ended in its second phase (exit {p.poll()})"
    finally:
        switch.release()
        until.release()
        ep.stop()
        try:
            p.wait(timeout=120)
        finally:
            if p.poll() is None:
                p.kill()
    assert p.returncode == 0 and any("verified=yes" in ln for ln in out), "".join(out)
    assert len(held) == 8 and len(later) >= 12, (first, later)
    m1 = sum(held) / len(held)
    m2 = sum(c["threads"] for c in later) / len(later)
    # Phase 1 serialises: it sits at one thread between the probes (under load a probe lasts longer, up to
    # 5 s, which is why probe samples are left out of m1). When the estimate did not see that within 90 s
    # (its noise under load is an open problem of the speedup policy: docs/estimation.md, Noise), there
    # was no ratchet to escape and the rest says nothing; the closed loop is covered without noise by
    # tests/unit/test_policy.c (run_ratchet).
    if m1 >= 1.6:
        pytest.xfail(f"phase 1 was not held at one thread within 90 s (mean {m1:.2f}): nothing to regain")
    # Phase 2: not held at one thread (the ratchet gives exactly 1.0), and the model was refitted
    # from a report at 2 or more threads: its coefficient is the policy's fit, not the old one.
    assert m2 > 1.05, (m1, m2, [c["threads"] for c in later])
    assert any(c["eff_threads"] >= 2 for c in later), [(c["threads"], c["eff_threads"]) for c in later]
