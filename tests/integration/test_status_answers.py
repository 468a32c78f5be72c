"""`scaf status` against something that answers malformed status JSON: one line and exit 3, never a traceback.

The peer is a real Unix socket in this test process (tests/support/peer.py), framing its answers exactly as
scafd does (a 16-byte header, then the JSON), so only the content is wrong.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator

import pytest
from conftest import SCAF
from support.peer import Peer, status_reply

MALFORMED = {
    "list": b"[]",
    "string": b'"x"',
    "clients-number": b'{"policy": "speedup", "cpus": 4, "clients": 5}',
    "clients-of-numbers": b'{"policy": "speedup", "cpus": 4, "clients": [1, 2]}',
    "nested-arrays": b"[" * 100000 + b"]" * 100000,
    "nested-in-object": b'{"policy": "x", "cpus": 1, "clients": [], "extra": ' + b"[" * 50 + b"]" * 50 + b"}",
    "not-json": b"{nope",
    "not-utf8": b'{"policy": "\xff\xfe", "cpus": 1, "clients": []}',
    "cpus-string": b'{"policy": "speedup", "cpus": "4", "clients": []}',
    "no-clients": b'{"policy": "speedup", "cpus": 4}',
    "client-pid-bool": b'{"policy": "speedup", "cpus": 4, "clients": [{"pid": true, "name": "x", "threads": 1}]}',
    "cpuset-of-strings": b'{"policy": "p", "cpus": 4, "clients": [{"pid": 1, "name": "x", "threads": 1, "cpuset": ["a"]}]}',
    "memory-a-number": b'{"policy": "p", "cpus": 4, "clients": [{"pid": 1, "name": "x", "memory": 3}]}',
    "memory-runs-string": b'{"policy": "p", "cpus": 4, "clients": [{"pid": 1, "name": "x", "memory": {"runs": "3"}}]}',
    "started-with-bool": b'{"policy": "p", "cpus": 4, "clients": [{"pid": 1, "name": "x", "started_with": true}]}',
}


@pytest.fixture(params=list(MALFORMED))
def fake(request: pytest.FixtureRequest) -> Iterator[Peer]:
    f = Peer(status_reply(MALFORMED[request.param]))
    yield f
    f.close()


@pytest.mark.parametrize("json_flag", [[], ["--json"]])
def test_malformed_status_is_one_line_and_exit_3(fake: Peer, json_flag: list[str]) -> None:
    r = subprocess.run([str(SCAF), "status", "--socket", fake.path, *json_flag], capture_output=True, text=True,
                       timeout=60, check=False)
    assert r.returncode == 3, r.stderr
    assert r.stdout == ""
    assert len(r.stderr.splitlines()) == 1, r.stderr
    assert r.stderr.startswith(f"scaf: the daemon on {fake.path} sent a malformed status: "), r.stderr
    assert "Traceback" not in r.stderr


def test_wellformed_fake_answer_is_shown() -> None:
    """The same peer with a good answer: the check passes what a daemon really sends."""
    body = (b'{"version": 3, "daemon_pid": 1, "policy": "speedup", "cpus": 4, "available": 4, "foreign": 0.0,'
            b' "clients": [{"pid": 42, "name": "p[[[[[[[[[[[\\"[x", "threads": 2, "share": 2, "malleable": true,'
            b' "cpuset": [0, 1], "efficiency": null, "reason": null, "future_field": {"a": [1]}}]}')
    f = Peer(status_reply(body))
    try:
        r = subprocess.run([str(SCAF), "status", "--socket", f.path], capture_output=True, text=True, timeout=60,
                           check=False)
    finally:
        f.close()
    assert r.returncode == 0, r.stderr
    assert "42" in r.stdout and 'p[[[[[[[[[[["[x' in r.stdout  # brackets in a string are no nesting


def test_what_was_remembered_is_shown() -> None:
    """A client the daemon remembered, started with its share: the table's REMEMBERED cell and the why-line."""
    body = (b'{"version": 6, "daemon_pid": 1, "policy": "speedup", "cpus": 2, "available": 2, "foreign": 0.0,'
            b' "clients": [{"pid": 42, "name": "xgb", "threads": 1, "share": 1, "malleable": false,'
            b' "verdict": "fixed", "verdict_source": "evidence", "reason": "omp_set_num_threads(2)",'
            b' "estimate": "remembered", "efficiency": 0.5, "cpuset": [0], "control": "cpuset",'
            b' "memory": {"runs": 3, "verdict": "fixed", "source": "evidence"}, "start_team": 1, "started_with": 1},'
            b' {"pid": 43, "name": "ep", "threads": 1, "share": 1, "malleable": true, "cpuset": [],'
            b' "memory": null, "start_team": 1, "started_with": 0}]}')
    f = Peer(status_reply(body))
    try:
        r = subprocess.run([str(SCAF), "status", "-v", "--socket", f.path], capture_output=True, text=True,
                           timeout=60, check=False)
    finally:
        f.close()
    assert r.returncode == 0, r.stderr
    (row,) = [ln for ln in r.stdout.splitlines() if ln.split()[:2] == ["42", "xgb"]]
    assert "fixed, 3 runs" in row and " remembered " in row, r.stdout
    assert "fixed (by evidence): omp_set_num_threads(2); fixed, remembered from 3 runs; started with 1 of 2 contexts " \
           "(cannot grow)" in r.stdout, r.stdout
    assert "43 ep: malleable (by -): (not given)\n" in r.stdout, r.stdout
