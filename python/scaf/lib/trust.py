"""Whether the daemon behind a socket may steer this user's programs: src/common/peer.c (through libscaf_launch.so), the check the layer and scaf-run make."""

from __future__ import annotations

import ctypes
import functools
import os
import socket

from scaf.lib import progkey


@functools.cache
def _lib() -> ctypes.CDLL:
    """The launch library with the trust check's signatures bound (once); raises progkey.KeyLibraryMissing."""
    lib = progkey.library()
    lib.scaf_peer_trusted_env.restype = ctypes.c_int
    lib.scaf_peer_trusted_env.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.POINTER(ctypes.c_uint)]
    lib.scaf_peer_refusal.restype = None
    lib.scaf_peer_refusal.argtypes = [ctypes.c_uint, ctypes.c_char_p, ctypes.c_size_t]
    return lib


class UntrustedDaemon(Exception):
    """The daemon on the socket runs as a user this user does not trust; the message says both uids."""

    def __init__(self, path: str, peer_uid: int) -> None:
        why = ctypes.create_string_buffer(128)
        _lib().scaf_peer_refusal(peer_uid, why, len(why))
        super().__init__(f"the daemon on {path} {why.value.decode()}; not trusting it (the layer refuses it too: "
                         "programs run unsteered)")
        self.path = path
        self.peer_uid = peer_uid


def check(sock: socket.socket, path: str) -> None:
    """Raises UntrustedDaemon unless the daemon connected on SOCK (at PATH) is one this user trusts
    (scaf_peer_trusted_env), OSError when its credentials cannot be read."""
    uid = ctypes.c_uint()
    got = _lib().scaf_peer_trusted_env(sock.fileno(), os.fsencode(path), ctypes.byref(uid))
    if got == 1:
        return
    if got < 0:
        err = ctypes.get_errno()
        raise OSError(err, f"cannot read the credentials of the daemon on {path}: {os.strerror(err)}")
    raise UntrustedDaemon(path, uid.value)
