"""Which parallel runtime a program will load, from its ELF dependencies (never by running it): picks scaf's layer."""

import ctypes
import functools
import os
import re
from pathlib import Path
from typing import NamedTuple

from scaf.lib import choicecache, paths, progkey

# The layer for each steerable runtime family; the names are those of `scaf run --layer`.
LAYERS = {"gomp": "libscaf_gomp.so", "omp": "libscaf_omp.so"}

# Sonames (the part before ".so") of the OpenMP runtimes scaf steers, and the layer for each.
STEERABLE = {
    "libgomp": ("gomp", "GNU libgomp"),
    "libomp": ("omp", "LLVM libomp"),
    "libiomp5": ("omp", "Intel libiomp5"),
}

# Parallel runtimes with their own thread pool that scaf cannot steer, and why. oneTBB is steered
# through the Thread Composability Manager interface when it has one (tbb_info, below).
UNSTEERABLE: dict[str, str] = {}

# The TCM provider `scaf run` preloads for oneTBB (soname libtcm.so.1; docs/layer.md, "oneTBB through TCM").
TCM_PROVIDER = "libscaf_tcm.so"
# Interpreters that may load oneTBB long after start (numba's tbb threading layer): the provider is
# preloaded for them too, as the layer's helper watches them for BLAS pools (src/layer/client/client.c).
_INTERPRETERS = re.compile(r"^(python|pypy|R$|Rscript$|julia|octave)")

# Symbols that only a runtime's own code defines: a program that defines them has one linked in.
STATIC_MARKERS = {
    "__kmp_fork_call": "a statically linked LLVM/Intel OpenMP runtime",
    "gomp_team_start": "a statically linked GNU libgomp",
    "GOMP_parallel": "a statically linked GNU libgomp",
    "__kmpc_fork_call": "a statically linked LLVM/Intel OpenMP runtime",
}

_SO = re.compile(r"^(lib[A-Za-z0-9_+]+?)(?:-[0-9][0-9.]*)?\.so")


class Deps:
    """What a program loads at start-up, as the dynamic loader would find it."""

    def __init__(self) -> None:
        self.found: dict[str, str] = {}  # soname -> path
        self.missing: list[str] = []
        self.static: list[str] = []  # STATIC_MARKERS descriptions seen in the program itself
        self.not_elf = False


class Choice(NamedTuple):
    """The layer `scaf run` preloads (None: none), which runtime it is for, and what to tell the user."""

    layer: str | None
    runtime: str
    reason: str
    warning: str | None = None  # said on stderr at once: a runtime scaf cannot steer, or two runtimes
    tcm: bool = False  # also preload the TCM provider: oneTBB's workers follow the share
    runtimes: str = ""  # the other parallel runtimes it has (startteam.runtimes_of: "polars,jvm"), for SCAF_RUNTIMES


class Tbb(NamedTuple):
    """One oneTBB library: its version as it states it, and whether it asks a TCM for its workers."""

    path: str
    version: str  # "2021.8"; "" when the library does not say
    tcm: bool

    def label(self) -> str:
        return f"oneTBB {self.version or '(version unknown)'} ({self.path})"


class _TbbLib(ctypes.Structure):
    """struct scaf_tbblib (include/scaf/tbblib.h)."""

    _fields_ = [("tcm", ctypes.c_int), ("version", ctypes.c_char * 16)]


@functools.cache
def _tbblib() -> ctypes.CDLL:
    """The launch library with the oneTBB probe's signatures bound (once); raises progkey.KeyLibraryMissing."""
    lib = progkey.library()
    lib.scaf_tbblib_read.restype = ctypes.c_int
    lib.scaf_tbblib_read.argtypes = [ctypes.c_char_p, ctypes.POINTER(_TbbLib)]
    lib.scaf_tbblib_tcm_first.restype = ctypes.c_char_p
    lib.scaf_tbblib_tcm_first.argtypes = []
    return lib


def tbb_info(path: str) -> Tbb:
    """What the oneTBB library at PATH says of itself, read by the daemon's own probe (scaf_tbblib_read; never
    run): its version and whether it asks a TCM for its workers. A file that cannot be read says neither."""
    out = _TbbLib()
    if _tbblib().scaf_tbblib_read(os.fsencode(path), ctypes.byref(out)) != 0:
        return Tbb(path, "", False)
    return Tbb(path, out.version.decode(errors="replace"), bool(out.tcm))


