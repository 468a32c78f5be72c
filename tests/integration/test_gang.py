"""Fixed teams that together need more contexts than the daemon has take turns (gangs).

Real daemon, real layer, the `fixed` workload (it calls omp_set_num_threads and numbers its
threads, so its team is fixed). The daemon believes it has 2 contexts and each program keeps a team of 2.
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable

from conftest import Daemon, Hold, layer_env, parse_result
from scaf.lib import paths
from test_experiment import build_prog

TIMEOUT = 180


def start_fixed(d: Daemon, hold: Hold) -> subprocess.Popen[str]:
    """`fixed` under the layer, running until the test releases `hold` (however fast the machine)."""
    env = layer_env(d.socket, {"OMP_NUM_THREADS": "2"})
    return subprocess.Popen([str(paths.workload("fixed")), "--size", "S", *hold.args()], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def finish(p: subprocess.Popen[str], hold: Hold) -> dict[str, str]:
    hold.release()
    out, err = p.communicate(timeout=TIMEOUT)
    assert p.returncode == 0, err
    return parse_result(out)


def regions(st: dict, pid: int) -> int:
    return next((c["regions"] for c in st["clients"] if c["pid"] == pid), -1)


def test_fixed_teams_that_do_not_fit_take_turns(scafd_factory: Callable[..., Daemon]) -> None:
    d = scafd_factory("--policy", "equipartition", "--cpus", "2", "--no-lookout", "--gang-quantum", "50")
    hold = Hold()
    a, b = start_fixed(d, hold), start_fixed(d, hold)
    try:
        # Both judged fixed (omp_set_num_threads, then a region numbering its threads: at the end of
        # its first region), then two gangs.
        # Never squeezed: each keeps its team and is not confined. (A status shows the page as it is
        # now and the allocation of the last referee turn: wait for the turn after both were fixed.)
        st = d.wait_for(
            lambda st: sorted((c["gang"], c["verdict"], c["threads"], len(c["cpuset"]), c["control"])
                              for c in st["clients"] if c["pid"] in (a.pid, b.pid))
            == [(1, "fixed", 2, 0, "threads"), (2, "fixed", 2, 0, "threads")],
            what="two gangs of fixed teams, unconfined",
            timeout=30,
        )
        # Over a window, both make progress: turns, not starvation. Both still run (held).
        r0 = {p.pid: regions(st, p.pid) for p in (a, b)}
        time.sleep(1.5)
        st = d.status()
        assert all(regions(st, p.pid) > r0[p.pid] >= 0 for p in (a, b)), (r0, st)
    finally:
        ra, rb = finish(a, hold), finish(b, hold)
    assert ra["verified"] == rb["verified"] == "yes"


def test_gangs_off_leaves_them_unconfined(scafd_factory: Callable[..., Daemon]) -> None:
    d = scafd_factory("--policy", "equipartition", "--cpus", "2", "--no-lookout", "--gang-quantum", "0")
    hold = Hold()
    a, b = start_fixed(d, hold), start_fixed(d, hold)
    try:
        st = d.wait_for(
            lambda st: len([c for c in st["clients"] if c["verdict"] == "fixed" and not c["malleable"]]) == 2,
            what="two fixed clients",
            timeout=30,
        )
        assert all(c["gang"] == 0 and c["cpuset"] == [] and c["threads"] == 2 for c in st["clients"]), st
    finally:
        assert finish(a, hold)["verified"] == finish(b, hold)["verified"] == "yes"


def test_daemon_killed_mid_turn_never_hangs_a_waiting_team(scafd_factory: Callable[..., Daemon]) -> None:
    """A client told to wait keeps the word on its page when the daemon dies; its wait is bounded."""
    d = scafd_factory("--policy", "equipartition", "--cpus", "2", "--no-lookout", "--gang-quantum", "60000")
    hold = Hold()
    a, b = start_fixed(d, hold), start_fixed(d, hold)
    try:
        d.wait_for(lambda st: sorted(c["gang"] for c in st["clients"]) == [1, 2], what="two gangs", timeout=30)
    finally:
        assert d.proc is not None
        d.proc.kill()
        d.proc.wait()
    # The one whose turn never came finishes anyway (each region waits at most a second).
    assert finish(a, hold)["verified"] == finish(b, hold)["verified"] == "yes"


def test_a_newcomer_that_has_opened_no_region_takes_no_turn(scafd_factory: Callable[..., Daemon]) -> None:
    """A program's start (an interpreter's imports) runs whatever the turn: a turn of its own would only hold
    the fixed team that fills the machine. So the fixed team runs on, the newcomer gets one chunk, and the
    turns begin at the newcomer's first region."""
    d = scafd_factory("--policy", "equipartition", "--cpus", "2", "--no-lookout", "--gang-quantum", "50")
    hold, serial, first = Hold(), Hold("serial"), Hold("first")
    a = start_fixed(d, hold)
    b = None
    try:
        d.wait_for(lambda st: [(c["verdict"], c["threads"]) for c in st["clients"]] == [("fixed", 2)],
                   what="a fixed team of 2 on 2 contexts", timeout=30)
        # Its start: serial work after touching OpenMP (so it is a client), then a first region held open.
        b = subprocess.Popen([str(build_prog("slowregions")), "--serial-hold", str(serial.path), "--hold",
                              str(first.path), "--regions", "2", "--iters", "1000"],
                             env=layer_env(d.socket), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

        def both(st: dict) -> list[dict]:
            return sorted((c for c in st["clients"] if c["pid"] in (a.pid, b.pid)), key=lambda c: c["pid"] != a.pid)

        # The referee's turn with both: the fixed team unconfined and in no gang, the newcomer one chunk.
        st = d.wait_for(lambda st: [(c["regions"] == 0, c["share"], c["gang"]) for c in both(st)][1:] == [(True, 1, 0)],
                        what="the newcomer placed beside the fixed team", timeout=30)
        assert [(c["gang"], c["threads"], c["control"]) for c in both(st)] == [(0, 2, "threads"), (0, 1, "threads")]
        # The same over a window while it is still in its start: the fixed team is never held for it.
        r0 = regions(st, a.pid)
        for _ in range(10):
            time.sleep(0.1)
            st = d.status()
            assert [c["gang"] for c in both(st)] == [0, 0], st
        assert regions(st, a.pid) > r0 >= 0, "the fixed team ran all along"
        # Its first region: now it takes turns with the fixed team (the steered clients' gang).
        serial.release()
        d.wait_for(lambda st: [c["gang"] for c in both(st)] == [1, 2], what="turns after its first region",
                   timeout=30)
    finally:
        first.release()
        serial.release()
        if b is not None:
            out, err = b.communicate(timeout=TIMEOUT)
            assert b.returncode == 0 and "checksum=" in out, err
        assert finish(a, hold)["verified"] == "yes"
