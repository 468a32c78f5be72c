"""Trust boundaries between two real users: a squatted runtime directory, planted links, another
user's daemon on our socket, and the daemon users a client does trust.

User A is the victim, user B the squatter. Both are real users, created with useradd for this
module and removed afterwards; every command runs as one of them through setpriv, so the
kernel's permission checks and SO_PEERCRED are the real ones. Without root the module is skipped.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import socket
import stat
import subprocess
import sys
import sysconfig
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

import pytest
from conftest import ROOT, short_tmpdir
from scaf.lib import paths
from support import wire
from support.users import real_users
from test_cli_daemon import CLIENT_C

NAMES = ("scaft-victim", "scaft-squat")


class User(NamedTuple):
    name: str
    uid: int
    gid: int


@pytest.fixture(scope="module")
def users() -> Iterator[tuple[User, User]]:
    """(A, B): two real users, created now and deleted afterwards (unless they existed before)."""
    with real_users(NAMES) as (a, b):
        pair = User(a.pw_name, a.pw_uid, a.pw_gid), User(b.pw_name, b.pw_uid, b.pw_gid)
        for u in pair:
            for what in (paths.scafd(), paths.layer()):
                if run_as(u, ["test", "-r", str(what)]).returncode != 0:
                    pytest.skip(f"{what} is not readable by another user (the checkout sits in a private directory)")
        yield pair


def as_user(u: User, argv: list[str], env: dict[str, str] | None = None, **kw: object) -> list[str]:
    """argv run as U (setpriv), in a clean environment: no XDG_RUNTIME_DIR, no SCAF_SOCKET."""
    base = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8", "HOME": "/"}
    base.update(env or {})
    return ["setpriv", f"--reuid={u.uid}", f"--regid={u.gid}", "--clear-groups", "--", "env", "-i",
            *(f"{k}={v}" for k, v in base.items()), *argv]


def run_as(u: User, argv: list[str], env: dict[str, str] | None = None,
           timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(as_user(u, argv, env), capture_output=True, text=True, timeout=timeout, check=False)


@pytest.fixture(scope="module")
def scaf_cmd(users: tuple[User, User]) -> list[str]:
    """How user A runs the scaf command: the venv's interpreter when A may execute it, else the
    system python3 of the same version with the venv's packages (the venv's base may sit in a
    directory only root can enter, as under pyenv)."""
    venv_py = str(paths.build_dir() / "venv" / "bin" / "python")
    env = {"PYTHONPATH": str(ROOT / "python")}
    if run_as(users[0], [venv_py, "-c", "import scaf"], env).returncode == 0:
        return [venv_py, "-m", "scaf"]
    sys_py = shutil.which("python3", path="/usr/bin:/bin")
    site = sysconfig.get_path("purelib")
    if sys_py:
        probe = run_as(users[0], [sys_py, "-c", "import sys, scaf, rich, psutil; print(sys.version_info[:2])"],
                       {"PYTHONPATH": f"{ROOT / 'python'}:{site}"})
        if probe.returncode == 0 and probe.stdout.strip() == str(tuple(sys.version_info[:2])):
            return [sys_py, "-m", "scaf"]
    pytest.skip("the other user can run neither the venv's python nor a matching system python3")


def scaf_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {"PYTHONPATH": f"{ROOT / 'python'}:{sysconfig.get_path('purelib')}", "SCAF_BUILD": str(paths.build_dir())}
    env.update(extra or {})
    return env


@pytest.fixture(scope="module")
def prog(users: tuple[User, User]) -> Iterator[Path]:
    """The OpenMP test client, built where both users can run it."""
    d = short_tmpdir()
    os.chmod(d, 0o755)
    src, exe = Path(d, "trustcli.c"), Path(d, "trustcli")
    src.write_text(CLIENT_C)
    subprocess.run(["gcc", "-O1", "-fopenmp", "-o", str(exe), str(src)], check=True)
    os.chmod(exe, 0o755)
    yield exe
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture
def shared_dir() -> Iterator[str]:
    """A scratch directory every user can reach and write (sticky, like /tmp)."""
    d = short_tmpdir()
    os.chmod(d, 0o1777)
    yield d
    shutil.rmtree(d, ignore_errors=True)


def default_dir(u: User) -> str:
    return f"/tmp/scaf-{u.uid}"


@pytest.fixture
def clean_default(users: tuple[User, User]) -> Iterator[str]:
    """A's default runtime directory, absent before the test and removed after (with any daemon in it)."""
    a = users[0]
    d = default_dir(a)

    def wipe() -> None:
        if os.path.islink(d):
            os.unlink(d)
        elif os.path.isdir(d):
            shutil.rmtree(d, ignore_errors=True)

    wipe()
    yield d
    wipe()


