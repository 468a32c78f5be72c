"""Programs, not processes: a client's children that are clients share its program's equal share (real process trees)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator

import pytest
from conftest import ROOT, Daemon

# A client process: registers, then starts CHILDREN clients of its own (each this same script with 0 children), says
# "ready ID PID" for itself and each of them, and holds its connection until killed.
TREE_PY = r"""
import os, signal, subprocess, sys
sys.path[:0] = [sys.argv[1] + "/python", sys.argv[1] + "/tests"]
from support import wire
sock, page, cid = wire.register(sys.argv[2], 8)
lines = [f"ready {cid} {os.getpid()}"]
kids = [subprocess.Popen([sys.executable, "-c", sys.argv[4], sys.argv[1], sys.argv[2], "0", sys.argv[4]],
                         stdout=subprocess.PIPE, text=True) for _ in range(int(sys.argv[3]))]
for k in kids:
    lines += [k.stdout.readline().strip()]
print("\n".join(lines), flush=True)
signal.pause()
"""


class Tree:
    """A client and `children` client processes it started, in a process group of their own."""

    def __init__(self, sock: str, children: int):
        self.proc = subprocess.Popen([sys.executable, "-c", TREE_PY, str(ROOT), sock, str(children), TREE_PY],
                                     stdout=subprocess.PIPE, text=True, process_group=0)
        assert self.proc.stdout is not None
        self.ids: list[int] = []
        self.pids: list[int] = []
        for _ in range(children + 1):
            line = self.proc.stdout.readline().split()
            assert line[:1] == ["ready"], f"a client of the tree did not register: {line}"
            self.ids.append(int(line[1]))
            self.pids.append(int(line[2]))

    def kill(self, pid: int) -> None:
        os.kill(pid, signal.SIGKILL)

    def close(self) -> None:
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait()
        if self.proc.stdout:
            self.proc.stdout.close()


@pytest.fixture
def trees() -> Iterator[list[Tree]]:
    started: list[Tree] = []
    yield started
    for t in started:
        t.close()


def by_id(st: dict) -> dict[int, dict]:
    return {c["id"]: c for c in st["clients"]}


def test_a_pool_shares_one_programs_share(scafd_factory: Callable[..., Daemon], trees: list[Tree]) -> None:
    """--cpus 12, equipartition: a parent with two child clients beside a program of one client: 6 for the program,
    2 each for the parent and its children (a static split's half, not 3 of 12 each); status names the program."""
    d = scafd_factory("--policy", "equipartition", "--cpus", "12", "--no-lookout")
    pool = Tree(d.socket, 2)
    trees.append(pool)
    alone = Tree(d.socket, 0)
    trees.append(alone)
    want = {pool.ids[0]: 2, pool.ids[1]: 2, pool.ids[2]: 2, alone.ids[0]: 6}
    st = d.wait_for(lambda s: {c["id"]: c["threads"] for c in s["clients"]} == want, timeout=60,
                    what="2 + 2 + 2 for the tree, 6 for the program beside it")
    cl = by_id(st)
    assert [cl[i]["program"] for i in pool.ids] == [pool.ids[0]] * 3, "the children are the parent's program"
    assert cl[alone.ids[0]]["program"] == alone.ids[0], "a program of one client is its own"


def test_children_whose_parent_died_are_programs_of_their_own(scafd_factory: Callable[..., Daemon],
                                                              trees: list[Tree]) -> None:
    """The parent killed (SIGKILL): its two children stay clients, now two programs, so the three programs left
    get 4 each of 12; a pid is matched with its start time, so nothing reused stands in for the parent."""
    d = scafd_factory("--policy", "equipartition", "--cpus", "12", "--no-lookout")
    pool = Tree(d.socket, 2)
    trees.append(pool)
    alone = Tree(d.socket, 0)
    trees.append(alone)
    d.wait_for(lambda s: len(s["clients"]) == 4 and by_id(s)[alone.ids[0]]["threads"] == 6, timeout=60,
               what="the tree and the program beside it")
    pool.kill(pool.pids[0])
    want = {pool.ids[1]: 4, pool.ids[2]: 4, alone.ids[0]: 4}
    st = d.wait_for(lambda s: {c["id"]: c["threads"] for c in s["clients"]} == want, timeout=60,
                    what="4 each once the parent is gone")
    assert [by_id(st)[i]["program"] for i in pool.ids[1:]] == pool.ids[1:]


def test_clients_that_one_harness_started_stay_programs_of_their_own(scafd_factory: Callable[..., Daemon],
                                                                     trees: list[Tree]) -> None:
    """Two programs started by the same process that is no client (a shell, a benchmark, this test): two programs."""
    d = scafd_factory("--policy", "equipartition", "--cpus", "12", "--no-lookout")
    a, b = Tree(d.socket, 0), Tree(d.socket, 0)
    trees += [a, b]
    st = d.wait_for(lambda s: sorted(c["threads"] for c in s["clients"]) == [6, 6], timeout=60, what="6 + 6")
    assert sorted(c["program"] for c in st["clients"]) == sorted([a.ids[0], b.ids[0]])


def test_a_workers_start_team_is_its_programs_share_split_with_its_kin(scafd_factory: Callable[..., Daemon],
                                                                       trees: list[Tree]) -> None:
    """The start team counts programs: the first alone starts with its bound, 8; beside it, a parent starts with
    6 of 12 (a static
    split's half), and its child with that half split between the two of them, 3 (not 12 / 3 = 4 as three
    programs would have); a program of one client after them counts the tree once, 12 / 3 = 4."""
    d = scafd_factory("--policy", "equipartition", "--cpus", "12", "--no-lookout")
    first = Tree(d.socket, 0)
    trees.append(first)
    pool = Tree(d.socket, 1)
    trees.append(pool)
    last = Tree(d.socket, 0)
    trees.append(last)
    st = d.wait_for(lambda s: len(s["clients"]) == 4, timeout=60, what="four clients")
    cl = by_id(st)
    assert [cl[i]["start_team"] for i in (first.ids[0], *pool.ids, last.ids[0])] == [8, 6, 3, 4]
