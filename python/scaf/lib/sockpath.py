"""Where the daemon's socket is when none is named: src/common/sockpath.c's search order (through libscaf_launch.so), as scafd and the layer find it."""

from __future__ import annotations

import ctypes
import functools
import os

from scaf.lib import progkey


class SocketPathTooLong(ValueError):
    """The search order gives a path longer than a Unix socket address holds."""


@functools.cache
def _lib() -> ctypes.CDLL:
    """The launch library with the search order's signatures bound (once); raises progkey.KeyLibraryMissing."""
    lib = progkey.library()
    for fn in (lib.scaf_sockpath_default, lib.scaf_sockpath_user):
        fn.restype, fn.argtypes = ctypes.c_int, [ctypes.c_char_p, ctypes.c_size_t]
    return lib


def _path(fn: ctypes._CFuncPtr, what: str) -> str:
    buf = ctypes.create_string_buffer(4096)
    if fn(buf, len(buf)) != 0:
        raise SocketPathTooLong(f"{what} is too long for a Unix socket address; name one with --socket")
    return os.fsdecode(buf.value)


def default_socket() -> str:
    """The socket a command talks to when none is named (scaf_sockpath_default, documented in the README)."""
    return _path(_lib().scaf_sockpath_default, "the default socket path")


def user_socket() -> str:
    """This user's own socket, the search order without the user's socket variable (scaf_sockpath_user): the
    only path `scaf run` starts a daemon on."""
    return _path(_lib().scaf_sockpath_user, "this user's socket path")