def stop_file(dirpath: str) -> str:
    return os.path.join(dirpath, "stop")


def assert_empty(d: str) -> None:
    assert os.listdir(d) == [], f"something was written into {d}: {os.listdir(d)}"


# ---- the squatting variants ----------------------------------------------------------------------


def test_directory_owned_by_another_user(users: tuple[User, User], clean_default: str, scaf_cmd: list[str],
                                         prog: Path, shared_dir: str) -> None:
    a, b = users
    assert run_as(b, ["mkdir", "-m", "0777", clean_default]).returncode == 0
    stop = stop_file(shared_dir)
    Path(stop).touch()
    r = run_as(a, [*scaf_cmd, "run", "--", str(prog), stop], scaf_env())
    assert r.returncode == 122, r.stderr
    assert f"belongs to uid {b.uid}, not to you (uid {a.uid})" in r.stderr, r.stderr
    assert "cannot start" not in r.stderr, "the directory was the problem, not the daemon"
    assert_empty(clean_default)
    # scafd itself, on its default path, refuses the same directory and writes nothing either.
    r = run_as(a, [str(paths.scafd()), "--no-lookout"])
    assert r.returncode == 1 and f"belongs to uid {b.uid}" in r.stderr, r.stderr
    assert_empty(clean_default)


def test_symlinked_directory(users: tuple[User, User], clean_default: str, scaf_cmd: list[str], prog: Path,
                             shared_dir: str) -> None:
    a, b = users
    target = os.path.join(shared_dir, "b-target")
    assert run_as(b, ["mkdir", "-m", "0777", target]).returncode == 0
    assert run_as(b, ["ln", "-s", target, clean_default]).returncode == 0
    stop = stop_file(shared_dir)
    Path(stop).touch()
    r = run_as(a, [*scaf_cmd, "run", "--", str(prog), stop], scaf_env())
    assert r.returncode == 122, r.stderr
    assert "symbolic link" in r.stderr, r.stderr
    assert_empty(target)
    r = run_as(a, [str(paths.scafd()), "--no-lookout"])
    assert r.returncode == 1 and "symbolic link" in r.stderr, r.stderr
    assert_empty(target)


def test_planted_links_for_log_and_start_lock(users: tuple[User, User], clean_default: str, scaf_cmd: list[str],
                                              prog: Path, shared_dir: str) -> None:
    a, b = users
    victim = os.path.join(shared_dir, "a-precious")
    Path(victim).write_text("precious\n")
    os.chown(victim, a.uid, a.gid)
    planted = os.path.join(shared_dir, "b-planted")
    assert run_as(b, ["mkdir", "-m", "0777", clean_default]).returncode == 0
    assert run_as(b, ["ln", "-s", victim, os.path.join(clean_default, "scafd.log")]).returncode == 0
    assert run_as(b, ["ln", "-s", planted, os.path.join(clean_default, "scafd.sock.start.lock")]).returncode == 0
    stop = stop_file(shared_dir)
    Path(stop).touch()
    r = run_as(a, [*scaf_cmd, "run", "--", str(prog), stop], scaf_env())
    assert r.returncode == 122, r.stderr
    assert Path(victim).read_text() == "precious\n", "appended through B's link"
    assert not os.path.lexists(planted), "created a file where B pointed"
    assert sorted(os.listdir(clean_default)) == ["scafd.log", "scafd.sock.start.lock"]


