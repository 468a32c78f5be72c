"""What `scaf run` decided for one command, kept so that the next identical command is started by the small C launcher (scaf-run) without Python, while everything the decision read is unchanged (docs/python.md, "Replays")."""

import os
from collections.abc import Iterable, Mapping

from scaf.lib import choicecache, paths

# The record's layout, as src/run/record.c reads it; a record of another version is never replayed.
VERSION = 3
MAGIC = f"scaf-run-replay-v{VERSION}"
FOLDER = f"run-v{VERSION}"
# Commands kept; the least recently started go first. A record is a few hundred bytes to a few kilobytes.
RECORDS = 256
# Variables left out of the environment's fingerprint: a shell changes them between two identical commands
# (`_`, the directories: the working directory is compared on its own), and a batch system numbers each job
# and task (SLURM_*, PBS_*). Nothing on `scaf run`'s path reads them (tests/integration/test_run_replay.py
# checks its sources); the program gets them as they are.
UNHASHED = (b"_", b"OLDPWD", b"PWD", b"SHLVL")
UNHASHED_PREFIXES = (b"SLURM_", b"PBS_")

FNV_OFFSET = 0xCBF29CE484222325
FNV_PRIME = 0x100000001B3
NUL = b"\0"
CWD = b"cwd\0"


def fnv(data: bytes, h: int = FNV_OFFSET) -> int:
    """64-bit FNV-1a, as scaf_progkey_fnv computes it."""
    for b in data:
        h = ((h ^ b) * FNV_PRIME) & 0xFFFFFFFFFFFFFFFF
    return h


def name_of(args: Iterable[str], cwd: str) -> str:
    """The record's file name: `scaf run`'s arguments and the working directory, hashed."""
    h = FNV_OFFSET
    for a in args:
        h = fnv(os.fsencode(a) + b"\0", h)
    return f"{fnv(CWD + os.fsencode(cwd) + NUL, h):016x}"


def hashed(name: bytes) -> bool:
    return name not in UNHASHED and not name.startswith(UNHASHED_PREFIXES)


def env_hash(environ: Mapping[bytes, bytes]) -> str:
    """The fingerprint of the environment (UNHASHED left out), in name order: a replay needs the same one.
    Only the hash is written, never a value."""
    h = FNV_OFFSET
    for name in sorted(environ):
        if hashed(name):
            h = fnv(name + b"=" + environ[name] + b"\0", h)
    return f"{h:016x}"


def folder() -> str | None:
    d = choicecache.cache_dir()
    return os.path.join(d, FOLDER) if d else None


class Record:
    """One command's decision, filled by `scaf run` as it decides, written when the run may be replayed."""

    def __init__(self) -> None:
        self.seen = choicecache.Witness()  # every file and directory read to decide, stamped before it was read
        self.sets: dict[str, str] = {}  # what scaf adds to the environment, the start team aside
        self.ask = False  # whether the daemon is asked for a start team
        self.fixed = False  # the user's word says the program keeps its team (--fixed, SCAF_MALLEABLE, a rule)
        self.malleable = False  # the user's word says it is malleable
        self.user_count = False  # the user set OMP_NUM_THREADS
        self.key_exe = ""  # the command as the kernel will run it, to name the program (progkey.command)
        self.key_words: list[str] = []
        self.steered: list[str] = []  # the pool counts set to the start team when there is one
        self.replayable = True

    def saw_path_dirs(self, env_path: str | None) -> None:
        """The directories a PATH search reads: a program that appears earlier in PATH changes the answer."""
        for d in (env_path if env_path is not None else os.defpath).split(":"):
            self.seen.saw(d or ".")

    def write(self, args: list[str], cwd: str, environ: Mapping[bytes, bytes], path: str, argv: list[str],
              daemon: str, sock: str, count: int) -> None:
        """Writes the record of `scaf run ARGS` in CWD: PATH started with ARGV, DAEMON "own", "shared" or
        "none" (--no-start) on SOCK, COUNT the CPUs this process may run on. Written whole to a new file
        renamed over the old one; a folder that cannot be written is no error (the next run decides again)."""
        d = folder()
        if d is None or not self.replayable:
            return
        # The scaf-run that may replay it: the one beside the layers this decision preloads, not another
        # install's (a build tree and an installed scaf share the user's cache).
        home = os.path.realpath(paths.lib_dir())
        words: list[str] = [MAGIC, home, str(len(args)), *args, cwd, env_hash(environ), str(count),
                            str(len(self.seen.seen))]
        for p, st in sorted(self.seen.seen.items()):
            words += [p, " ".join(map(str, st)) if st else "-"]
        words += [path, str(len(argv)), *argv, str(len(self.sets))]
        for k, v in sorted(self.sets.items()):
            words += [k, v]
        words += [daemon, sock, "1" if self.ask else "0", "1" if self.fixed else "0",
                  "1" if self.malleable else "0", "1" if self.user_count else "0", self.key_exe,
                  str(len(self.key_words)), *self.key_words, str(len(self.steered)), *self.steered, "end"]
        if any("\0" in w for w in words):
            return
        data = b"".join(os.fsencode(w) + b"\0" for w in words)
        tmp = None
        try:
            os.makedirs(d, mode=0o700, exist_ok=True)
            final = os.path.join(d, name_of(args, cwd))
            tmp = f"{final}.{os.getpid()}.tmp"
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            os.replace(tmp, final)
            tmp = None
            _prune(d)
        except OSError:
            pass
        finally:
            if tmp is not None:
                try:
                    os.unlink(tmp)
                except OSError:
                    pass


def _prune(d: str) -> None:
    """Keeps the RECORDS most recently used (scaf-run sets a record's time when it replays it)."""
    try:
        names = [n for n in os.listdir(d) if len(n) == 16]
        if len(names) <= RECORDS:
            return
        dated = []
        for n in names:
            try:
                dated.append((os.stat(os.path.join(d, n)).st_mtime_ns, n))
            except OSError:
                continue
        for _, n in sorted(dated)[: len(dated) - RECORDS]:
            os.unlink(os.path.join(d, n))
    except OSError:
        pass
