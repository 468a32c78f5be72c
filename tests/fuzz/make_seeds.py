"""make_seeds.py — writes the fuzzer's seed corpus (tests/fuzz/corpus/): valid and near-valid messages and pages."""

from __future__ import annotations

import struct
import sys
from pathlib import Path

MAGIC = 0x46414353
VERSION = 6
PAGE_MAGIC = 0x45474150


def header(typ: int, length: int, magic: int = MAGIC, version: int = VERSION, reserved: int = 0) -> bytes:
    return struct.pack("<IHHII", magic, version, typ, length, reserved)


def hello(max_threads: int = 4, flags: int = 0, name: bytes = b"prog", reserved: int = 0, key: int = 0) -> bytes:
    return header(1, 56) + struct.pack("<II16sQ2I", max_threads, flags, name, key, 0, reserved)


def memory(op: int = 1, max_threads: int = 4, key: int = 42, verdict: int = 0, name: bytes = b"",
           reserved: int = 0) -> bytes:
    return header(6, 88) + struct.pack("<IIQII48s", op, max_threads, key, verdict, reserved, name)


def welcome(client_id: int = 7, page_size: int = 4096, cpus: int = 8, version: int = VERSION,
            reserved: int = 0) -> bytes:
    return header(2, 32, version=version, reserved=reserved) + struct.pack("<4I", client_id, page_size, cpus, 0)


def refuse(reason: int = 3, text: bytes = b"client table full", version: int = VERSION, length: int = 144) -> bytes:
    return header(3, length, version=version) + struct.pack("<II120s", reason, version, text)


def page_head(magic: int = PAGE_MAGIC, version: int = VERSION) -> bytes:
    """The first words of the page a WELCOME's descriptor maps."""
    return struct.pack("<8I", magic, version, 2, 3, 0, 8, 2, 0)


def page(fields: dict[str, int], reason: bytes = b"") -> bytes:
    """A page image: the daemon half as scafd writes it, then the client half from `fields`."""
    daemon = struct.pack("<8I", PAGE_MAGIC, VERSION, 2, 3, 0, 8, 2, 0) + struct.pack("<16Q", *([0xFF] + [0] * 15))
    daemon += struct.pack("<I", 0) + bytes(60)
    names = ["client_flags", "fixed_team", "last_team", "eff_team", "efficiency_ppm", "estimate",
             "experiment_pid", "client_seq"]
    client = struct.pack("<6Ii", *[fields.get(n, 0) for n in names[:6]], fields.get("experiment_pid", 0))
    client += struct.pack("<I", fields.get("client_seq", 0))
    client += struct.pack("<QQ", fields.get("regions", 0), fields.get("experiments", 0))
    client += struct.pack("<4I", fields.get("verdict", 0), fields.get("verdict_source", 0),
                          fields.get("reason_seq", 0), 0)
    client += reason.ljust(200, b"\0")[:200] + bytes(64)
    # protocol 6: the daemon's memory half (start team, runs, verdict, source, known sites), then the client's.
    memory = struct.pack("<6I", 1, 2, 2, 1, 0, 0) + bytes(64 * 16)
    learned = fields.get("learned", [])
    memory += struct.pack("<II", fields.get("started_with", 0), fields.get("learned_sites", len(learned)))
    memory += b"".join(struct.pack("<QII", *e) for e in learned).ljust(64 * 16, b"\0")[:64 * 16]
    img = daemon + client + memory
    assert len(img) == 2632, len(img)
    return img


