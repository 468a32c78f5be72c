"""A shared daemon (scafd --shared) between two real users: quotas, private status, per-user shares.

The users are created with useradd for this module and removed afterwards; their
processes are real: forked children that drop to the user's uid before they
connect (so SO_PEERCRED names that user), and real OpenMP programs started with
setpriv. Without root the module is skipped.
"""

from __future__ import annotations

import contextlib
import json
import os
import pwd
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from typing import Any, ClassVar

import pytest
from conftest import Daemon, daemon_binaries
from scaf.lib import paths
from support import wire
from support.users import real_users

USERS = ("scaft-flood", "scaft-other")
BINARIES = daemon_binaries()
IDS = ["plain" if i == 0 else "asan" for i in range(len(BINARIES))]


@pytest.fixture(scope="module")
def users() -> Iterator[list[pwd.struct_passwd]]:
    """Two real users (created now, deleted afterwards unless they existed before)."""
    with real_users(USERS) as pair:
        yield pair


class AsUser:
    """A forked child that becomes `user` and then runs work(report): report(obj) sends one JSON line home.

    The child keeps running until stop() (work may wait in hold()); its reports come back in order.
    """

    def __init__(self, user: pwd.struct_passwd, work: Callable[[Callable[[Any], None]], None]) -> None:
        rd, wr = os.pipe()
        stop_rd, stop_wr = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: never returns into pytest
            code = 0
            try:
                # Other children's ends too: a stop pipe must reach EOF when its parent closes it.
                for fd in (rd, stop_wr, *AsUser._parent_fds):
                    with contextlib.suppress(OSError):
                        os.close(fd)
                os.setgroups([])
                os.setgid(user.pw_gid)
                os.setuid(user.pw_uid)
                out = os.fdopen(wr, "w", buffering=1)
                AsUser._stop_fd = stop_rd
                work(lambda obj: out.write(json.dumps(obj) + "\n"))
            except BaseException as e:  # noqa: BLE001 - everything goes home as a report
                with contextlib.suppress(Exception):
                    os.write(wr, (json.dumps({"error": repr(e)}) + "\n").encode())
                code = 1
            os._exit(code)
        os.close(wr)
        os.close(stop_rd)
        AsUser._parent_fds |= {rd, stop_wr}
        self.pid = pid
        self._stop = stop_wr
        self._in = os.fdopen(rd, "r")

    _stop_fd = -1
    _parent_fds: ClassVar[set[int]] = set()

    @staticmethod
    def hold() -> None:
        """In the child: wait until the parent calls stop()."""
        os.read(AsUser._stop_fd, 1)

    def next(self, timeout: float = 30) -> Any:
        """The child's next report."""
        import select

        ready, _, _ = select.select([self._in], [], [], timeout)
        assert ready, f"child {self.pid} sent nothing in {timeout} s"
        line = self._in.readline()
        assert line, f"child {self.pid} exited without a report"
        obj = json.loads(line)
        assert not (isinstance(obj, dict) and "error" in obj), obj
        return obj

    def release(self) -> None:
        """Let the child's hold() return."""
        if self._stop in AsUser._parent_fds:
            AsUser._parent_fds.discard(self._stop)
            os.close(self._stop)

    def stop(self) -> int:
        self.release()
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self._close_in()
                return os.waitstatus_to_exitcode(status)
            time.sleep(0.05)
        os.kill(self.pid, signal.SIGKILL)
        self._close_in()
        return os.waitstatus_to_exitcode(os.waitpid(self.pid, 0)[1])

    def _close_in(self) -> None:
        AsUser._parent_fds.discard(self._in.fileno())
        self._in.close()


@pytest.fixture
def children() -> Iterator[list[AsUser]]:
    started: list[AsUser] = []
    yield started
    for c in started:
        c.stop()