def test_planted_lock_link_in_a_sticky_directory(users: tuple[User, User], shared_dir: str) -> None:
    """An explicit --socket in a directory everyone may write (like /tmp): files are never followed."""
    a, b = users
    sock = os.path.join(shared_dir, "s.sock")
    planted = os.path.join(shared_dir, "b-planted")
    assert run_as(b, ["ln", "-s", planted, sock + ".lock"]).returncode == 0
    r = run_as(a, [str(paths.scafd()), "--socket", sock, "--no-lookout"])
    assert r.returncode == 1, r.stderr
    # "symbolic link" (O_NOFOLLOW), or EACCES first where fs.protected_symlinks guards sticky directories
    assert "lock file" in r.stderr and len(r.stderr.splitlines()) == 1, r.stderr
    assert not os.path.lexists(planted) and not os.path.lexists(sock)
    # B's own file there (one A could write) is not used either.
    os.unlink(sock + ".lock")
    assert run_as(b, ["sh", "-c", f"umask 0; : > {sock}.lock"]).returncode == 0
    r = run_as(a, [str(paths.scafd()), "--socket", sock, "--no-lookout"])
    assert r.returncode == 1 and "not a plain file of yours" in r.stderr, r.stderr
    assert os.path.getsize(sock + ".lock") == 0