def seeds() -> dict[str, bytes]:
    s = {
        "stream-hello": hello(),
        "stream-hello-fixed": hello(flags=1),
        "stream-status": header(4, 16),
        "stream-hello-status": hello() + header(4, 16),
        "stream-two-hellos": hello() + hello(),
        "stream-status-hello": header(4, 16) + hello(max_threads=1024),
        "stream-bad-magic": header(4, 16, magic=0xDEADBEEF),
        "stream-old-version": header(1, 56, version=2) + bytes(40),
        "stream-bad-type": header(9, 16),
        "stream-long-length": header(1, 1 << 20),
        "stream-short-hello": header(1, 16),
        "stream-reserved": header(4, 16, reserved=1),
        "stream-truncated-hello": hello()[:30],
        "stream-hello-zero-threads": hello(max_threads=0),
        "stream-hello-many-threads": hello(max_threads=1025),
        "stream-hello-flags": hello(flags=0x80),
        "stream-hello-reserved": hello(reserved=7),
        "stream-hello-key": hello(key=0x0123456789ABCDEF),
        "stream-memory-recall": memory(),
        "stream-memory-forget-all": memory(op=2, max_threads=0, key=0),
        "stream-memory-remember": memory(op=3, max_threads=0, verdict=2, name=b"xgboost train.py"),
        "stream-memory-remember-unterminated": memory(op=3, max_threads=0, verdict=2, name=b"x" * 48),
        "stream-memory-op": memory(op=9),
        "stream-memory-status": memory() + header(4, 16),
        "stream-hello-memory": hello() + memory(),
        "stream-hello-wake": hello() + header(8, 16) + header(4, 16),
        "stream-wake-first": header(8, 16),
    }
    answers = {
        "answer-welcome": welcome() + page_head(),
        "answer-welcome-no-page": welcome(),
        "answer-welcome-page-v4": welcome() + page_head(version=4),
        "answer-welcome-page-magic": welcome() + page_head(magic=0x12345678),
        "answer-welcome-v4": welcome(version=4) + page_head(),
        "answer-welcome-reserved": welcome(reserved=1) + page_head(),
        "answer-welcome-page-size": welcome(page_size=8192) + page_head(),
        "answer-welcome-truncated": welcome()[:20],
        "answer-refuse": refuse(),
        "answer-refuse-v4": refuse(reason=1, text=b"scafd speaks protocol 4, client speaks 5", version=4),
        "answer-refuse-unterminated": refuse(reason=99, text=b"x" * 120),
        "answer-refuse-short": refuse(length=143),
        "answer-status-reply": header(5, 20) + b"{}\n\0",
        "answer-hello-echo": hello(),
        "answer-bad-magic": header(2, 32, magic=0xDEADBEEF) + bytes(16),
    }
    # What a daemon answers MEMORY (first byte 4) or STATUS_REQ (12), as scaf-run and Python's proto read it.
    reply = header(7, 48) + struct.pack("<8I", 1, 0, 3, 2, 1, 2, 0, 0)
    replies = {
        "reply-memory": b"\x04" + reply,
        "reply-memory-reserved": b"\x04" + reply[:-4] + struct.pack("<I", 1),
        "reply-memory-v5": b"\x04" + header(7, 48, version=5) + reply[16:],
        "reply-memory-refuse-v5": b"\x04" + refuse(reason=1, text=b"scafd speaks protocol 5\x1b[2J", version=5),
        "reply-memory-truncated": b"\x04" + reply[:30],
        "reply-memory-status": b"\x04" + header(5, 20) + b"{}\n\0",
        "reply-status": b"\x0c" + header(5, 20) + b"{}\n\0",
        "reply-status-too-long": b"\x0c" + header(5, (1 << 20) + 1),
        "reply-status-refuse": b"\x0c" + refuse(),
    }
    ctx = b"\x00\x04"  # max_threads 5, not fixed at HELLO
    pages = {
        "page-empty": page({}),
        "page-measured": page({"eff_team": 4, "efficiency_ppm": 750000, "estimate": 2, "last_team": 4,
                               "regions": 100, "verdict": 1, "verdict_source": 1}, b"omp_get_num_threads"),
        "page-liar": page({"eff_team": 1024, "efficiency_ppm": 1000000, "estimate": 2, "last_team": 1024}),
        "page-overflow": page({"eff_team": 0xFFFFFFFF, "efficiency_ppm": 0xFFFFFFFF, "estimate": 99,
                               "fixed_team": 0xFFFFFFFF, "verdict": 7, "verdict_source": 9}),
        "page-torn": page({"client_seq": 1, "reason_seq": 3, "estimate": 1}, b"x"),
        "page-fixed": page({"client_flags": 3, "fixed_team": 8, "experiment_pid": -1}, b"\x01\x1b[31mred\x7f"),
        "page-reason-full": page({"estimate": 3, "efficiency_ppm": 5}, b"A" * 200),
        "page-learned": page({"started_with": 2, "learned": [(0xABCDEF, 0x1580, 1), (0xABCDEF, 0x1600, 0xB)]}),
        "page-learned-liar": page({"learned_sites": 0xFFFFFFFF, "learned": [(0, 0xFFFFFFFF, 0xFFFFFFFF)] * 64}),
    }
    for name, img in pages.items():
        s[name] = b"\x01" + ctx + img
    s["page-hello-fixed"] = b"\x01\x80\x00" + pages["page-measured"]
    s.update({name: b"\x02" + data for name, data in answers.items()})
    s.update(replies)
    return {name: (b"\x00" + data if name.startswith("stream") else data) for name, data in s.items()}


def main() -> int:
    out = Path(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).parent / "corpus")
    out.mkdir(parents=True, exist_ok=True)
    for name, data in seeds().items():
        (out / name).write_bytes(data)
    return 0


if __name__ == "__main__":
    sys.exit(main())