def shared_daemon(factory: Callable[..., Daemon], *args: str, binary: Any = None) -> Daemon:
    d = factory("--shared", "--no-lookout", *args, binary=binary)
    assert d.dir is not None
    os.chmod(d.dir, 0o755)  # the test's private directory: let the other users reach the 0666 socket
    return d


def flood(path: str) -> Callable[[Callable[[Any], None]], None]:
    """Work for the flooding user: take every client slot it is given, then 400 silent connections."""

    def work(report: Callable[[Any], None]) -> None:
        clients, refusals, silent = [], [], []
        for _ in range(10):
            try:
                sock, page, _ = wire.register(path, 2, b"flood")
                clients.append((sock, page))
            except wire.Refused as e:
                refusals.append(e.text)
        for _ in range(400):
            try:
                s = wire.connect(path, timeout=5)
            except wire.DaemonUnavailable:
                continue
            silent.append(s)
        report({"clients": len(clients), "refusals": refusals, "silent": len(silent)})
        AsUser.hold()
        # How many silent connections the daemon has closed (refused at once, or after the handshake deadline).
        closed = 0
        for s in silent:
            s.settimeout(10)
            try:
                while s.recv(4096):
                    pass
                closed += 1
            except TimeoutError:
                pass
            except OSError:
                closed += 1  # reset: closed too
        report({"closed": closed, "of": len(silent)})

    return work


def ask_status(path: str) -> Callable[[Callable[[Any], None]], None]:
    def work(report: Callable[[Any], None]) -> None:
        report(wire.status(path, timeout=10))

    return work


@pytest.mark.parametrize("binary", BINARIES, ids=IDS)
def test_one_user_floods_the_other_still_gets_in(
    users: list[pwd.struct_passwd], scafd_factory: Callable[..., Daemon], children: list[AsUser], binary: Any
) -> None:
    flooder, other = users
    d = shared_daemon(scafd_factory, "--max-clients", "8", "--cpus", "4", binary=binary)
    a = AsUser(flooder, flood(d.socket))
    children.append(a)
    got = a.next(timeout=60)
    # Its part of the table (--user-clients defaults to a quarter of --max-clients), no more.
    assert got["clients"] == 2, got
    assert all("--user-clients" in r for r in got["refusals"]) and len(got["refusals"]) == 8, got

    # While the flood holds: the other user's status request is answered ...
    b = AsUser(other, ask_status(d.socket))
    children.append(b)
    st = b.next()
    assert st["clients"] == [] and st["other_clients"] == 2, st
    # ... and the other user's real OpenMP program becomes a client.
    env = {"PATH": os.environ["PATH"], "LD_PRELOAD": str(paths.layer()), "SCAF_SOCKET": d.socket,
           "SCAF_VERBOSE": "1", "OMP_NUM_THREADS": "2"}
    prog = subprocess.run(
        ["setpriv", f"--reuid={other.pw_uid}", f"--regid={other.pw_gid}", "--clear-groups", "--",
         str(paths.build_dir() / "workloads" / "ep"), "--size", "S"],
        check=False, env=env, capture_output=True, text=True, timeout=120,
    )
    assert prog.returncode == 0 and "verified=yes" in prog.stdout, prog.stdout + prog.stderr
    assert "connected to" in prog.stderr, prog.stderr

    # None of the silent connections outlives the short handshake deadline; the log stays short.
    a.release()
    closed = a.next(timeout=60)
    assert closed["closed"] == closed["of"], closed
    assert a.stop() == 0
    children.remove(a)
    log = d.stderr()
    # Most of the flood is only counted, by reason, in one summary line a second.
    assert "refused in the last second" in log and "user's pending quota" in log, log[-3000:]
    assert len(log.splitlines()) < 200, f"{len(log.splitlines())} lines for one flood"
    d.wait_for(lambda s: s["clients"] == [], what="the flooder's clients gone")
    for marker in ("AddressSanitizer", "LeakSanitizer", "runtime error:"):
        assert marker not in d.stderr()


