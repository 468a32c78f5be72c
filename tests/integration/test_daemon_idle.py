"""Idle clients end to end: a client that runs nothing holds no share, shows idle in the status, the table and
Prometheus, and a WAKE gives its share back in the same step; real daemons, real client processes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest
from conftest import ROOT, SCAF, Daemon, daemon_binaries
from support import wire

# A client process: registers, says "ready ID", then obeys lines on stdin: `busy` makes its regions counter move
# every 20 ms (a program running regions), `quiet` stops that, `wake` sends one WAKE, `idle?` prints its page's
# idle word and threads. It burns next to no CPU either way, unless told: `spin` burns CPU without a region on
# eight threads (hashing, which releases the GIL: a serial phase, or BLAS work the layer does not count), so that
# it passes half a context however loaded the machine is (one thread beside three busy loops on 2 CPUs got less),
# `bursts` 80 ms of one thread's CPU then 170 ms asleep, over and over (at most a third of a context: a pool
# worker's bookkeeping between tasks), `rest` stops either.
CLIENT_PY = r"""
import hashlib, sys, threading, time
sys.path[:0] = [sys.argv[1] + "/python", sys.argv[1] + "/tests"]
from support import wire
sock, page, cid = wire.register(sys.argv[2], int(sys.argv[3]))
busy = threading.Event()
burn = {"mode": "rest"}
def regions():
    n = 0
    while True:
        busy.wait()
        n += 1
        page.set_u64("regions", n)
        time.sleep(0.02)
def burner():
    while True:
        if burn["mode"] != "bursts":
            time.sleep(0.01)
            continue
        t = time.thread_time()
        while time.thread_time() - t < 0.08:
            pass
        time.sleep(0.17)
def cruncher():
    data = b"x" * (1 << 20)
    while True:
        if burn["mode"] != "spin":
            time.sleep(0.01)
            continue
        hashlib.sha256(data).digest()
threading.Thread(target=regions, daemon=True).start()
threading.Thread(target=burner, daemon=True).start()
for _ in range(8):
    threading.Thread(target=cruncher, daemon=True).start()
print("ready", cid, flush=True)
for line in sys.stdin:
    cmd = line.strip()
    if cmd == "busy":
        busy.set()
    elif cmd == "quiet":
        busy.clear()
    elif cmd == "wake":
        sock.sendall(wire.header(8, 16))
    elif cmd in ("spin", "bursts", "rest"):
        burn["mode"] = cmd
    elif cmd == "idle?":
        print("idle", page.u32("idle"), page.threads, flush=True)
