"""The rules Python reaches through libscaf_launch.so (rundir, trust, sockpath, the oneTBB probe) given bad input: each C status becomes the module's exception with the C code's reason, never a crash or a silent pass."""

from __future__ import annotations

import os
import socket
import stat
from pathlib import Path

import pytest
from scaf.lib import paths, rundir, runtimes, sockpath, trust

pytestmark = pytest.mark.skipif(not paths.launch_lib().exists(), reason="libscaf_launch.so not built (make)")


# ---- the socket's directory (src/common/rundir.c) --------------------------------------------


def test_open_dir_creates_only_the_last_component(tmp_path: Path) -> None:
    d = tmp_path / "scaf"
    fd = rundir.open_dir(str(d))
    try:
        assert stat.S_IMODE(d.stat().st_mode) == 0o700 and os.path.samestat(os.fstat(fd), d.stat())
    finally:
        os.close(fd)
    with pytest.raises(rundir.UnsafeDir, match=f"directory {tmp_path}/no/such: cannot create it"):
        rundir.open_dir(str(tmp_path / "no" / "such"))
    assert not (tmp_path / "no").exists()


@pytest.mark.parametrize(("make", "private", "why"), [
    ("symlink", True, "is a symbolic link"),
    ("file", True, "is not a directory"),
    ("open 0777", True, "writable by other users (mode 777)"),
    ("open 0777", False, "writable by every user and not sticky (mode 777)"),
    ("sticky 1777", True, "writable by other users"),
])
def test_open_dir_refuses(tmp_path: Path, make: str, private: bool, why: str) -> None:
    d = tmp_path / "d"
    if make == "symlink":
        (tmp_path / "elsewhere").mkdir()
        d.symlink_to(tmp_path / "elsewhere")
    elif make == "file":
        d.write_text("")
    else:
        d.mkdir()
        os.chmod(d, int(make.split()[1], 8))
    with pytest.raises(rundir.UnsafeDir) as e:
        os.close(rundir.open_dir(str(d), private=private))
    msg = str(e.value)
    assert msg.startswith(f"directory {d}: it ") and why in msg and msg.endswith("; nothing was written there"), msg


def test_open_dir_shared_accepts_a_sticky_directory(tmp_path: Path) -> None:
    d = tmp_path / "d"
    d.mkdir()
    os.chmod(d, 0o1777)
    os.close(rundir.open_dir(str(d), private=False))


def test_open_in_refuses_links_and_files_not_ours_alone(tmp_path: Path) -> None:
    dfd = rundir.open_dir(str(tmp_path))
    try:
        (tmp_path / "target").write_text("keep")
        (tmp_path / "link").symlink_to(tmp_path / "target")
        with pytest.raises(rundir.UnsafeDir, match="link is a symbolic link; nothing was written there"):
            rundir.open_in(dfd, "link", os.O_WRONLY | os.O_APPEND)
        os.link(tmp_path / "target", tmp_path / "second")
        with pytest.raises(rundir.UnsafeDir, match="second is not a plain file of yours"):
            rundir.open_in(dfd, "second", os.O_WRONLY | os.O_APPEND)
        assert (tmp_path / "target").read_text() == "keep"
        (tmp_path / "sub").mkdir()
        with pytest.raises(rundir.UnsafeDir, match="cannot open sub"):
            rundir.open_in(dfd, "sub", os.O_WRONLY)
        fd = rundir.open_in(dfd, "new.log", os.O_WRONLY | os.O_CREAT | os.O_APPEND)
        os.close(fd)
        assert stat.S_IMODE((tmp_path / "new.log").stat().st_mode) == 0o600
    finally:
        os.close(dfd)


# ---- peer trust (src/common/peer.c) ---------------------------------------------------------


def test_trust_of_our_own_peer_and_of_a_closed_socket() -> None:
    a, b = socket.socketpair()
    try:
        trust.check(a, "/nowhere/scafd.sock")  # our own uid: trusted, nothing raised
    finally:
        a.close()
        b.close()
    with pytest.raises(OSError, match="cannot read the credentials of the daemon on /x.sock"):
        trust.check(a, "/x.sock")  # closed: fileno() is -1, the C check says EBADF


def test_untrusted_daemon_words_both_uids() -> None:
    e = trust.UntrustedDaemon("/tmp/s/scafd.sock", 4242)
    assert str(e) == (f"the daemon on /tmp/s/scafd.sock runs as uid 4242, not as you (uid {os.getuid()}), root or "
                      "SCAF_DAEMON_USER; not trusting it (the layer refuses it too: programs run unsteered)")
    assert (e.path, e.peer_uid) == ("/tmp/s/scafd.sock", 4242)


# ---- the default socket path (src/common/sockpath.c) ----------------------------------------


def test_default_socket_follows_this_process_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """The C search order reads the process's environment: os.environ's changes reach it (putenv)."""
    monkeypatch.setenv("SCAF_SOCKET", "/x/named.sock")
    monkeypatch.setenv("XDG_RUNTIME_DIR", "/run/user/77")
    assert sockpath.default_socket() == "/x/named.sock"
    assert sockpath.user_socket() == "/run/user/77/scaf/scafd.sock"
    monkeypatch.setenv("SCAF_SOCKET", "")
    assert sockpath.default_socket() == "/run/user/77/scaf/scafd.sock"
    monkeypatch.delenv("XDG_RUNTIME_DIR")
    assert sockpath.default_socket() == f"/tmp/scaf-{os.getuid()}/scafd.sock"
    long = "/tmp/" + "z" * 300 + "/s.sock"
    monkeypatch.setenv("SCAF_SOCKET", long)
    assert sockpath.default_socket() == long  # whole, for the command to say it is too long


# ---- the oneTBB probe (src/common/tbblib.c) -------------------------------------------------


def test_tbb_info_of_files_that_are_not_a_library(tmp_path: Path) -> None:
    assert runtimes.tbb_info(str(tmp_path / "missing")) == runtimes.Tbb(str(tmp_path / "missing"), "", False)
    assert runtimes.tbb_info(str(tmp_path)) == runtimes.Tbb(str(tmp_path), "", False)  # a directory
    f = tmp_path / "libtbb.so.12"
    f.write_bytes(b"\0" * 70000 + b"oneTBB: VERSION\t\t2022.1.0\0" + b"x" * 10 + b"tcmConnect\0")
    assert runtimes.tbb_info(str(f)) == runtimes.Tbb(str(f), "2022.1.0", True)
    assert runtimes.tbb_info(str(f)).label() == f"oneTBB 2022.1.0 ({f})"
    assert runtimes.tbb_tcm_first() == "2021.11"
