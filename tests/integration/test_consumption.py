"""The consumption policy end to end: a memory-bound program alone is not given the whole machine."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable

from conftest import UNTIL_KILLED, Daemon, layer_env
from scaf.lib import paths
from test_estimate import client


def test_stream_alone_gets_fewer_threads_than_the_machine(scafd_factory: Callable[..., Daemon]) -> None:
    """stream alone, told it has 16 contexts, with SCAF_LAZY=0 so that it is measured while alone.
    Under equipartition it would hold all 16 (the only client); under speedup, 16 until a shrink probe
    (half its allocation) shows its curve peaking. Under consumption it holds
    what its measured curve says is worth it: averaged over 10 s, at most 14, and never 0. On a machine
    with fewer than 12 real cores 16 threads cannot have E above 12/16, and stream saturates memory
    bandwidth long before 16 threads on any machine this runs on, so its modelled gain per context at
    12 and beyond is below the default min_gain (0.5). The bound is 14, not 12: the estimate moves with the
    machine's load and a mean of 12.3 was seen on a loaded 2-core machine."""
    d = scafd_factory("--policy", "consumption", "--cpus", "16", "--no-lookout")
    env = layer_env(d.socket, {"SCAF_LAZY": "0", "OMP_NUM_THREADS": "16"})
    p = subprocess.Popen([str(paths.workload("stream")), "--size", "A", *UNTIL_KILLED], env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    samples: list[int] = []
    try:
        d.wait_for(lambda s: client(s, p.pid) is not None, timeout=20, what="stream a client")
        time.sleep(4.0)  # the first estimates
        deadline = time.monotonic() + 10.0
        while time.monotonic() < deadline and p.poll() is None:
            c = client(d.status(), p.pid)
            if c:
                samples.append(c["threads"])
            time.sleep(0.5)
    finally:
        if p.poll() is None:
            p.kill()
        p.communicate(timeout=30)
    assert len(samples) >= 10, f"stream ended early ({len(samples)} samples)"
    mean = sum(samples) / len(samples)
    assert min(samples) >= 1
    assert mean <= 14, (mean, samples)