def tbb_tcm_first() -> str:
    """The first oneTBB release that asks a TCM for its workers."""
    return _tbblib().scaf_tbblib_tcm_first().decode()


def is_interpreter(program: str) -> bool:
    return _INTERPRETERS.match(os.path.basename(program)) is not None


def runs_python(program: str) -> bool:
    """Whether PROGRAM is a Python interpreter, or a `#!` script of one (`dask worker`, a pip entry point)."""
    return re.match(r"^(python|pypy)", os.path.basename(_interpreter(program) or program)) is not None


def _family(soname: str) -> str:
    m = _SO.match(os.path.basename(soname))
    return m.group(1) if m else os.path.basename(soname)


def _ldconfig_cache() -> dict[str, str]:
    """soname -> path from the loader's cache (`ldconfig -p` reads /etc/ld.so.cache; it runs nothing else)."""
    import subprocess  # only on a walk: a cached choice need not load it

    try:
        out = subprocess.run(["ldconfig", "-p"], check=False, capture_output=True, text=True, timeout=10,
                             env={"PATH": "/usr/sbin:/sbin:/usr/bin:/bin", "LC_ALL": "C"}).stdout
    except (OSError, subprocess.SubprocessError):
        return {}
    native = "x86-64" if os.uname().machine == "x86_64" else ""
    cache: dict[str, str] = {}
    for line in out.splitlines()[1:]:
        m = re.match(r"\s*(\S+) \(([^)]*)\) => (\S+)", line)
        if m and m.group(1) not in cache and native in m.group(2):
            cache[m.group(1)] = m.group(3)
    return cache


_LD_SO_CACHE = "/etc/ld.so.cache"
_DEFAULT_DIRS = ["/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib64", "/usr/lib64", "/lib", "/usr/lib"]


def _dynamic(path: str, symbols: bool = True) -> tuple[list[str], list[str], list[str], set[str]]:
    """(DT_NEEDED, DT_RPATH, DT_RUNPATH, defined symbol names of interest) of an ELF file; the last is left
    empty without SYMBOLS (a dependency's: only the program's own are asked for)."""
    # Imported here: a program whose choice is cached (choicecache) never needs pyelftools, 30 ms to import.
    from elftools.elf.dynamic import DynamicSegment
    from elftools.elf.elffile import ELFFile

    needed: list[str] = []
    rpath: list[str] = []
    runpath: list[str] = []
    defined: set[str] = set()
    with open(path, "rb") as f:
        elf = ELFFile(f)
        origin = os.path.dirname(os.path.realpath(path))
        # The dynamic segment, not the section table: making every section object costs pyelftools a few
        # milliseconds a library, and a program such as R has thirty.
        for seg in elf.iter_segments():
            if isinstance(seg, DynamicSegment):
                for tag in seg.iter_tags():
                    if tag.entry.d_tag == "DT_NEEDED":
                        needed.append(tag.needed)
                    elif tag.entry.d_tag == "DT_RPATH":
                        rpath += [d.replace("$ORIGIN", origin).replace("${ORIGIN}", origin)
                                  for d in tag.rpath.split(":") if d]
                    elif tag.entry.d_tag == "DT_RUNPATH":
                        runpath += [d.replace("$ORIGIN", origin).replace("${ORIGIN}", origin)
                                    for d in tag.runpath.split(":") if d]
        for name in (".dynsym", ".symtab") if symbols else ():
            sec = elf.get_section_by_name(name)
            if sec is None or not hasattr(sec, "iter_symbols"):
                continue
            # Walking every symbol through pyelftools costs about a second for libstdc++ and libtbb,
            # at each `scaf run`: look in the section's string table first, and walk only a table
            # that names a marker at all (as a string's tail: linkers merge a name into a longer one).
            strtab = elf.get_section(sec["sh_link"]).data()
            if not any(marker.encode() + b"\0" in strtab for marker in STATIC_MARKERS):
                continue
            for sym in sec.iter_symbols():
                if sym.name in STATIC_MARKERS and sym["st_shndx"] != "SHN_UNDEF":
                    defined.add(sym.name)
    return needed, rpath, runpath, defined


