"""Whether `scaf run` starts a program with its share, and the start environment that gives each of its runtimes the share: decided by the C code the layer and scaf-run run (include/scaf/startrule.h, include/scaf/startenv.h, through libscaf_launch.so), from the user's word and the daemon's recall (docs/memory.md, "The start team"; docs/runtimes.md)."""

import ctypes
import os
from collections.abc import Mapping, Sequence
from typing import NamedTuple

from scaf.lib import choicecache, progkey, proto, rules
from scaf.lib.progkey import ProgKey


def user_word(flag: str | None, env: Mapping[str, str], exe: str,
              seen: choicecache.Witness | None = None) -> tuple[str | None, str]:
    """The user's word on malleability for EXE, "fixed", "malleable" or None, and where it comes from:
    --fixed/--malleable (FLAG "no"/"yes"), else SCAF_MALLEABLE, else the first rule that matches EXE (the
    real path of what runs, as the layer matches /proc/self/exe). SEEN gets the rules files read."""
    if flag == "no":
        return "fixed", "--fixed"
    if flag == "yes":
        return "malleable", "--malleable"
    # SCAF_MALLEABLE's words as the layer reads them: the one function (scaf_start_word).
    word = _lib().scaf_start_word(env.get("SCAF_MALLEABLE", "").strip().encode())
    if word == 0:
        return "fixed", f"SCAF_MALLEABLE={env['SCAF_MALLEABLE']}"
    if word == 1:
        return "malleable", f"SCAF_MALLEABLE={env['SCAF_MALLEABLE']}"
    if seen is not None:
        for p in rules.search_path(env):
            seen.saw(p)
    rule = rules.find(exe, env)
    if rule is not None:
        return rule.verdict, f"rule {rule.where()}: {rule.text()}"
    return None, ""


def program_count() -> int:
    """The count the program reads when OMP_NUM_THREADS is not set: the CPUs it may run on."""
    return len(os.sched_getaffinity(0))


class Start(NamedTuple):
    """What scaf run does: start its OpenMP with `team` threads (0: with the program's own count), and why, in
    words; `share`: the daemon's share for the program now (0: none known), which its other runtimes start
    with (start_env)."""

    team: int
    why: str
    share: int = 0


# ---- the C side (libscaf_launch.so) ----

START_APPLY = 0  # enum scaf_start_why


class _StartIn(ctypes.Structure):
    """struct scaf_start_in (include/scaf/startrule.h)."""

    _fields_ = [("memory_off", ctypes.c_int), ("scaf_run_team", ctypes.c_uint), ("level", ctypes.c_int),
                ("set", ctypes.c_int), ("read", ctypes.c_int), ("user_malleable", ctypes.c_int),
                ("user_fixed", ctypes.c_int), ("user_count", ctypes.c_int), ("nthreads", ctypes.c_uint),
                ("asked", ctypes.c_int), ("start_team", ctypes.c_uint), ("memory_runs", ctypes.c_uint32),
                ("memory_verdict", ctypes.c_uint32), ("memory_source", ctypes.c_uint32)]


class _StartOut(ctypes.Structure):
    """struct scaf_start."""

    _fields_ = [("why", ctypes.c_int), ("team", ctypes.c_uint), ("keep", ctypes.c_int)]


class _EnvVar(ctypes.Structure):
    """struct scaf_startenv_var (include/scaf/startenv.h)."""

    _fields_ = [("name", ctypes.c_char * 32), ("value", ctypes.c_char * 512)]


_bound: ctypes.CDLL | None = None


def _lib() -> ctypes.CDLL:
    """The launch library with the start rule's and the start environment's signatures bound (once)."""
    global _bound
    if _bound is None:
        lib = progkey.library()
        lib.scaf_start_decide.restype = _StartOut
        lib.scaf_start_decide.argtypes = [ctypes.POINTER(_StartIn)]
        lib.scaf_start_word.restype = ctypes.c_int
        lib.scaf_start_word.argtypes = [ctypes.c_char_p]
        lib.scaf_start_words.restype = None
        lib.scaf_start_words.argtypes = [ctypes.POINTER(_StartIn), ctypes.POINTER(_StartOut), ctypes.c_char_p,
                                         ctypes.c_char_p, ctypes.c_size_t]
        for fn in (lib.scaf_startenv_objects, lib.scaf_startenv_programs):
            fn.restype, fn.argtypes = ctypes.c_uint32, [ctypes.c_char_p]
        lib.scaf_startenv_markers.restype = ctypes.c_uint32
        lib.scaf_startenv_markers.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
        lib.scaf_startenv_names.restype = None
        lib.scaf_startenv_names.argtypes = [ctypes.c_uint32, ctypes.c_char_p, ctypes.c_size_t]
        lib.scaf_startenv_build.restype = ctypes.c_uint
        lib.scaf_startenv_build.argtypes = [ctypes.c_uint, ctypes.c_uint, ctypes.c_uint32, ctypes.c_int,
                                            ctypes.POINTER(ctypes.c_char_p), ctypes.POINTER(_EnvVar), ctypes.c_uint]
        lib.scaf_startenv_bits.restype = ctypes.c_uint32
        lib.scaf_startenv_bits.argtypes = [ctypes.c_char_p]
        _bound = lib
    return _bound


