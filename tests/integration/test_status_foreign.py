"""`scaf status` names the busy processes that are not clients, and says why (real daemon, real /proc).

The daemon's lookout must be on here. Other busy processes of the machine may be listed too;
the checks look only at the processes each test started.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Callable, Iterator

import pytest
from conftest import SCAF, UNTIL_KILLED, Daemon, layer_env
from scaf.lib import paths

# Runs until the test kills it, however fast the machine.
SPIN = [str(paths.workload("spin")), "--size", "A", *UNTIL_KILLED]
# Active waiting: at barriers its threads spin instead of sleeping, so on a machine that other programs
# oversubscribe its CPU use stays its full share of the time slices and above the listing threshold.
QUIET = {"OMP_NUM_THREADS": "2", "OMP_WAIT_POLICY": "active"}


@pytest.fixture
def started() -> Iterator[list[subprocess.Popen]]:
    procs: list[subprocess.Popen] = []
    yield procs
    for p in procs:
        if p.poll() is None:
            p.kill()
            p.wait()


def foreign_of(st: dict, pid: int) -> dict | None:
    return next((p for p in st.get("foreign_procs", []) if p.get("pid") == pid), None)


def test_unmodified_openmp_program_is_named_with_reason(scafd_factory: Callable[..., Daemon],
                                                        started: list[subprocess.Popen]) -> None:
    """A plain libgomp program (no scaf run) and one whose layer is switched off, side by side."""
    d = scafd_factory("--policy", "equipartition", "--cpus", "2")
    plain = subprocess.Popen(SPIN, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                             env=dict(os.environ, **QUIET))
    started.append(plain)
    off = subprocess.Popen(SPIN, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                           env=layer_env(d.socket, {**QUIET, "SCAF_DISABLE": "1"}))
    started.append(off)
    st = d.wait_for(lambda st: foreign_of(st, plain.pid) is not None and foreign_of(st, off.pid) is not None,
                    timeout=30, what="both programs listed as foreign")
    assert not st["clients"], "neither may be a client"
    p = foreign_of(st, plain.pid)
    assert p is not None
    assert p["name"] == "spin" and p["cmd"] == "spin"
    assert p["uid"] == os.getuid()
    assert p["cpu"] >= 0.2
    assert p["reason"] == "not started under scaf run (uses libgomp)"
    o = foreign_of(st, off.pid)
    assert o is not None and o["reason"] == "layer inert: SCAF_DISABLE=1"

    # The human table: a section of its own, with the name, the user and the reason. The machine is
    # shared, so the program may dip below the threshold for a moment: ask again until it shows.
    deadline = time.monotonic() + 60
    row = None
    while row is None and time.monotonic() < deadline:
        r = subprocess.run([str(SCAF), "status", "--socket", d.socket], capture_output=True, text=True,
                           timeout=30, check=False)
        assert r.returncode == 0, r.stderr
        row = next((ln for ln in r.stdout.splitlines() if ln.split()[:1] == [str(plain.pid)]), None)
        if row is None:
            time.sleep(0.3)
    assert row is not None, r.stdout
    assert "not steered (foreign load)" in r.stdout
    assert "spin" in row and "not started under scaf run (uses libgomp)" in row

    # A program that becomes a client leaves the list.
    plain.kill()
    plain.wait()
    client = subprocess.Popen(SPIN, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              env=layer_env(d.socket, QUIET))
    started.append(client)
    st = d.wait_for(lambda st: any(c["pid"] == client.pid for c in st["clients"]), timeout=30,
                    what="the program under the layer as a client")
    d.wait_for(lambda st: foreign_of(st, plain.pid) is None, timeout=10, what="the killed program gone from the list")
    for _ in range(3):
        st = d.status()
        assert foreign_of(st, client.pid) is None, "a client listed as foreign"
        time.sleep(0.5)


def test_a_onetbb_program_that_asks_a_tcm_is_named_as_one_scaf_run_would_steer(
        scafd_factory: Callable[..., Daemon], started: list[subprocess.Popen]) -> None:
    """pip's oneTBB (2021.11 or later: it asks a TCM for its workers) run plain: scaf run would steer it."""
    tbb_for = paths.build_dir() / "tbb" / "tbb_for"
    if not tbb_for.exists():
        pytest.skip(f"{tbb_for} is not built (make tbb-progs)")
    d = scafd_factory("--policy", "equipartition", "--cpus", "2")
    plain = subprocess.Popen([str(tbb_for), "--n", "2000000", "--rounds", "1000000"], stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL, env=dict(os.environ))
    started.append(plain)
    st = d.wait_for(lambda st: foreign_of(st, plain.pid) is not None, timeout=60, what="the oneTBB program listed")
    p = foreign_of(st, plain.pid)
    assert p is not None and p["name"] == "tbb_for"
    assert p["reason"] == "not started under scaf run (uses libtbb)", p