def _interpreter(path: str) -> str | None:
    """The interpreter of a `#!` script, as the kernel would run it (None for anything else)."""
    exe, _ = progkey.command(path, [path])
    return exe if exe != path else None


def dependencies(program: str, env: dict[str, str] | None = None,
                 seen: choicecache.Witness | None = None) -> Deps:
    """Every shared object PROGRAM needs, breadth first, as ld.so searches (RPATH, LD_LIBRARY_PATH, RUNPATH,
    the cache, the default directories). The program is read, never run. SEEN gets every file read and every
    directory searched, before it is."""
    from elftools.common.exceptions import ELFError

    env = os.environ if env is None else env
    saw = seen.saw if seen is not None else (lambda _path: None)
    deps = Deps()
    saw(program)
    interp = _interpreter(program)
    if interp:
        program = interp
        saw(program)
    try:
        needed, rpath, runpath, defined = _dynamic(program)
    except (OSError, ELFError):
        deps.not_elf = True
        return deps
    deps.static = sorted({STATIC_MARKERS[s] for s in defined})
    ld_path = [d for d in env.get("LD_LIBRARY_PATH", "").split(":") if d]
    cache: dict[str, str] | None = None
    queue: list[tuple[str, list[str], list[str]]] = [(n, rpath, runpath) for n in needed]
    exe_rpath = rpath if not runpath else []
    while queue:
        name, rp, rup = queue.pop(0)
        if name in deps.found or name in deps.missing:
            continue
        where: str | None = None
        if "/" in name:
            saw(name)
            where = name if os.path.isfile(name) else None
        else:
            dirs = ([] if rup else rp + exe_rpath) + ld_path + rup
            for d in dirs:
                saw(d)
                cand = os.path.join(d, name)
                if os.path.isfile(cand):
                    where = cand
                    break
            if where is None:
                if cache is None:
                    saw(_LD_SO_CACHE)
                    cache = _ldconfig_cache()
                where = cache.get(name)
            if where is None:
                for d in _DEFAULT_DIRS:
                    saw(d)
                    cand = os.path.join(d, name)
                    if os.path.isfile(cand):
                        where = cand
                        break
        if where is None:
            deps.missing.append(name)
            continue
        deps.found[name] = where
        saw(where)
        try:
            # Not its symbols: a library that calls GOMP_parallel (OpenBLAS's OpenMP build) names it in its
            # string table, and walking its 10,000 symbols to find it undefined cost `scaf run Rscript` 0.8 s.
            sub, srp, srup, _ = _dynamic(where, symbols=False)
        except (OSError, ELFError):
            continue
        queue += [(n, srp, srup) for n in sub]
    return deps


def layer_path(kind: str) -> Path:
    return paths.build_dir() / "lib" / LAYERS[kind]


def choose(program: str, env: dict[str, str] | None = None, seen: choicecache.Witness | None = None) -> Choice:
    """The layer for PROGRAM: by the OpenMP runtime it loads at start-up; libscaf_gomp.so when it loads none
    (an interpreter such as python may load libgomp later, and that layer handles a wheel's bundled copy).
    The answer is cached per user (choicecache) while nothing the walk read has changed: the walk costs
    `scaf run Rscript` 0.15 s, before the program starts. SEEN gets what the answer rests on."""
    key = [os.path.abspath(program), (os.environ if env is None else env).get("LD_LIBRARY_PATH", "")]
    cached = _choice_of(choicecache.lookup(key, seen))
    if cached is not None:
        return cached
    walked = choicecache.Witness()
    # The rules below and the launch library's oneTBB probe: an upgraded scaf chooses afresh.
    walked.saw(__file__)
    walked.saw(str(paths.launch_lib()))
    choice = _choose(program, env, walked)
    choicecache.store(key, walked, choice._asdict())
    if seen is not None:
        seen.add(walked.seen)
    return choice