class BDaemon:
    """B's own scafd, serving SOCK as B; stopped by stop()."""

    def __init__(self, b: User, sock: str, *args: str) -> None:
        self.sock = sock
        self.proc = subprocess.Popen(as_user(b, [str(paths.scafd()), "--socket", sock, "--no-lookout", *args]),
                                     stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 15
        while not os.path.exists(sock):
            assert self.proc.poll() is None, self.proc.stderr.read() if self.proc.stderr else ""
            assert time.monotonic() < deadline, "B's daemon did not come up"
            time.sleep(0.05)

    def clients(self) -> list[dict]:
        """B's daemon's clients, asked as root without the trust check (the test looks, it does not join)."""
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(5)
            s.connect(self.sock)
            s.sendall(wire.header(wire.MSG_STATUS_REQ, wire.HEADER.size))
            length = wire.HEADER.unpack(wire.recv_exact(s, wire.HEADER.size))[3]
            return json.loads(wire.recv_exact(s, length - wire.HEADER.size))["clients"]

    def stop(self) -> None:
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        if self.proc.stderr:
            self.proc.stderr.close()


def run_client(a: User, prog: Path, sock: str, stop: str, extra: dict[str, str] | None = None) -> subprocess.Popen[str]:
    env = {"LD_PRELOAD": str(paths.layer()), "SCAF_SOCKET": sock, **(extra or {})}
    proc = subprocess.Popen(as_user(a, [str(prog), stop], env), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    assert proc.stdout is not None
    line = proc.stdout.readline()
    assert line.startswith("ready "), line
    return proc


def test_another_users_daemon_on_our_socket(users: tuple[User, User], clean_default: str, scaf_cmd: list[str],
                                            prog: Path, shared_dir: str) -> None:
    a, b = users
    assert run_as(b, ["mkdir", "-m", "0755", clean_default]).returncode == 0
    sock = os.path.join(clean_default, "scafd.sock")
    bd = BDaemon(b, sock, "--cpus", "1", "--shared")
    stop = stop_file(shared_dir)
    try:
        # scaf run: the directory is B's; nothing runs, nothing is written.
        r = run_as(a, [*scaf_cmd, "run", "--", str(prog), stop], scaf_env())
        assert r.returncode == 122, r.stderr
        # scaf status names both uids in one line and says the layer refuses it.
        r = run_as(a, [*scaf_cmd, "status"], scaf_env())
        assert r.returncode == 4, r.stderr
        assert len(r.stderr.strip().splitlines()) == 1, r.stderr
        assert f"uid {b.uid}" in r.stderr and f"(uid {a.uid})" in r.stderr and "not trusting" in r.stderr
        # A's program, pointed at it anyway, refuses it and runs unsteered: never a client, over a window.
        proc = run_client(a, prog, sock, stop)
        try:
            samples = []
            for _ in range(20):
                samples.append(len(bd.clients()))
                time.sleep(0.1)
            assert samples == [0] * 20
        finally:
            Path(stop).touch()
            out, err = proc.communicate(timeout=60)
        assert proc.returncode == 0 and "ok=yes" in out
        refusals = [ln for ln in err.splitlines() if "refusing the daemon" in ln]
        assert len(refusals) == 1, err
        assert f"uid {b.uid}" in refusals[0] and f"(uid {a.uid})" in refusals[0]
    finally:
        bd.stop()


def test_configured_daemon_user_is_trusted(users: tuple[User, User], prog: Path, shared_dir: str) -> None:
    """SCAF_DAEMON_USER names a shared daemon's user: the layer joins it and status answers."""
    a, b = users
    d = os.path.join(shared_dir, "bsock")
    assert run_as(b, ["mkdir", "-m", "0755", d]).returncode == 0
    sock = os.path.join(d, "scafd.sock")
    bd = BDaemon(b, sock, "--shared")
    stop = stop_file(shared_dir)
    try:
        proc = run_client(a, prog, sock, stop, {"SCAF_DAEMON_USER": b.name})
        try:
            deadline = time.monotonic() + 15
            while not bd.clients():
                assert time.monotonic() < deadline, "A's program never joined B's daemon"
                time.sleep(0.1)
        finally:
            Path(stop).touch()
            out, err = proc.communicate(timeout=60)
        assert proc.returncode == 0 and "ok=yes" in out and "refusing" not in err, err
    finally:
        bd.stop()


def test_directory_handed_out_by_root_is_trusted(users: tuple[User, User], scaf_cmd: list[str], prog: Path,
                                                 shared_dir: str) -> None:
    """A system service's socket: root gave the daemon's user its own directory in /run (what systemd's
    RuntimeDirectory= does for a dedicated or dynamic user). The same directory elsewhere is not enough."""
    a, b = users
    d = tempfile.mkdtemp(prefix="scaft-", dir="/run")
    os.chmod(d, 0o755)
    os.chown(d, b.uid, b.gid)
    elsewhere = os.path.join(shared_dir, "home-like")
    os.mkdir(elsewhere, 0o755)
    os.chown(elsewhere, b.uid, b.gid)
    stop = stop_file(shared_dir)
    daemons = []
    try:
        bd = BDaemon(b, os.path.join(d, "scafd.sock"), "--shared")
        daemons.append(bd)
        other = BDaemon(b, os.path.join(elsewhere, "scafd.sock"), "--shared")
        daemons.append(other)
        r = run_as(a, [*scaf_cmd, "status", "--socket", bd.sock], scaf_env())
        assert r.returncode == 0, r.stderr
        r = run_as(a, [*scaf_cmd, "status", "--socket", other.sock], scaf_env())
        assert r.returncode == 4, r.stderr
        proc = run_client(a, prog, bd.sock, stop)
        try:
            deadline = time.monotonic() + 15
            while not bd.clients():
                assert time.monotonic() < deadline, "A's program never joined the service's daemon"
                time.sleep(0.1)
        finally:
            Path(stop).touch()
            out, err = proc.communicate(timeout=60)
        assert proc.returncode == 0 and "ok=yes" in out and "refusing" not in err, err
    finally:
        for x in daemons:
            x.stop()
        shutil.rmtree(d, ignore_errors=True)


def test_own_directory_is_private_and_files_are_ours(users: tuple[User, User], clean_default: str,
                                                     scaf_cmd: list[str], prog: Path, shared_dir: str) -> None:
    """The ordinary case, as a real user: scaf run makes /tmp/scaf-UID 0700 and starts a daemon there."""
    a, _ = users
    stop = stop_file(shared_dir)
    Path(stop).touch()
    r = run_as(a, [*scaf_cmd, "run", "--", str(prog), stop], scaf_env())
    m = re.search(r"started a daemon on \S+ \(pid (\d+)\)", r.stderr)
    try:
        assert r.returncode == 0, r.stderr
        assert m, r.stderr
        st = os.lstat(clean_default)
        assert stat.S_ISDIR(st.st_mode) and st.st_uid == a.uid and stat.S_IMODE(st.st_mode) == 0o700
        for name in os.listdir(clean_default):
            assert os.lstat(os.path.join(clean_default, name)).st_uid == a.uid, name
        assert stat.S_IMODE(os.lstat(os.path.join(clean_default, "scafd.log")).st_mode) == 0o600
    finally:
        if m:  # the idle-exit daemon it started
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(m.group(1)), signal.SIGTERM)
