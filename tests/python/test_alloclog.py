"""scaf.lib.alloclog: the one reader of a daemon's --log, each line validated like a status, a bad line named."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import ROOT
from scaf.lib import alloclog

FIXTURE = ROOT / "tests" / "fixtures" / "alloc.jsonl"


def line(t: float, **fields: object) -> str:
    return json.dumps({"time": t, "clients": [], **fields})


def test_the_fixture_reads_whole() -> None:
    recs = alloclog.read(FIXTURE)
    assert len(recs) == len(FIXTURE.read_text().splitlines())
    assert all(isinstance(r["time"], float) for r in recs)
    assert 1001 in alloclog.client_pids(recs)


@pytest.mark.parametrize(("text", "why"), [
    ("not json", "not JSON"),
    ("[1]", "a JSON list, expected an object"),
    ('{"clients": []}', 'no "time" field'),
    ('{"time": 1}', 'no "clients" field'),
    ('{"time": "1", "clients": []}', 'time is "1", expected int or float'),
    ('{"time": 1, "clients": {}}', "clients is {}, expected list"),
    ('{"time": 1, "clients": [3]}', "clients[0] is 3, expected an object"),
    ('{"time": 1, "clients": [{"pid": true}]}', "clients[0].pid is true, expected int"),
    ('{"time": 1, "cpus": "4", "clients": []}', 'cpus is "4", expected int'),
    ("[" * 20 + "]" * 20, "nested 20 levels deep"),
])
def test_a_malformed_line_is_named(tmp_path: Path, text: str, why: str) -> None:
    log = tmp_path / "a.jsonl"
    log.write_text(f"{line(0.0)}\n\n{text}\n{line(1.0)}\n")
    with pytest.raises(alloclog.BadAllocLog) as e:
        alloclog.read(log)
    assert f"a.jsonl line 3: {why}" in str(e.value)


def test_an_unfinished_last_line_is_left_out(tmp_path: Path) -> None:
    log = tmp_path / "a.jsonl"
    log.write_text(f"{line(0.0)}\n{line(1.0)}\n" + '{"time": 2, "cli')
    assert [r["time"] for r in alloclog.read(log)] == [0.0, 1.0]
    # Complete but malformed, the same text is an error.
    log.write_text(f"{line(0.0)}\n" + '{"time": 2, "cli\n')
    with pytest.raises(alloclog.BadAllocLog, match="line 2"):
        alloclog.read(log)


def test_a_missing_log(tmp_path: Path) -> None:
    with pytest.raises(alloclog.BadAllocLog, match="cannot read"):
        alloclog.read(tmp_path / "none.jsonl")
    assert alloclog.read(tmp_path / "none.jsonl", missing_ok=True) == []
