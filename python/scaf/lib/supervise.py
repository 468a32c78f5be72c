"""The program as `scaf run`'s child, through the C supervisor scaf-run runs (include/scaf/supervise.h, in libscaf_launch.so): the signals a user or a job manager sends passed on to it, its exit status returned shell-style."""

import ctypes
import os
import signal
from collections.abc import Mapping, Sequence

from scaf.lib import progkey

_bound: ctypes.CDLL | None = None


def _lib() -> ctypes.CDLL:
    global _bound
    if _bound is None:
        lib = progkey.library()
        lib.scaf_run_supervise_signals.restype = ctypes.c_uint64
        lib.scaf_run_supervise_signals.argtypes = []
        lib.scaf_run_supervise_blocked.restype = ctypes.c_int
        lib.scaf_run_supervise_blocked.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_char_p),
                                                   ctypes.POINTER(ctypes.c_char_p), ctypes.c_uint64]
        _bound = lib
    return _bound


def _strings(words: Sequence[bytes]) -> ctypes.Array:
    return (ctypes.c_char_p * (len(words) + 1))(*words, None)


def run(path: str, argv: Sequence[str], env: Mapping[str, str]) -> int:
    """Start PATH with ARGV and ENV as our child and wait for it (scaf_run_supervise_blocked): its exit status,
    128+N when signal N ended it, 127 when PATH is missing and 126 when it cannot be executed (the C side says
    which on stderr). Raises progkey.KeyLibraryMissing when libscaf_launch.so is not built.

    The signals the C side waits for are blocked here, in this thread, for as long as it waits: the ctypes call
    releases the GIL, and a Python handler (SIGINT's) would otherwise take one first and run only after the
    program ended. The program starts with the mask this thread had before."""
    lib = _lib()
    bits = lib.scaf_run_supervise_signals()
    waited = [n for n in range(1, 65) if bits >> (n - 1) & 1]
    before = signal.pthread_sigmask(signal.SIG_BLOCK, waited)
    try:
        rc = lib.scaf_run_supervise_blocked(os.fsencode(path), _strings([os.fsencode(a) for a in argv]),
                                            _strings([os.fsencode(k) + b"=" + os.fsencode(v) for k, v in env.items()]),
                                            sum(1 << (int(s) - 1) for s in before))
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, before)
    if rc < 0:
        err = ctypes.get_errno()
        raise OSError(err, f"scaf_run_supervise_blocked: {os.strerror(err)}")
    return rc
