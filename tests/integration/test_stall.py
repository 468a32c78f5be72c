"""The stall net (docs/layer.md, "The stall net"), with real daemons and real OpenMP processes.

tests/progs/handshake.c has regions of work items that wait for each other, in two shapes. `items` splits its
work by a count read outside the region, one item a thread, as OpenBLAS's exec_blas does: its calls are those
of any static loop, so the evidence rule steers it, and with fewer threads than items it never returns. The
net says so once, fixes the program, and the memory keeps it fixed: the next run finishes. `team` sizes its
handshake by the team it has, and is right at any team: steered, it finishes, and the net stays silent. So
does it for a region that computes past its limit with fewer threads than it asked for.

The daemon believes in 2 contexts and the programs ask for 4 (OMP_NUM_THREADS), so every steered region runs
with fewer threads than it asked for. SCAF_STALL_S=1: the net looks after a second. No timing is asserted: a
stalled region stays stalled for as long as the test waits, and the waits are for what the net says.
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from conftest import SCAF, Daemon, Hold, scaled, short_tmpdir
from test_experiment import build_prog

ENV = {"OMP_NUM_THREADS": "4", "SCAF_STALL_S": "1", "SCAF_VERBOSE": "1"}
SAID = "while its thread only yields or waits"


class Prog:
    """One program under `scaf run --no-start`, output in files."""

    def __init__(self, socket: str, argv: list[str], env: dict[str, str] | None = None):
        d = short_tmpdir()
        self.out, self.err = os.path.join(d, "out"), os.path.join(d, "err")
        with open(self.out, "wb") as o, open(self.err, "wb") as e:
            self.t0 = time.monotonic()
            self.proc = subprocess.Popen([str(SCAF), "run", "--no-start", "--socket", socket, "--", *argv],
                                         stdout=o, stderr=e, env=dict(os.environ, **ENV, **(env or {})))

    def stdout(self) -> str:
        return Path(self.out).read_text()

    def stderr(self) -> str:
        return Path(self.err).read_text()

    def wait_for(self, text: str, timeout: float, stream: str = "stderr") -> float:
        """Wait until `text` is in the stream; return the seconds since the program started."""
        read = self.stderr if stream == "stderr" else self.stdout
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if text in read():
                return time.monotonic() - self.t0
            if self.proc.poll() is not None:
                break
            time.sleep(0.1)
        pytest.fail(f"no {text!r} on {stream} (exit {self.proc.poll()}) after {time.monotonic() - self.t0:.0f} s: "
                    f"stdout {self.stdout()[-500:]!r}\nstderr {self.stderr()[-3000:]}")

    def finish(self, timeout: float = 120) -> str:
        try:
            rc = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            pytest.fail(f"still running after {timeout} s: {self.stderr()[-3000:]}")
        assert rc == 0 and "done" in self.stdout(), f"exit {rc}: {self.stderr()[-3000:]}"
        return self.stdout()

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


@pytest.fixture
def progs() -> Iterator[list[Prog]]:
    started: list[Prog] = []
    yield started
    for p in started:
        p.kill()


def teams(out: str) -> list[int]:
    return [int(ln.split("team=")[1]) for ln in out.splitlines() if ln.startswith("round=")]


def client(st: dict) -> dict | None:
    cs = st.get("clients", [])
    return cs[0] if cs else None


def test_items_that_wait_for_each_other_stall_once_and_keep_their_team_from_then_on(
        scafd_factory: Callable[..., Daemon], progs: list[Prog]) -> None:
    d = scafd_factory("--cpus", "2", "--no-lookout")
    exe = str(build_prog("handshake"))
    first = Prog(d.socket, [exe, "items", "1000000"])
    progs.append(first)
    # The first look runs at the team the program saw; the next instance, steered to 2 of 4, never returns.
    # The net looks at it once it has run ten times what the first look says it takes at 2 threads (the
    # first look's time, twice): on a loaded machine where the first look was slow, that is later.
    first_look_s = first.wait_for("round=1 ", timeout=120, stream="stdout")
    first.wait_for(SAID, timeout=60 + 30 * first_look_s)
    err = first.stderr()
    line = next(ln for ln in err.splitlines() if SAID in ln)
    # Said whatever SCAF_VERBOSE says, naming the program, the region and the team it had.
    assert line.startswith("scaf: handshake (pid ") and "with 2 of the 4 threads it asked for" in line, line
    assert err.count(SAID) == 1, err
    st = d.wait_for(lambda st: (c := client(st)) is not None and c.get("verdict") == "fixed", timeout=30,
                    what="the program fixed by the net")
    c = client(st)
    assert c["verdict_source"] == "evidence" and "its thread only yielding or waiting" in c["reason"], c
    assert teams(first.stdout()) == [4], "only the first look finished"
    first.kill()
    d.wait_for(lambda st: not st.get("clients"), timeout=30, what="the stalled program gone")

    # The memory keeps it: the next run keeps its team at every region, and finishes.
    rounds = str(scaled(40))
    second = Prog(d.socket, [exe, "items", rounds])
    progs.append(second)
    out = second.finish()
    assert teams(out) == [4] * int(rounds), out[-2000:]
    assert SAID not in second.stderr()
    assert "remembered: a region of this program stalled" in second.stderr(), second.stderr()[-3000:]


def test_a_handshake_sized_by_its_own_team_is_steered_and_finishes(scafd_factory: Callable[..., Daemon],
                                                                   progs: list[Prog]) -> None:
    d = scafd_factory("--cpus", "2", "--no-lookout")
    rounds = scaled(40)
    p = Prog(d.socket, [str(build_prog("handshake")), "team", str(rounds)])
    progs.append(p)
    got = teams(p.finish())
    assert len(got) == rounds and 2 in got, got
    assert SAID not in p.stderr()


def test_a_region_that_computes_past_the_limit_is_left_alone(scafd_factory: Callable[..., Daemon],
                                                             progs: list[Prog]) -> None:
    """A first region held computing, at 2 of the 4 threads it asked for, well past SCAF_STALL_S: not a stall."""
    d = scafd_factory("--cpus", "2", "--no-lookout")
    hold = Hold()
    p = Prog(d.socket, [str(build_prog("slowregions")), "--regions", "2", "--iters", "100000", *hold.args("--hold")])
    progs.append(p)
    d.wait_for(lambda st: (c := client(st)) is not None and c.get("last_team") == 2, timeout=60,
               what="the held region steered to 2")
    # The net looks at it once a second from its first second on: give it several looks.
    time.sleep(4)
    hold.release()
    rc = p.proc.wait(timeout=120)
    assert rc == 0, p.stderr()[-3000:]
    assert SAID not in p.stderr(), p.stderr()[-3000:]
    assert "checksum=" in p.stdout()