def rule(count: int, fixed_by: str | None, reply: "proto.MemoryReply | None", user_malleable: bool = False,
         user_count: bool = False) -> Start:
    """The layer's start rule (scaf_start_decide) for a program about to start with COUNT as its count, the
    user's word FIXED_BY (None: none), and the daemon's RECALL REPLY (None: not asked), with scaf run's words
    for it (scaf_start_words)."""
    lib = _lib()
    known = reply is not None and reply.status == proto.MEMORY_OK
    sin = _StartIn(nthreads=max(count, 1), user_fixed=int(fixed_by is not None), user_malleable=int(user_malleable),
                   user_count=int(user_count), asked=int(reply is not None),
                   start_team=reply.start_team if reply is not None else 0,
                   memory_runs=reply.runs if known else 0, memory_verdict=reply.verdict if known else 0,
                   memory_source=reply.source if known else 0)
    out = lib.scaf_start_decide(ctypes.byref(sin))
    buf = ctypes.create_string_buffer(256)
    lib.scaf_start_words(ctypes.byref(sin), ctypes.byref(out), fixed_by.encode() if fixed_by else None, buf,
                         len(buf))
    return Start(out.team if out.why == START_APPLY else 0, buf.value.decode(errors="replace"),
                 reply.start_team if reply is not None else 0)


def start_env(share: int, count: int, user_env: Mapping[str, str], runtimes: str | int = "",
              every: bool = False) -> list[tuple[str, str]]:
    """The variables that start each runtime of the program with SHARE of its COUNT CPUs (scaf_startenv_build):
    a runtime's variable the user set in USER_ENV stands; nothing when SHARE is not below COUNT. RUNTIMES: those
    the program is known to have ("jvm", or their bits), for the variables set only then. Only the runtimes whose
    pools spin get the share, unless EVERY (a static split's: every runtime's variable)."""
    envp: Sequence[bytes] = [os.fsencode(k) + b"=" + os.fsencode(v) for k, v in user_env.items()]
    arr = (ctypes.c_char_p * (len(envp) + 1))(*envp, None)
    out = (_EnvVar * 16)()
    lib = _lib()
    bits = runtimes if isinstance(runtimes, int) else lib.scaf_startenv_bits(runtimes.encode())
    n = lib.scaf_startenv_build(max(share, 0), max(count, 0), bits, int(every), arr, out, len(out))
    return [(out[i].name.decode(), os.fsdecode(out[i].value)) for i in range(n)]


def decide(sock: str, key: ProgKey, count: int, fixed_by: str | None, timeout: float = 2.0, *,
           user_malleable: bool = False, user_count: bool = False) -> Start:
    """Ask the daemon on SOCK what it remembers of KEY (RECALL, with COUNT as the program's bound) and decide
    with the start rule. FIXED_BY: the user's word that the program keeps its team ("--fixed", a rule), None
    when there is none; USER_MALLEABLE, USER_COUNT: the user said malleable, set OMP_NUM_THREADS. Never raises
    for the daemon's sake: a daemon that is absent, keeps no memory or speaks an older protocol gives no start
    team, and the reason says so; one that keeps no memory still gives the share."""
    try:
        r = proto.memory(sock, proto.MEMORY_RECALL, key=key.key, max_threads=min(max(count, 1), 1024),
                         timeout=timeout)
    except (proto.DaemonUnavailable, proto.UntrustedDaemon) as e:
        return Start(0, f"no memory asked: {e}")
    share = r.start_team if r.status in (proto.MEMORY_OK, proto.MEMORY_UNKNOWN, proto.MEMORY_OFF) else 0
    if key.key == 0:
        return Start(0, f"{key.name} cannot be named (its code comes from stdin or a terminal): no memory of it",
                     share)
    if r.status == proto.MEMORY_OFF:
        return Start(0, f"the daemon on {sock} keeps no memory", share)
    if r.status not in (proto.MEMORY_OK, proto.MEMORY_UNKNOWN):
        return Start(0, f"the daemon on {sock} could not recall it (status {r.status})")
    return rule(count, fixed_by, r, user_malleable, user_count)


def runtimes_of(program: str, objects: Sequence[str]) -> str:
    """The parallel runtimes of the start environment's table (include/scaf/startenv.h) that PROGRAM has, as
    their names ("polars,jvm"; "" for none): by the basenames of the shared OBJECTS it loads at start, by its own
    name (java loads the JVM later), and by the strings its executable holds (a Rust or Go program). The file is
    read, never run; one that cannot be read has none of its own."""
    import mmap

    lib = _lib()
    bits = lib.scaf_startenv_programs(os.path.basename(program).encode())
    for o in objects:
        bits |= lib.scaf_startenv_objects(os.path.basename(o).encode())
    try:
        # A private mapping: ctypes needs a writable buffer, and nothing is copied unless written (it never is).
        with open(program, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_COPY) as m:
            view = (ctypes.c_char * len(m)).from_buffer(m)
            bits |= lib.scaf_startenv_markers(ctypes.addressof(view), len(m))
            del view
    except (OSError, ValueError):
        pass
    out = ctypes.create_string_buffer(256)
    lib.scaf_startenv_names(bits, out, len(out))
    return out.value.decode()


def counts(n: int) -> dict[str, str]:
    """Every runtime's own variable of the start environment's table at N threads, the JVM's included, as a user
    who splits the machine by hand sets them (the bench's static split): scaf_startenv_build for a share of N."""
    return {k: v for k, v in start_env(n, n + 1, {}, 0xFFFFFFFF, every=True) if k != "SCAF_START_SHARE"}