def _choice_of(value: dict | None) -> Choice | None:
    """A cached Choice, if the value is one (a damaged entry is walked again, and replaced)."""
    if value is None or set(value) != set(Choice._fields):
        return None
    if (value["layer"] not in (None, *LAYERS) or not isinstance(value["runtime"], str)
            or not isinstance(value["reason"], str) or not isinstance(value["warning"], (str, type(None)))
            or not isinstance(value["tcm"], bool) or not isinstance(value["runtimes"], str)):
        return None
    return Choice(**value)


def _choose(program: str, env: dict[str, str] | None, seen: choicecache.Witness) -> Choice:
    deps = dependencies(program, env, seen)
    choice = _layer_choice(program, deps)
    exe = _interpreter(program) or program
    found = _runtimes(exe, deps)
    if found and not deps.not_elf and _statically_linked(exe):
        # Nothing can be preloaded into it: the process cannot be a client, and the daemon sees its load as foreign
        # (docs/runtimes.md); what scaf run sets in its environment still reaches its runtime.
        note = (f"{os.path.basename(program)} is statically linked: scaf cannot preload its layer into it, so its "
                f"{found} runtime is not a client (its load is foreign to the daemon)")
        choice = choice._replace(warning=f"{choice.warning}; {note}" if choice.warning else note)
    return choice._replace(runtimes=found)


def _statically_linked(path: str) -> bool:
    """Whether the ELF file PATH has no program interpreter (PT_INTERP): the kernel runs it without ld.so."""
    from elftools.common.exceptions import ELFError
    from elftools.elf.elffile import ELFFile

    try:
        with open(path, "rb") as f:
            return not any(seg["p_type"] == "PT_INTERP" for seg in ELFFile(f).iter_segments())
    except (OSError, ELFError):
        return False


def _runtimes(exe: str, deps: Deps) -> str:
    """The runtimes of the start environment's table that EXE has (startteam.runtimes_of), "" when the launch
    library is not built."""
    from scaf.lib import startteam

    try:
        return startteam.runtimes_of(exe, list(deps.found.values()))
    except progkey.KeyLibraryMissing:
        return ""


def _layer_choice(program: str, deps: Deps) -> Choice:
    kinds: dict[str, str] = {}
    for soname, where in deps.found.items():
        fam = _family(soname)
        if fam in STEERABLE:
            kind, label = STEERABLE[fam]
            kinds.setdefault(kind, f"{label} ({where})")
    foreign = sorted({UNSTEERABLE[_family(s)] for s in deps.found if UNSTEERABLE.get(_family(s))})
    tbbs = [tbb_info(where) for soname, where in sorted(deps.found.items()) if _family(soname) == "libtbb"]
    for t in tbbs:
        if not t.tcm:
            foreign.append(f"{t.label()} schedules its own worker threads and asks no Thread Composability "
                           f"Manager for them (oneTBB does from {tbb_tcm_first()} on)")
    tcm = any(t.tcm for t in tbbs) or is_interpreter(_interpreter(program) or program)
    warning = None
    if deps.static:
        foreign.insert(0, f"it contains {deps.static[0]}, which scaf cannot reach by preloading")
    if foreign:
        warning = f"{os.path.basename(program)} cannot be steered by scaf: " + "; ".join(foreign)
    if len(kinds) > 1:
        both = " and ".join(kinds[k] for k in sorted(kinds))
        return Choice(None, "two OpenMP runtimes", f"it loads {both}",
                      f"{os.path.basename(program)} loads two OpenMP runtimes ({both}); scaf steers a process "
                      "with one only: running it without the layer, unsteered")
    steered = [t for t in tbbs if t.tcm]
    tbb_note = f", and {steered[0].label()} through {TCM_PROVIDER}" if steered else ""
    if "omp" in kinds:
        return Choice("omp", kinds["omp"] + tbb_note, "from its dynamic dependencies", warning, tcm)
    if "gomp" in kinds:
        return Choice("gomp", kinds["gomp"] + tbb_note, "from its dynamic dependencies", warning, tcm)
    why = "not an ELF program" if deps.not_elf else "no OpenMP runtime among its dynamic dependencies"
    return Choice("gomp", "GNU libgomp (default)" + tbb_note, why, warning, tcm)
