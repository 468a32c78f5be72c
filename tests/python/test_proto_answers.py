"""scaf.lib.proto against a peer that answers wrongly: every answer the C codec does not take is one clear DaemonUnavailable, and one it takes reaches Python field by field.

The peer (tests/support/peer.py) answers with the bytes a case gives, spelled by the tests' own layouts
(tests/support/wire.py), and records what it was sent.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from scaf.lib import paths, proto
from support import wire
from support.peer import Peer, status_reply

pytestmark = pytest.mark.skipif(not paths.launch_lib().exists(), reason="libscaf_launch.so not built (make)")


@pytest.fixture
def peer(request: pytest.FixtureRequest) -> Iterator[Peer]:
    p = Peer(request.param)
    yield p
    p.close()


GOOD_REPLY = wire.memory_reply(wire.MEMORY_RECALL, wire.MEMORY_UNKNOWN, 3, wire.VERDICT_FIXED, wire.SOURCE_RULES, 5, 7)
REFUSE_V5 = wire.REFUSE.pack(wire.MAGIC, 5, wire.MSG_REFUSE, wire.REFUSE.size, 0, wire.REFUSE_VERSION, 5,
                             b"scafd speaks protocol 5, client speaks 6\x1b[2J")

MEMORY_WRONG = {
    "bad magic": (wire.header(wire.MSG_MEMORY_REPLY, 48, magic=0xDEADBEEF) + bytes(32), "bad magic 0xdeadbeef"),
    "a status instead": (wire.header(wire.MSG_STATUS_REPLY, 18) + b"{}", "type 5"),
    "a reply of protocol 5": (wire.memory_reply(wire.MEMORY_RECALL, 0, version=5), "version 5"),
    "a reply too long": (wire.memory_reply(wire.MEMORY_RECALL, 0, length=52) + bytes(4), "length 52"),
    "reserved set": (wire.memory_reply(wire.MEMORY_RECALL, 0, reserved=9), "reserved field is 9"),
    "cut short": (GOOD_REPLY[:30], "closed the connection early"),
    "nothing": (b"", "closed the connection early"),
}


@pytest.mark.parametrize(("peer", "said"), list(MEMORY_WRONG.values()), ids=list(MEMORY_WRONG), indirect=["peer"])
def test_a_wrong_memory_answer_is_one_clear_error(peer: Peer, said: str) -> None:
    with pytest.raises(proto.DaemonUnavailable) as e:
        proto.memory(peer.path, proto.MEMORY_RECALL, key=42, max_threads=4)
    assert said in str(e.value) and "\n" not in str(e.value), str(e.value)
    assert peer.asked == [wire.memory(wire.MEMORY_RECALL, key=42, max_threads=4)]


@pytest.mark.parametrize("peer", [REFUSE_V5], indirect=True)
def test_an_older_daemons_refusal_is_said_printable(peer: Peer) -> None:
    with pytest.raises(proto.DaemonUnavailable) as e:
        proto.memory(peer.path, proto.MEMORY_FORGET)
    assert str(e.value) == f"the daemon on {peer.path} refused: scafd speaks protocol 5, client speaks 6?[2J"


@pytest.mark.parametrize("peer", [None], indirect=True)
def test_a_silent_peer_did_not_answer(peer: Peer) -> None:
    with pytest.raises(proto.DaemonUnavailable, match="did not answer"):
        proto.memory(peer.path, proto.MEMORY_RECALL, key=1, max_threads=1, timeout=0.5)


@pytest.mark.parametrize("peer", [GOOD_REPLY], indirect=True)
def test_each_field_of_a_reply_reaches_python(peer: Peer) -> None:
    r = proto.memory(peer.path, proto.MEMORY_REMEMBER, key=2**64 - 1, verdict=proto.VERDICT_MALLEABLE,
                     name=b"a name of more than forty-seven bytes, which the codec cuts")
    assert (r.op, r.status, r.runs, r.verdict, r.source, r.start_team, r.forgotten) == (
        proto.MEMORY_RECALL, proto.MEMORY_UNKNOWN, 3, proto.VERDICT_FIXED, proto.SOURCE_RULES, 5, 7)
    assert peer.asked == [wire.memory(wire.MEMORY_REMEMBER, key=2**64 - 1, verdict=wire.VERDICT_MALLEABLE,
                                      name=b"a name of more than forty-seven bytes, which the codec cuts")]


@pytest.mark.parametrize(("what", "value"), [("key", 2**64), ("key", -1), ("op", 2**32), ("max_threads", -1)])
def test_a_request_field_out_of_its_c_type_is_refused_before_sending(what: str, value: int) -> None:
    with pytest.raises(ValueError, match=f"MEMORY {what}"):
        proto.memory_request(**{"op": proto.MEMORY_RECALL, what: value})


STATUS = (b'{"version": 6, "daemon_pid": 1, "policy": "speedup", "cpus": 4, "available": 4, "foreign": 0.0,'
          b' "clients": []}')
STATUS_WRONG = {
    "bad magic": (wire.header(wire.MSG_STATUS_REPLY, 16, magic=0x12345678), "bad magic 0x12345678"),
    "a refusal": (REFUSE_V5, "type 3, version 5, length 144"),
    "longer than STATUS_MAX": (wire.header(wire.MSG_STATUS_REPLY, wire.STATUS_MAX + 1), "not a STATUS_REPLY"),
    "shorter than a header": (wire.header(wire.MSG_STATUS_REPLY, 15), "length 15"),
    "a body cut short": (wire.header(wire.MSG_STATUS_REPLY, 16 + len(STATUS)) + STATUS[:10],
                         "closed the connection early"),
}


@pytest.mark.parametrize(("peer", "said"), list(STATUS_WRONG.values()), ids=list(STATUS_WRONG), indirect=["peer"])
def test_a_wrong_status_answer_is_one_clear_error(peer: Peer, said: str) -> None:
    with pytest.raises(proto.DaemonUnavailable) as e:
        proto.status(peer.path)
    assert said in str(e.value) and "\n" not in str(e.value), str(e.value)
    assert peer.asked == [wire.header(wire.MSG_STATUS_REQ, 16)]


@pytest.mark.parametrize("peer", [status_reply(STATUS)], indirect=True)
def test_a_status_reply_is_read(peer: Peer) -> None:
    assert proto.status(peer.path)["policy"] == "speedup"


def test_an_unknown_name_is_no_constant() -> None:
    with pytest.raises(AttributeError):
        _ = proto.MSG_NO_SUCH
