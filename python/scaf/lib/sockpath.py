"""Where the daemon's socket is when none is named: src/common/sockpath.c's search order (through libscaf_launch.so), as scafd and the layer find it."""

from __future__ import annotations

import ctypes
import functools
import os

from scaf.lib import progkey


@functools.cache
def _lib() -> ctypes.CDLL:
    """The launch library with the search order's signatures bound (once); raises progkey.KeyLibraryMissing."""
    lib = progkey.library()
    for fn in (lib.scaf_sockpath_default, lib.scaf_sockpath_user):
        fn.restype, fn.argtypes = ctypes.c_int, [ctypes.c_char_p, ctypes.c_size_t]
    return lib


# Room for any path the search order makes: the kernel holds no environment string longer (MAX_ARG_STRLEN).
_ROOM = (128 << 10) + 64


def _path(fn: ctypes._CFuncPtr) -> str:
    """The path FN writes. One too long for a Unix socket address is given whole all the same: the commands
    say what is wrong with it where they use it (autostart.socket_problem), as they do for one named with
    --socket."""
    buf = ctypes.create_string_buffer(_ROOM)
    fn(buf, len(buf))
    return os.fsdecode(buf.value)


def default_socket() -> str:
    """The socket a command talks to when none is named (scaf_sockpath_default, documented in the README)."""
    return _path(_lib().scaf_sockpath_default)


def user_socket() -> str:
    """This user's own socket, the search order without the user's socket variable (scaf_sockpath_user): the
    only path `scaf run` starts a daemon on."""
    return _path(_lib().scaf_sockpath_user)