def test_silent_connections_are_dropped_after_the_handshake_deadline(
    users: list[pwd.struct_passwd], scafd_factory: Callable[..., Daemon], children: list[AsUser]
) -> None:
    flooder, _ = users
    d = shared_daemon(scafd_factory, "--max-clients", "8")

    def work(report: Callable[[Any], None]) -> None:
        socks = [wire.connect(d.socket, timeout=5) for _ in range(10)]
        report("connected")
        closed_by = []
        for s in socks:
            s.settimeout(20)
            try:
                data = s.recv(wire.REFUSE.size)
            except OSError:
                data = b"error"
            closed_by.append(len(data))
        report(closed_by)

    a = AsUser(flooder, work)
    children.append(a)
    assert a.next() == "connected"
    # Every one of them is closed by the daemon (EOF, nothing sent), long before the 30 s of a per-user daemon.
    assert a.next(timeout=25) == [0] * 10
    assert "no complete message in 3 s" in d.stderr()


def register_and_hold(path: str, max_threads: int, report_fields: dict[str, int] | None = None,
                      n: int = 1) -> Callable[[Callable[[Any], None]], None]:
    """Work: register n clients, write each page's report, tell the parent the pids, hold until stopped."""

    def work(report: Callable[[Any], None]) -> None:
        held = []
        for _ in range(n):
            sock, page, cid = wire.register(path, max_threads, b"holder")
            for field, value in (report_fields or {}).items():
                page.set_u32(field, value)
            held.append((sock, page, cid))
        report({"pid": os.getpid(), "ids": [cid for _, _, cid in held]})
        AsUser.hold()

    return work


def test_status_shows_other_users_clients_only_as_counts(
    users: list[pwd.struct_passwd], scafd_factory: Callable[..., Daemon], children: list[AsUser]
) -> None:
    u1, u2 = users
    d = shared_daemon(scafd_factory, "--cpus", "4", "--max-clients", "8")
    a = AsUser(u1, register_and_hold(d.socket, 2, n=2))
    b = AsUser(u2, register_and_hold(d.socket, 2))
    children += [a, b]
    ids_a, ids_b = a.next()["ids"], b.next()["ids"]

    mine = AsUser(u2, ask_status(d.socket))
    children.append(mine)
    st = mine.next()
    assert [c["id"] for c in st["clients"]] == ids_b, st
    assert st["other_clients"] == 2 and st["other_threads"] >= 2, st
    assert {c["pid"] for c in st["clients"]} == {b.pid}, "nothing of the other user's clients but counts"

    # Root (and the daemon's own user, root here) sees everyone, as before.
    full = d.status()
    assert sorted(c["id"] for c in full["clients"]) == sorted(ids_a + ids_b)
    assert "other_clients" not in full

    # `scaf status`'s table, as root sees it and as the other user does (rendered in the child, which is
    # that user; everything it imports is imported here first, since that user cannot read this Python).
    import io

    from scaf.commands import status as status_cmd

    def render_status() -> str:
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            status_cmd.render(wire.status(d.socket), d.socket)
        return out.getvalue()

    as_root = render_status()
    assert "other users" not in as_root and str(a.pid) in as_root and str(b.pid) in as_root, as_root

    def render(report: Callable[[Any], None]) -> None:
        report(render_status())

    shown = AsUser(u2, render)
    children.append(shown)
    text = shown.next()
    assert "2 clients of other users" in text and str(b.pid) in text, text
    assert str(a.pid) not in text, text


def sample_threads(d: Daemon, pids: dict[str, int], seconds: float = 3.0) -> dict[str, float]:
    """Average page threads of each named client over a window (status every 0.1 s)."""
    sums = dict.fromkeys(pids, 0)
    n = 0
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        by_pid = {c["pid"]: c["threads"] for c in d.status()["clients"]}
        for name, pid in pids.items():
            sums[name] += by_pid[pid]
        n += 1
        time.sleep(0.1)
    return {name: s / n for name, s in sums.items()}


