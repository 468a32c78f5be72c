"""ctypes binding to libscaf_launch.so: the key a program is remembered under, computed by the layer's own C code (include/scaf/progkey.h).

Stable API (scaf run, scaf forget and scaf check use it)::

    from scaf.lib import progkey

    k = progkey.of_command("/usr/bin/python3", ["python3", "train.py"])
    k.key    # 64-bit FNV-1a of k.text; 0 when the program cannot be named (code from stdin)
    k.text   # "exe=build-id:...\\nscript=file:/home/u/train.py:1234:1700000000.123456789"
    k.name   # "python3.11 train.py": how scaf status names it

``of_command`` names a command as the kernel will run it: a ``#!`` script is its interpreter
running it (``#!/usr/bin/env NAME`` looked up in PATH), so the key is the one the layer sends in
its HELLO from /proc/self/exe and /proc/self/cmdline. ``key_of`` is the C function as it is.
Errors: ``KeyLibraryMissing`` (a RuntimeError) when libscaf_launch.so has not been built ("run
make"); ``OSError`` when the executable cannot be read.
"""

import ctypes
import functools
import os
import shutil
from collections.abc import Sequence
from typing import NamedTuple

from scaf.lib import choicecache, paths

TEXT = 384  # SCAF_PROGKEY_TEXT
NAME = 48  # SCAF_PROGKEY_NAME


class KeyLibraryMissing(RuntimeError):
    """libscaf_launch.so is not built (or cannot be loaded)."""


class _CKey(ctypes.Structure):
    _fields_ = [("key", ctypes.c_uint64), ("text", ctypes.c_char * TEXT), ("name", ctypes.c_char * NAME)]


class ProgKey(NamedTuple):
    """A program's identity: key (0 = cannot be named, never remembered), canonical text, name for status."""

    key: int
    text: str
    name: str


_lib: ctypes.CDLL | None = None


def _load() -> ctypes.CDLL:
    global _lib
    if _lib is not None:
        return _lib
    path = paths.launch_lib()
    if not path.exists():
        raise KeyLibraryMissing(f"{path} not found: run make (it builds the launch library)")
    try:
        lib = ctypes.CDLL(str(path), use_errno=True)
    except OSError as e:
        raise KeyLibraryMissing(f"cannot load {path}: {e}; run make") from e
    lib.scaf_progkey_size.restype = ctypes.c_size_t
    lib.scaf_progkey_size.argtypes = []
    if lib.scaf_progkey_size() != ctypes.sizeof(_CKey):
        raise KeyLibraryMissing(f"{path}: struct scaf_progkey is {lib.scaf_progkey_size()} bytes, "
                                f"python/scaf/lib/progkey.py expects {ctypes.sizeof(_CKey)}; run make")
    lib.scaf_progkey_of.restype = ctypes.c_int
    lib.scaf_progkey_of.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_char_p), ctypes.c_int,
                                    ctypes.POINTER(_CKey)]
    _lib = lib
    return lib


def library() -> ctypes.CDLL:
    """libscaf_launch.so, loaded once (startteam binds its start rule and start environment on it too).
    Raises KeyLibraryMissing."""
    return _load()


def key_of(exe: str, argv: Sequence[str]) -> ProgKey:
    """scaf_progkey_of(exe, argv): the key of EXE run with ARGV (argv[0] included). Raises OSError."""
    lib = _load()
    words = [os.fsencode(a) for a in argv]
    arr = (ctypes.c_char_p * max(len(words), 1))(*words)
    out = _CKey()
    if lib.scaf_progkey_of(os.fsencode(exe), arr, len(words), ctypes.byref(out)) != 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err), exe)
    return ProgKey(out.key, out.text.decode(errors="replace"), out.name.decode(errors="replace"))


def _shebang(path: str) -> tuple[str, str | None] | None:
    """(interpreter, its one optional argument) of a `#!` file, as the kernel splits the line; None otherwise."""
    try:
        with open(path, "rb") as f:
            head = f.read(256)
    except OSError:
        return None
    if not head.startswith(b"#!"):
        return None
    line = head[2:].split(b"\n", 1)[0].decode(errors="replace").strip()
    words = line.split(None, 1)
    if not words:
        return None
    return words[0], (words[1].strip() if len(words) > 1 else None)


