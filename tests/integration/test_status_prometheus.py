"""`scaf status --prometheus`: a real daemon's state, parsed with prometheus_client's own text parser."""

from __future__ import annotations

import os
import pwd
import subprocess

import pytest
from conftest import SCAF, short_tmpdir
from prometheus_client.parser import text_string_to_metric_families
from support import wire


def status(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(SCAF), "status", "--prometheus", *args], check=False, capture_output=True,
                          text=True, timeout=60)


def families(text: str) -> dict:
    return {f.name: f for f in text_string_to_metric_families(text)}


def test_metrics_of_a_daemon_with_a_client_and_a_refusal(scafd_factory) -> None:
    d = scafd_factory("--policy", "equipartition", "--cpus", "4", "--no-lookout", "--max-clients", "1")
    conn, _page, _ = wire.register(d.socket, 4, name=b'odd "name"\\')
    try:
        with pytest.raises(wire.Refused):
            wire.register(d.socket, 4, name=b"second")
        d.wait_for(lambda s: len(s["clients"]) == 1 and s["refused"] == 1, what="one client, one refusal")
        res = status("--socket", d.socket)
        assert res.returncode == 0, res.stderr
        fams = families(res.stdout)
    finally:
        conn.close()

    def value(name: str, **labels: str) -> float:
        samples = [s for f in fams.values() for s in f.samples
                   if s.name == name and all(s.labels.get(k) == v for k, v in labels.items())]
        assert len(samples) == 1, (name, labels, samples)
        return samples[0].value

    assert value("scaf_up", socket=d.socket) == 1
    assert value("scaf_info", policy="equipartition", limit="--cpus") == 1
    assert value("scaf_cpus") == 4
    assert value("scaf_available_cpus") == 4
    assert value("scaf_foreign_load_cpus") == 0
    assert value("scaf_clients") == 1
    assert fams["scaf_refused_clients"].type == "counter"
    assert value("scaf_refused_clients_total") == 1
    me = pwd.getpwuid(os.getuid()).pw_name
    pid = str(os.getpid())
    (sample,) = fams["scaf_client_threads"].samples
    assert sample.labels["pid"] == pid and sample.labels["user"] == me
    assert 1 <= sample.value <= 4
    assert value("scaf_client_share_cpus", pid=pid) == sample.value
    assert fams["scaf_client_regions"].type == "counter"
    # Efficiency is absent while the daemon does not know it, never a made-up number.
    assert "scaf_client_efficiency" not in fams or len(fams["scaf_client_efficiency"].samples) == 1


def test_no_daemon_is_up_zero() -> None:
    sock = os.path.join(short_tmpdir(), "none.sock")
    res = status("--socket", sock)
    assert res.returncode == 1 and "no daemon answers" in res.stderr
    fams = families(res.stdout)
    assert list(fams) == ["scaf_up"]
    assert fams["scaf_up"].samples[0].value == 0


def test_json_and_prometheus_exclude_each_other() -> None:
    res = subprocess.run([str(SCAF), "status", "--json", "--prometheus"], check=False, capture_output=True,
                         text=True, timeout=60)
    assert res.returncode == 2 and "not allowed with argument" in res.stderr
    assert res.stderr.startswith("usage: scaf status")


def client_as(uid: int, gid: int, sock: str) -> tuple[int, int]:
    """A forked child that drops to uid/gid, registers on sock and stays until the returned pipe closes:
    (pid, write end to close)."""
    ready_r, ready_w = os.pipe()
    hold_r, hold_w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        code = 1
        try:
            os.close(ready_r)
            os.close(hold_w)
            os.setgroups([])
            os.setgid(gid)
            os.setuid(uid)
            conn, _page, _ = wire.register(sock, 2, name=b"guest")
            os.write(ready_w, b"ok")
            os.read(hold_r, 1)
            conn.close()
            code = 0
        finally:
            os._exit(code)
    os.close(ready_w)
    os.close(hold_r)
    ok = os.read(ready_r, 2)
    os.close(ready_r)
    assert ok == b"ok", "the other user's client did not register"
    return pid, hold_w


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to run a client as another user")
def test_shared_daemon_shows_each_clients_user(scafd_factory) -> None:
    d = scafd_factory("--shared", "--cpus", "4", "--no-lookout")
    os.chmod(os.path.dirname(d.socket), 0o755)  # the private test folder: let the other user reach the socket
    nobody = pwd.getpwnam("nobody")
    me = pwd.getpwuid(os.getuid()).pw_name
    mine = wire.register(d.socket, 2, name=b"mine")[0]
    other, hold = client_as(nobody.pw_uid, nobody.pw_gid, d.socket)
    try:
        st = d.wait_for(lambda s: len(s["clients"]) == 2, what="two clients")
        assert sorted(c["uid"] for c in st["clients"]) == sorted([os.getuid(), nobody.pw_uid])
        human = subprocess.run([str(SCAF), "status", "--socket", d.socket], check=False, capture_output=True,
                               text=True, timeout=60)
        assert human.returncode == 0, human.stderr
        users = {ln.split()[0]: ln.split()[-1] for ln in human.stdout.splitlines()
                 if ln.split() and ln.split()[0].isdigit()}
        assert users == {str(os.getpid()): me, str(other): "nobody"}
        fams = families(status("--socket", d.socket).stdout)
        assert {s.labels["user"] for s in fams["scaf_client_threads"].samples} == {me, "nobody"}
    finally:
        mine.close()
        os.close(hold)
        _, code = os.waitpid(other, 0)
    assert code == 0


def test_remembered_runs_of_a_remembered_client(scafd_factory) -> None:
    d = scafd_factory("--policy", "equipartition", "--cpus", "4", "--no-lookout")
    s, page, _ = wire.register(d.socket, 4, key=0x5CAF)
    page.decide(wire.VERDICT_FIXED, wire.SOURCE_EVIDENCE)
    s.close()
    d.wait_for(lambda st: st["clients"] == [], what="the first run gone")
    held = [wire.register(d.socket, 4, key=0x5CAF), wire.register(d.socket, 4, name=b"new")]
    try:
        res = status("--socket", d.socket)
    finally:
        for sock, _, _ in held:
            sock.close()
    assert res.returncode == 0, res.stderr
    # One sample: the remembered client's; the new program has none (nothing remembered, not a made-up 0).
    (sample,) = families(res.stdout)["scaf_client_remembered_runs"].samples
    assert sample.value == 1 and sample.labels["pid"] == str(os.getpid()), sample
