"""A stand-in for a daemon that answers wrongly on purpose: a real Unix socket in the test's process (trusted: it is the test user's) that reads each request and answers it with the bytes the test gives, recording what it was sent."""

from __future__ import annotations

import os
import shutil
import socket
import threading

from conftest import short_tmpdir

from support import wire


class Peer:
    """Answers each connection's request (a header and the body it announces) with ANSWER, then closes;
    ANSWER None: says nothing until the asker gives up. `asked` holds the requests, whole."""

    def __init__(self, answer: bytes | None) -> None:
        self.dir = short_tmpdir()
        self.path = os.path.join(self.dir, "peer.sock")
        self.answer = answer
        self.asked: list[bytes] = []
        self.srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.srv.bind(self.path)
        self.srv.listen(4)
        self.done = threading.Event()
        self.thread = threading.Thread(target=self.serve, daemon=True)
        self.thread.start()

    def serve(self) -> None:
        while True:
            try:
                conn, _ = self.srv.accept()
            except OSError:
                return
            with conn:
                try:
                    head = wire.recv_exact(conn, wire.HEADER.size)
                    length = wire.HEADER.unpack(head)[3]
                    self.asked.append(head + wire.recv_exact(conn, max(length - wire.HEADER.size, 0)))
                    if self.answer is None:
                        self.done.wait(10)
                    else:
                        conn.sendall(self.answer)
                except (OSError, wire.DaemonUnavailable):
                    pass

    def close(self) -> None:
        self.done.set()
        self.srv.close()
        shutil.rmtree(self.dir, ignore_errors=True)


def status_reply(body: bytes) -> bytes:
    """BODY framed as scafd frames a status: a STATUS_REPLY header, then the bytes."""
    return wire.header(wire.MSG_STATUS_REPLY, wire.HEADER.size + len(body)) + body
