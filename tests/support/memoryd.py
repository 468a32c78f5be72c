"""A scripted daemon for the memory requests of scaf run, scaf forget and scaf check: a real Unix socket that answers STATUS with a minimal status and MEMORY as a test says, and records what it was asked.

It stands in for scafd's memory store (docs/memory.md) in tests of the commands' side: what they ask, with
which key, and what they do with each answer. The store itself is tested with the daemon.
"""

from __future__ import annotations

import json
import os
import socket
import threading
from dataclasses import dataclass, field

from scaf.lib import proto

from support import wire


@dataclass
class Asked:
    """One MEMORY request as the command sent it (struct scaf_msg_memory)."""

    op: int
    max_threads: int
    key: int
    verdict: int
    name: str


@dataclass
class Answer:
    """What the daemon answers to an op (struct scaf_msg_memory_reply's fields)."""

    status: int = proto.MEMORY_OK
    runs: int = 0
    verdict: int = 0
    source: int = 0
    start_team: int = 0
    forgotten: int = 0


@dataclass
class Memoryd:
    """Listens on `path` in a thread of the test. `answers[op]` is the Answer to that op (default: OK with
    nothing); `refuse` makes it answer every MEMORY with a REFUSE of an older protocol instead."""

    path: str
    answers: dict[int, Answer] = field(default_factory=dict)
    refuse: bool = False
    asked: list[Asked] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.srv.bind(self.path)
        self.srv.listen(16)
        self.srv.settimeout(0.2)
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.stopping.set()
        self.thread.join(timeout=5)
        self.srv.close()
        if os.path.exists(self.path):
            os.unlink(self.path)

    def _serve(self) -> None:
        while not self.stopping.is_set():
            try:
                conn, _ = self.srv.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            with conn:
                conn.settimeout(5)
                try:
                    self._one(conn)
                except (OSError, wire.DaemonUnavailable):
                    pass

    def _one(self, conn: socket.socket) -> None:
        head = wire.recv_exact(conn, wire.HEADER.size)
        _magic, _version, mtype, length, _ = wire.HEADER.unpack(head)
        if mtype == wire.MSG_STATUS_REQ:
            body = json.dumps({"version": wire.VERSION, "daemon_pid": os.getpid(), "policy": "equipartition",
                               "cpus": 2, "available": 2, "clients": []}).encode()
            conn.sendall(wire.header(wire.MSG_STATUS_REPLY, wire.HEADER.size + len(body)) + body)
            return
        if mtype != wire.MSG_MEMORY or length != wire.MEMORY.size:
            return
        f = wire.MEMORY.unpack(head + wire.recv_exact(conn, wire.MEMORY.size - wire.HEADER.size))
        op, max_threads, key, verdict, name = f[5], f[6], f[7], f[8], f[10]
        self.asked.append(Asked(op, max_threads, key, verdict, name.split(b"\0")[0].decode(errors="replace")))
        if self.refuse:
            text = b"scafd speaks protocol 5, client speaks 6".ljust(120, b"\0")
            conn.sendall(wire.REFUSE.pack(wire.MAGIC, 5, wire.MSG_REFUSE, wire.REFUSE.size, 0,
                                          wire.REFUSE_VERSION, 5, text))
            return
        a = self.answers.get(op, Answer())
        conn.sendall(wire.memory_reply(op, a.status, a.runs, a.verdict, a.source, a.start_team, a.forgotten))