"""

DAEMON = ("--policy", "equipartition", "--cpus", "4", "--no-lookout", "--idle-after", "0.25")


class Client:
    def __init__(self, sock: str, max_threads: int = 8) -> None:
        self.proc = subprocess.Popen([sys.executable, "-c", CLIENT_PY, str(ROOT), sock, str(max_threads)],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        assert line.startswith("ready"), line
        self.pid = self.proc.pid

    def say(self, cmd: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(cmd + "\n")
        self.proc.stdin.flush()

    def page(self) -> tuple[int, int]:
        self.say("idle?")
        assert self.proc.stdout is not None
        _, idle, threads = self.proc.stdout.readline().split()
        return int(idle), int(threads)

    def close(self) -> None:
        self.proc.kill()
        self.proc.wait()


@pytest.fixture
def clients() -> Iterator[list[Client]]:
    made: list[Client] = []
    yield made
    for c in made:
        c.close()


def logged_lines(d: Daemon) -> list[dict]:
    with open(d.log, encoding="utf-8") as f:
        return [json.loads(ln) for ln in f if ln.strip()]


def by_pid(st: dict) -> dict[int, dict]:
    return {c["pid"]: c for c in st["clients"]}


def samples(d: Daemon, n: int) -> Iterator[dict[int, dict]]:
    """N status samples 0.1 s apart, by pid: a window to judge an allocation over, not one lucky moment."""
    for _ in range(n):
        yield by_pid(d.wait_for(lambda s: True))
        time.sleep(0.1)


def test_a_quiet_client_holds_nothing_and_shows_idle(scafd_factory, clients: list[Client]) -> None:
    d = scafd_factory(*DAEMON)
    a, b = Client(d.socket), Client(d.socket)
    clients += [a, b]
    a.say("busy")
    st = d.wait_for(lambda s: len(s["clients"]) == 2 and by_pid(s)[b.pid]["idle"], what="b idle")
    # Over a window: b holds nothing, a has the machine; b's page keeps the team it had (2 of 4) for its next region.
    for st in samples(d, 10):
        assert st[b.pid]["idle"] and st[b.pid]["share"] == 0 and st[b.pid]["threads"] == 2, st[b.pid]
        assert not st[a.pid]["idle"] and st[a.pid]["share"] == 4 and st[a.pid]["threads"] == 4, st[a.pid]
    idle, threads = b.page()
    assert idle != 0 and threads == 2
    assert a.page()[0] == 0
    table = subprocess.run([str(SCAF), "status", "--socket", d.socket], capture_output=True, text=True, timeout=30,
                           check=True).stdout
    row = next(ln for ln in table.splitlines() if ln.split()[:1] == [str(b.pid)])
    assert "yes" in row.split() and "1 idle" in table, table
    prom = subprocess.run([str(SCAF), "status", "--socket", d.socket, "--prometheus"], capture_output=True,
                          text=True, timeout=30, check=True).stdout
    assert any(ln.startswith("scaf_client_idle{") and f'pid="{b.pid}"' in ln and ln.endswith(" 1")
               for ln in prom.splitlines()), prom
    # The --log lines carry it.
    assert any(by_pid(x).get(b.pid, {}).get("idle") for x in logged_lines(d))


def test_regions_make_an_idle_client_busy_again(scafd_factory, clients: list[Client]) -> None:
    d = scafd_factory(*DAEMON)
    a, b = Client(d.socket), Client(d.socket)
    clients += [a, b]
    a.say("busy")
    d.wait_for(lambda s: len(s["clients"]) == 2 and by_pid(s)[b.pid]["idle"], what="b idle")
    b.say("busy")
    st = d.wait_for(lambda s: not by_pid(s)[b.pid]["idle"] and by_pid(s)[b.pid]["share"] == 2, what="b back")
    assert by_pid(st)[a.pid]["share"] == 2
    assert b.page()[0] == 0


@pytest.mark.parametrize("binary", daemon_binaries(), ids=lambda b: b.parent.parent.name)
def test_a_wake_gives_the_share_back_in_the_same_step(scafd_factory, clients: list[Client], binary) -> None:
    d = scafd_factory(*DAEMON, binary=binary)
    a, b = Client(d.socket), Client(d.socket)
    clients += [a, b]
    a.say("busy")
    d.wait_for(lambda s: len(s["clients"]) == 2 and by_pid(s)[b.pid]["idle"], what="b idle")
    idle_lines = len(logged_lines(d))
    b.say("wake")
    # The WAKE is a turn of its own: the --log line written in the step that read it has b busy with its share
    # back, although its regions never moved (it turns idle again a quarter second later).
    end = time.monotonic() + 10
    while time.monotonic() < end:
        after = [by_pid(x) for x in logged_lines(d)[idle_lines:]]
        if after:
            break
        time.sleep(0.05)
    assert after, "no log line after the WAKE"
    assert not after[0][b.pid]["idle"] and after[0][b.pid]["share"] == 2 and after[0][a.pid]["share"] == 2, after[0]
    # A WAKE from a client that is not idle asks for nothing: no turn, no line.
    d.wait_for(lambda s: by_pid(s)[b.pid]["idle"], what="b idle again")
    time.sleep(0.3)
    n = len(logged_lines(d))
    a.say("wake")
    time.sleep(0.3)
    assert len(logged_lines(d)) == n


def test_cpu_without_regions_wakes_an_idle_client_only_past_half_a_context(scafd_factory,
                                                                            clients: list[Client]) -> None:
    d = scafd_factory(*DAEMON)
    a, b = Client(d.socket), Client(d.socket)
    clients += [a, b]
    a.say("busy")
    d.wait_for(lambda s: len(s["clients"]) == 2 and by_pid(s)[b.pid]["idle"], what="b idle")
    # Bursts of a third of a context at most (a worker between tasks): b stays idle, over every sample of 2 s, and
    # a keeps the machine. Busy, the same CPU would have kept b busy (10% of a context at most is quiet).
    b.say("bursts")
    for st in samples(d, 20):
        assert st[b.pid]["idle"] and st[b.pid]["share"] == 0 and st[a.pid]["share"] == 4, st
    # CPU without a region past half a context (a serial phase): busy again, with its share.
    b.say("spin")
    st = d.wait_for(lambda s: not by_pid(s)[b.pid]["idle"] and by_pid(s)[b.pid]["share"] == 2, what="b busy")
    assert by_pid(st)[a.pid]["share"] == 2
    # Resting, it is idle again.
    b.say("rest")
    d.wait_for(lambda s: by_pid(s)[b.pid]["idle"] and by_pid(s)[a.pid]["share"] == 4, what="b idle again")


def test_an_idle_client_is_nobodys_peer_at_an_arrival(scafd_factory, clients: list[Client]) -> None:
    d = scafd_factory(*DAEMON)
    a, b = Client(d.socket), Client(d.socket)
    clients += [a, b]
    a.say("busy")
    d.wait_for(lambda s: len(s["clients"]) == 2 and by_pid(s)[b.pid]["idle"] and not by_pid(s)[a.pid]["idle"],
               what="b idle, a busy")
    # 4 contexts, one running client beside it: 4 // 2. Counting b too, it would have been 4 // 3 = 1.
    s, page, _ = wire.register(d.socket, 8)
    try:
        assert page.u32("start_team") == 2
    finally:
        s.close()


def test_a_run_beside_an_idle_client_remembers_no_peer(scafd_factory, clients: list[Client]) -> None:
    from scaf.lib import proto

    d = scafd_factory(*DAEMON)
    b = Client(d.socket)
    clients.append(b)
    d.wait_for(lambda s: len(s["clients"]) == 1 and by_pid(s)[b.pid]["idle"], what="b idle")
    # A program that runs its whole (fixed) life beside b only while b is idle: no peer time.
    s, page, _ = wire.register(d.socket, 4, key=0x1D1E)
    d.wait_for(lambda st: len(st["clients"]) == 2, what="the program")
    for n in range(1, 30):  # its regions move over more than a turn: it is running, never idle itself
        page.set_u64("regions", n)
        time.sleep(0.02)
    page.decide(wire.VERDICT_FIXED, wire.SOURCE_EVIDENCE)
    s.close()
    d.wait_for(lambda st: len(st["clients"]) == 1, what="the program gone")
    b.close()
    clients.remove(b)
    d.wait_for(lambda st: len(st["clients"]) == 0, what="b gone")
    # Alone now, it starts with the whole machine: it usually runs beside no one. Had b been its peer, 2.
    r = proto.memory(d.socket, proto.MEMORY_RECALL, 0x1D1E, 4)
    assert (r.status, r.runs, r.start_team) == (proto.MEMORY_OK, 1, 4), r


def test_idle_after_zero_keeps_every_client_busy(scafd_factory, clients: list[Client]) -> None:
    d = scafd_factory("--policy", "equipartition", "--cpus", "4", "--no-lookout", "--idle-after", "0")
    a, b = Client(d.socket), Client(d.socket)
    clients += [a, b]
    d.wait_for(lambda s: len(s["clients"]) == 2)
    time.sleep(1.0)
    for c in wire.status(d.socket)["clients"]:
        assert not c["idle"] and c["share"] == 2, c


@pytest.mark.parametrize("bad", ["-1", "0.01", "3601", "x"])
def test_idle_after_range(bad: str) -> None:
    from scaf.lib import paths

    r = subprocess.run([str(paths.scafd()), "--idle-after", bad, "--socket", "/nonexistent/s"], capture_output=True,
                       text=True, timeout=10, env=dict(os.environ), check=False)
    assert r.returncode == 2 and "--idle-after" in r.stderr