LIE = {"eff_team": 1024, "efficiency_ppm": 500_000, "estimate": wire.ESTIMATE_MEASURED,
       "verdict": wire.VERDICT_MALLEABLE, "last_team": 1024}
HONEST = {"eff_team": 8, "efficiency_ppm": 500_000, "estimate": wire.ESTIMATE_MEASURED,
          "verdict": wire.VERDICT_MALLEABLE, "last_team": 8}


@pytest.mark.parametrize("shared", [True, False], ids=["shared", "one-user"])
def test_a_lying_client_takes_no_more_than_its_users_share(
    users: list[pwd.struct_passwd], scafd_factory: Callable[..., Daemon], children: list[AsUser], shared: bool
) -> None:
    """One honest client (E = 0.5 at 8 threads) and one that claims E = 0.5 at 1,024 threads, 8 contexts.

    Read at 1,024 threads the claim is a near-perfect scaler (Amdahl sigma = 0.0005 against the honest
    0.14), which the speedup policy would give 7 of the 8 contexts. Shared, each is another user's: the
    liar gets at most half. Per-user daemon (both clients one user's, the test's): the claim is capped at
    the liar's own 8 threads, where it is the honest client's curve, so they share equally.
    """
    u1, u2 = users
    args = ["--policy", "speedup", "--cpus", "8", "--max-clients", "8", "--rate", "20"]
    if shared:
        d = shared_daemon(scafd_factory, *args)
        liar = AsUser(u1, register_and_hold(d.socket, 8, LIE))
        honest = AsUser(u2, register_and_hold(d.socket, 8, HONEST))
    else:
        d = scafd_factory("--no-lookout", *args)
        liar = AsUser(pwd.getpwuid(os.geteuid()), register_and_hold(d.socket, 8, LIE))
        honest = AsUser(pwd.getpwuid(os.geteuid()), register_and_hold(d.socket, 8, HONEST))
    children += [liar, honest]
    pids = {"liar": liar.next()["pid"], "honest": honest.next()["pid"]}
    d.wait_for(lambda s: len(s["clients"]) == 2 and all(c["efficiency"] is not None for c in s["clients"]),
               what="both reports decoded")
    avg = sample_threads(d, pids)
    if shared:
        assert avg["liar"] <= 4.0 and avg["honest"] >= 4.0, avg
    else:
        # Capped at max_threads 8 the claim is E = 0.5 at 8, the honest client's own: 4 each, not 7 and 1.
        assert avg["liar"] <= 4.5 and avg["honest"] >= 3.5, avg


def test_user_clients_needs_shared(tmp_path: Any) -> None:
    r = subprocess.run([str(paths.scafd()), "--user-clients", "2", "--socket", str(tmp_path / "s")],
                       check=False, capture_output=True, text=True, timeout=10)
    assert r.returncode == 2 and "--user-clients needs --shared" in r.stderr, r.stderr
    r = subprocess.run([str(paths.scafd()), "--shared", "--max-clients", "4", "--user-clients", "5", "--socket",
                        str(tmp_path / "s")], check=False, capture_output=True, text=True, timeout=10)
    assert r.returncode == 2 and "more than --max-clients" in r.stderr, r.stderr