def command(path: str, argv: Sequence[str],
            seen: choicecache.Witness | None = None) -> tuple[str, list[str]]:
    """The executable and argv the kernel ends up running for PATH (found like a shell) with ARGV: a `#!`
    script becomes its interpreter with the script's path as an argument; `#!/usr/bin/env NAME` runs NAME
    from PATH; Rscript becomes R's engine with the arguments Rscript gives it. Anything else is returned as
    given. SEEN gets every file read to know (PATH's directories are the caller's to witness)."""
    saw = seen.saw if seen is not None else (lambda _path: None)
    exe, words = path, list(argv)
    for _ in range(4):  # an interpreter that is a script itself, at most this deep (as the kernel allows)
        saw(exe)
        bang = _shebang(exe)
        if bang is None:
            break
        interp, opt = bang
        if os.path.basename(interp) == "env" and opt:
            named = opt.split()
            if named[0] == "-S":
                named = named[1:]
            found = shutil.which(named[0]) if named and not named[0].startswith("-") else None
            if not found:
                break
            words = [named[0], *named[1:], exe, *words[1:]]
            exe = found
        else:
            words = [interp, *([opt] if opt else []), exe, *words[1:]]
            exe = interp
    # Rscript is a launcher: the regions run in R's engine, which the layer names (docs/memory.md).
    saw(exe)
    if os.path.basename(exe) == "Rscript":
        rscript = shutil.which(exe) or exe
        for p in (rscript, os.path.realpath(rscript), os.path.join(os.path.dirname(os.path.realpath(rscript)), "R")):
            saw(p)
        engine = _r_engine(rscript)
        if engine:
            saw(engine)
            exe, words = engine, _rscript_as_r(engine, words)
    return exe, words


# Rscript's own options (R's src/unix/Rscript.c): consumed by Rscript, never passed to R.
_RSCRIPT_OWN = ("--verbose", "--default-packages=")


def _r_engine(rscript: str) -> str | None:
    """R's engine, which Rscript runs (through the R shell script): $R_HOME/bin/exec/R, R_HOME from the
    environment or from `R RHOME` beside Rscript. None when it cannot be found."""
    return _r_engine_of(rscript, os.environ.get("R_HOME"))


@functools.lru_cache(maxsize=8)  # `R RHOME` runs a shell script: once per scaf run, not at each naming
def _r_engine_of(rscript: str, home: str | None) -> str | None:
    if not home:
        r = os.path.join(os.path.dirname(os.path.realpath(rscript)), "R")
        if not os.access(r, os.X_OK):
            r = shutil.which("R") or ""
        if not r:
            return None
        home = _r_home(r)
    engine = os.path.join(home, "bin", "exec", "R")
    return engine if home and os.access(engine, os.X_OK) else None


def _r_home(r: str) -> str:
    """`R RHOME` ("" when it fails), kept in the per-user cache while the R script is unchanged: it runs a
    shell script, before every `scaf run Rscript` (10 ms here, with the import of subprocess)."""
    key = ["R RHOME", r]
    cached = choicecache.lookup(key)
    if cached is not None and isinstance(cached.get("home"), str):
        return cached["home"]
    seen = choicecache.Witness()
    seen.saw(r)
    import subprocess

    try:
        home = subprocess.run([r, "RHOME"], capture_output=True, text=True, timeout=10, check=False).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""
    if home:
        choicecache.store(key, seen, {"home": home})
    return home


def _rscript_as_r(engine: str, words: Sequence[str]) -> list[str]:
    """The argv R's engine gets from `Rscript [options] (-e EXPR... | FILE) [ARGS]` (Rscript.c): --no-echo
    --no-restore, the options, then --file=FILE or the -e expressions, then --args and ARGS."""
    out = [engine, "--no-echo", "--no-restore"]
    i = 1
    while i < len(words) and words[i].startswith("--") and words[i] != "--args":
        if not words[i].startswith(_RSCRIPT_OWN):
            out.append(words[i])
        i += 1
    if i < len(words) and words[i] == "-e":
        while i + 1 < len(words) and words[i] == "-e":
            out += ["-e", words[i + 1]]
            i += 2
    elif i < len(words):
        out.append(f"--file={words[i]}")
        i += 1
    if i < len(words):
        out += ["--args", *words[i:]]
    return out


def of_command(path: str, argv: Sequence[str]) -> ProgKey:
    """The key of the program that running PATH with ARGV starts (`command`). Raises OSError."""
    exe, words = command(path, argv)
    return key_of(exe, words)
