"""The socket directory's safety rules for `scaf run`: src/common/rundir.c (through libscaf_launch.so), the very checks scafd and scaf-run make.

`scaf run` needs the directory before scafd exists (its start lock, the log
scafd's output goes to), so it cannot leave the checks to scafd alone; it
makes them with the C functions of include/scaf/rundir.h, on descriptors,
never on paths twice. Every refusal raises UnsafeDir with the C code's reason
and the path; nothing was written then.
"""

from __future__ import annotations

import ctypes
import functools
import os

from scaf.lib import progkey

# Flags of scaf_rundir_open (include/scaf/rundir.h).
_PRIVATE = 1

# Room for a reason (scafd's listener gives it as much).
_WHY = 160


class UnsafeDir(Exception):
    """The directory (or a file in it) may be somebody else's: nothing was written there."""


@functools.cache
def _lib() -> ctypes.CDLL:
    """The launch library with the directory rules' signatures bound (once); raises progkey.KeyLibraryMissing."""
    lib = progkey.library()
    lib.scaf_rundir_open.restype = ctypes.c_int
    lib.scaf_rundir_open.argtypes = [ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_size_t]
    lib.scaf_rundir_openat.restype = ctypes.c_int
    lib.scaf_rundir_openat.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_uint, ctypes.c_char_p,
                                       ctypes.c_size_t]
    return lib


def open_dir(path: str, *, private: bool = True) -> int:
    """A descriptor on the directory PATH (its last component created when missing) by scaf_rundir_open;
    raises UnsafeDir. PRIVATE (the per-user default path): it must be ours and writable by nobody else;
    otherwise ours or root's, and sticky when anyone may write it."""
    why = ctypes.create_string_buffer(_WHY)
    fd = _lib().scaf_rundir_open(os.fsencode(path), _PRIVATE if private else 0, why, len(why))
    if fd < 0:
        raise UnsafeDir(f"directory {path}: {why.value.decode(errors='replace')}; nothing was written there")
    return fd


def open_in(dirfd: int, name: str, flags: int, mode: int = 0o600) -> int:
    """NAME inside DIRFD, opened with FLAGS by scaf_rundir_openat (never through a link, never somebody else's
    file); raises UnsafeDir."""
    why = ctypes.create_string_buffer(_WHY)
    fd = _lib().scaf_rundir_openat(dirfd, os.fsencode(name), flags, mode, why, len(why))
    if fd < 0:
        raise UnsafeDir(f"{why.value.decode(errors='replace')}; nothing was written there")
    return fd