def test_each_user_has_a_memory_of_their_own(
    users: list[pwd.struct_passwd], scafd_factory: Callable[..., Daemon], children: list[AsUser]
) -> None:
    """docs/memory.md, "Each user's own": the same program of two users, remembered apart, neither able to
    read, recall, forget or overwrite the other's memory; status shows one's own clients' memory only."""
    from pathlib import Path

    from scaf.lib import proto

    one, two = users
    d = shared_daemon(scafd_factory, "--cpus", "4")
    key = 0x5AFE

    def do(user: pwd.struct_passwd, work: Callable[[Callable[[Any], None]], None]) -> Any:
        child = AsUser(user, work)
        children.append(child)
        got = child.next()
        assert child.stop() == 0
        children.remove(child)
        return got

    def run(verdict: int) -> Callable[[Callable[[Any], None]], None]:
        def work(report: Callable[[Any], None]) -> None:
            sock, page, _ = wire.register(d.socket, 4, b"mem", key=key)
            report({"runs": page.u32("memory_runs"), "known": page.known()})
            page.learn([(0x77, 0x10, wire.MEMO_CLEAN)])
            page.decide(verdict, wire.SOURCE_EVIDENCE)
            sock.close()

        return work

    def ask(op: int, k: int = key, verdict: int = 0) -> Callable[[Callable[[Any], None]], None]:
        def work(report: Callable[[Any], None]) -> None:
            r = proto.memory(d.socket, op, k, 4 if op == proto.MEMORY_RECALL else 0, verdict,
                             b"checked" if op == proto.MEMORY_REMEMBER else b"")
            report(vars(r))

        return work

    assert do(one, run(wire.VERDICT_FIXED))["runs"] == 0
    d.wait_for(lambda st: st["clients"] == [], what="the first user's run gone")
    # The other user has nothing of it, and forgetting "everything" forgets only their own.
    assert do(two, ask(proto.MEMORY_RECALL))["status"] == proto.MEMORY_UNKNOWN
    r = do(two, ask(proto.MEMORY_FORGET, 0))
    assert (r["status"], r["forgotten"]) == (proto.MEMORY_OK, 0)
    r = do(two, ask(proto.MEMORY_FORGET))
    assert (r["status"], r["forgotten"]) == (proto.MEMORY_UNKNOWN, 0)
    assert do(two, ask(proto.MEMORY_REMEMBER, verdict=wire.VERDICT_MALLEABLE))["status"] == proto.MEMORY_OK
    # Each user's program is recalled from that user's memory.
    got = do(one, run(wire.VERDICT_FIXED))
    assert got["runs"] == 1 and got["known"] == [[0x77, 0x10, wire.MEMO_CLEAN]], got
    d.wait_for(lambda st: st["clients"] == [], what="the second run gone")
    r = do(one, ask(proto.MEMORY_RECALL))
    assert (r["runs"], r["verdict"], r["source"]) == (2, wire.VERDICT_FIXED, wire.SOURCE_EVIDENCE), r
    r = do(two, ask(proto.MEMORY_RECALL))
    assert (r["runs"], r["verdict"], r["source"]) == (1, wire.VERDICT_MALLEABLE, wire.SOURCE_CHECK), r

    # A remembered client of one user: the other user's status shows it only as a count, memory included.
    def hold(report: Callable[[Any], None]) -> None:
        sock, page, _ = wire.register(d.socket, 4, b"mem", key=key)
        report(page.u32("memory_runs"))
        AsUser.hold()
        sock.close()

    held = AsUser(one, hold)
    children.append(held)
    assert held.next() == 2
    (c,) = d.status()["clients"]  # root sees every client, with its memory
    assert c["memory"] == {"runs": 2, "verdict": "fixed", "source": "evidence", "run_s": c["memory"]["run_s"]}, c
    st = do(two, lambda report: report(wire.status(d.socket, timeout=10)))
    assert st["clients"] == [] and st["other_clients"] == 1 and "memory" not in json.dumps(st), st
    assert held.stop() == 0
    children.remove(held)

    # The files: each user's own name, the daemon's alone to read.
    d.stop()
    for u in users:
        f = Path(d.state_dir) / f"memory-{u.pw_uid}.bin"
        assert f.stat().st_mode & 0o777 == 0o600 and f.stat().st_uid == os.geteuid(), f

    def peek(report: Callable[[Any], None]) -> None:
        try:
            with open(Path(d.state_dir) / f"memory-{one.pw_uid}.bin", "rb") as f:
                f.read(1)
            report("read")
        except PermissionError:
            report("denied")

    assert do(two, peek) == "denied"