def test_no_lookout_no_list(scafd_factory: Callable[..., Daemon], started: list[subprocess.Popen]) -> None:
    """--no-lookout: no /proc walk at all; the field is there and empty."""
    d = scafd_factory("--policy", "equipartition", "--cpus", "2", "--no-lookout")
    plain = subprocess.Popen(SPIN, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                             env=dict(os.environ, **QUIET))
    started.append(plain)
    for _ in range(3):
        st = d.wait_for(lambda st: st["time"] > 0, what="status")
        assert st["foreign_procs"] == []
    r = subprocess.run([str(SCAF), "status", "--json", "--socket", d.socket], capture_output=True, text=True,
                       timeout=30, check=False)
    assert r.returncode == 0 and json.loads(r.stdout)["foreign_procs"] == []


# A spinning program of many threads: beside a machine's other load it still keeps more than one context busy,
# so that taking it away frees at least one whole context (the lookout rounds what it subtracts).
WIDE = {"OMP_NUM_THREADS": "8", "OMP_WAIT_POLICY": "active"}


def freed_at_once(d: Daemon, started: list[subprocess.Popen], read: Callable[[], int]) -> tuple[int, int]:
    """(read() while a wide spinning program is counted as foreign load, read() at once after it was killed).
    Another program's load may change in between, when a lookout sample falls there: tried again a few times,
    and the first try that shows the context freed is the answer (else the last)."""
    got = (0, 0)
    for _ in range(4):
        spin = subprocess.Popen(SPIN, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=dict(os.environ, **WIDE))
        started.append(spin)
        # A whole context at least: what the lookout rounds then loses one context when it goes, whatever the
        # rest of the foreign load (lround(x) - lround(x - 1) is 1 for x >= 1). More is not asked for: on a machine
        # loaded by others (three busy processes beside it on 2 CPUs) the 8 threads got just one.
        d.wait_for(lambda st, pid=spin.pid: (p := foreign_of(st, pid)) is not None and p["cpu"] >= 1.0
                   and st["available"] <= 7, timeout=120, what="the spinning program counted as foreign load")
        before = read()
        spin.kill()
        spin.wait()
        # At once, before the lookout's next sample could lower its average: the program that ended is not counted.
        got = (before, read())
        if got[1] >= got[0] + 1:
            break
        d.wait_for(lambda st, pid=spin.pid: foreign_of(st, pid) is None, timeout=60, what="the killed program gone")
    return got


def test_a_start_team_is_not_sized_by_foreign_load_that_has_ended(scafd_factory: Callable[..., Daemon],
                                                                   started: list[subprocess.Popen]) -> None:
    """The lookout's moving average outlives a foreign program by seconds; a start team, kept for a program's
    whole run, counts only the foreign processes still there (docs/memory.md, "The start team")."""
    from scaf.lib import proto

    d = scafd_factory("--policy", "equipartition", "--cpus", "8")
    before, after = freed_at_once(d, started, lambda: proto.memory(d.socket, proto.MEMORY_RECALL, 0xF00D, 8).start_team)
    assert after >= before + 1, (before, after)


def test_allocations_are_not_sized_by_foreign_load_that_has_ended(scafd_factory: Callable[..., Daemon],
                                                                   started: list[subprocess.Popen]) -> None:
    """The same for what the referee hands out: a client that arrives, or a turn that comes, just after a foreign
    program ended is sized without it, not held below the CPUs it freed while the average decays (a program run
    under scaf right after a plain one took 1.5X its time alone)."""
    d = scafd_factory("--policy", "equipartition", "--cpus", "8")
    # What status shows is what the referee allocates from.
    before, after = freed_at_once(d, started, lambda: d.status()["available"])
    assert after >= before + 1, (before, after)
