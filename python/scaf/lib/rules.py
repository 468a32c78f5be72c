"""Rules files (`malleable PATTERN` / `fixed PATTERN`): read and matched by the layer's own reader (src/common/rules.c, through libscaf_launch.so), and written here (`scaf check --save`).

The search path, the reading of a line (and the reason a line is malformed),
the reading of a file and the matching of a pattern against a program are
the C functions of include/scaf/rules.h, the very code the layer runs at its
first connect: `scaf rules --which` names the rule the layer picks because it
asks the same code. What only the command does is here: finding a command
through PATH as the kernel would run it (`exe_path`), and writing a rule
(`set_rule`, `pattern_for_path`); what it writes is read back by the C
reader before the file is replaced. Errors: progkey.KeyLibraryMissing when
libscaf_launch.so is not built; ValueError from set_rule for a rule that would
not read back as itself.
"""

from __future__ import annotations

import ctypes
import functools
import os
from collections.abc import Mapping
from typing import NamedTuple

from scaf.lib import progkey


class Rule(NamedTuple):
    file: str
    line: int
    verdict: str  # "malleable" | "fixed"
    pattern: str

    def where(self) -> str:
        return f"{self.file}:{self.line}"

    def text(self) -> str:
        return f"{self.verdict} {self.pattern}"


class Problem(NamedTuple):
    file: str
    line: int  # 0: the file as a whole (unreadable)
    message: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.message}" if self.line else f"{self.file}: {self.message}"


class RulesFile:
    def __init__(self, path: str, exists: bool = False, rules: list[Rule] | None = None,
                 problems: list[Problem] | None = None) -> None:
        self.path = path
        self.exists = exists
        self.rules: list[Rule] = [] if rules is None else rules
        self.problems: list[Problem] = [] if problems is None else problems


# ---- the C side (include/scaf/rules.h) ----------------------------------------------------------

# enum scaf_rules_slot, enum scaf_rules_kind, enum scaf_rules_read_status
_SLOT_END, _SLOT_READ, _SLOT_UNREAD = 0, 1, 2
_BLANK, _RULE = 0, 1
_ABSENT = 0


class _Env(ctypes.Structure):
    """struct scaf_rules_env: pointers into the strings of the envp it was made from (kept by _Where)."""

    _fields_ = [("list", ctypes.c_char_p), ("xdg", ctypes.c_char_p), ("home", ctypes.c_char_p)]


class _Line(ctypes.Structure):
    """struct scaf_rules_line: its arrays sized as include/scaf/rules.h sizes them (checked at load)."""

    _fields_ = [("file", ctypes.c_char * 4096), ("line", ctypes.c_uint), ("kind", ctypes.c_int),
                ("verdict", ctypes.c_uint32), ("word", ctypes.c_char * 16), ("pattern", ctypes.c_char * 1023),
                ("why", ctypes.c_char * 192)]


_VISIT = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(_Line), ctypes.c_void_p)


@functools.cache
def _lib() -> ctypes.CDLL:
    """The launch library with the rules reader's signatures bound (once); raises progkey.KeyLibraryMissing."""
    lib = progkey.library()
    lib.scaf_rules_line_size.restype, lib.scaf_rules_line_size.argtypes = ctypes.c_size_t, []
    if lib.scaf_rules_line_size() != ctypes.sizeof(_Line):
        raise progkey.KeyLibraryMissing(f"struct scaf_rules_line is {lib.scaf_rules_line_size()} bytes, "
                                        f"python/scaf/lib/rules.py expects {ctypes.sizeof(_Line)}; run make")
    lib.scaf_rules_env_of.restype = None
    lib.scaf_rules_env_of.argtypes = [ctypes.POINTER(ctypes.c_char_p), ctypes.POINTER(_Env)]
    for fn in (lib.scaf_rules_locate, lib.scaf_rules_user):
        fn.restype = ctypes.c_int
    lib.scaf_rules_locate.argtypes = [ctypes.POINTER(_Env), ctypes.c_uint, ctypes.c_char_p, ctypes.c_size_t]
    lib.scaf_rules_user.argtypes = [ctypes.POINTER(_Env), ctypes.c_char_p, ctypes.c_size_t]
    lib.scaf_rules_parse.restype = ctypes.c_int
    lib.scaf_rules_parse.argtypes = [ctypes.c_char_p, ctypes.c_size_t, ctypes.POINTER(_Line)]
    lib.scaf_rules_read.restype = ctypes.c_int
    lib.scaf_rules_read.argtypes = [ctypes.c_char_p, _VISIT, ctypes.c_void_p]
    lib.scaf_rules_match.restype = ctypes.c_int
    lib.scaf_rules_match.argtypes = [ctypes.c_char_p, ctypes.c_char_p]
    lib.scaf_rules_find.restype = ctypes.c_int
    lib.scaf_rules_find.argtypes = [ctypes.POINTER(_Env), ctypes.c_char_p, ctypes.POINTER(_Line), _VISIT,
                                    ctypes.c_void_p]
    return lib


class _Where:
    """ENV (os.environ when None) as the reader's struct scaf_rules_env, with the strings it points into."""

    def __init__(self, env: Mapping[str, str] | None) -> None:
        env = os.environ if env is None else env
        self._envp = [os.fsencode(k) + b"=" + os.fsencode(v) for k, v in env.items()]
        self._arr = (ctypes.c_char_p * (len(self._envp) + 1))(*self._envp, None)
        self.c = _Env()
        _lib().scaf_rules_env_of(self._arr, ctypes.byref(self.c))
        # Room for any name the three values can make.
        self.room = sum(len(e) for e in self._envp) + 64

    def slots(self) -> list[tuple[int, str]]:
        """(slot, file) for each position of the search path."""
        out = []
        buf = ctypes.create_string_buffer(self.room)
        for i in range(1 << 16):
            slot = _lib().scaf_rules_locate(ctypes.byref(self.c), i, buf, len(buf))
            if slot == _SLOT_END:
                break
            out.append((slot, os.fsdecode(buf.value)))
        return out


def _rule_of(line: _Line, file: str) -> Rule:
    return Rule(file, line.line, line.word.decode(), os.fsdecode(line.pattern))


# ---- where the files are ----------------------------------------------------------------------


def user_file(env: Mapping[str, str] | None = None) -> str | None:
    """The per-user rules file (scaf_rules_user), None when the environment names none."""
    w = _Where(env)
    buf = ctypes.create_string_buffer(w.room)
    return os.fsdecode(buf.value) if _lib().scaf_rules_user(ctypes.byref(w.c), buf, len(buf)) == 0 else None


def search_path(env: Mapping[str, str] | None = None) -> list[str]:
    """The files the layer reads, in its order (scaf_rules_locate)."""
    return [f for slot, f in _Where(env).slots() if slot == _SLOT_READ]


def unread_files(env: Mapping[str, str] | None = None) -> list[str]:
    """Files the user's list names beyond the ones the layer reads (scaf_rules_locate)."""
    return [f for slot, f in _Where(env).slots() if slot == _SLOT_UNREAD]


def save_target(env: Mapping[str, str] | None = None) -> str | None:
    """Where a new rule goes so that the layer reads it first: the first file of the user's list when the
    environment sets one (None when it is empty), else the user's own file."""
    if _Where(env).c.list is not None:
        files = search_path(env)
        return files[0] if files else None
    return user_file(env)


# ---- reading ----------------------------------------------------------------------------------


def parse_line(raw: bytes) -> tuple[str, str] | str | None:
    """One line (without its newline), as scaf_rules_parse reads it: (verdict, pattern), None for a blank or
    comment line, or a string saying why it is not a rule."""
    out = _Line()
    kind = _lib().scaf_rules_parse(raw, len(raw), ctypes.byref(out))
    if kind == _BLANK:
        return None
    if kind == _RULE:
        return out.word.decode(), os.fsdecode(out.pattern)
    return os.fsdecode(out.why)


def read_file(path: str) -> RulesFile:
    """A rules file as scaf_rules_read reads it; a missing file has no rules and no problems (the layer skips it
    too), one that cannot be read has one problem at line 0."""
    rf = RulesFile(path)

    def visit(p: ctypes._Pointer, _ctx: int | None) -> int:
        line = p.contents
        if line.kind == _RULE:
            rf.rules.append(_rule_of(line, path))
        else:
            rf.problems.append(Problem(path, line.line, os.fsdecode(line.why)))
        return 0

    rf.exists = _lib().scaf_rules_read(os.fsencode(path), _VISIT(visit), None) != _ABSENT
    return rf


def load(env: Mapping[str, str] | None = None) -> list[RulesFile]:
    return [read_file(p) for p in search_path(env)]


# ---- matching ---------------------------------------------------------------------------------


def matches(rule: Rule, exe: str) -> bool:
    """Whether RULE speaks for the program EXE (scaf_rules_match)."""
    return _lib().scaf_rules_match(os.fsencode(rule.pattern), os.fsencode(exe)) == 1


def find(exe: str, env: Mapping[str, str] | None = None) -> Rule | None:
    """The rule the layer picks for the program EXE (its absolute path, links resolved) under ENV: the first
    that matches, files in search_path's order (scaf_rules_find); None when none does."""
    w = _Where(env)
    out = _Line()
    if not _lib().scaf_rules_find(ctypes.byref(w.c), os.fsencode(exe), ctypes.byref(out), _VISIT(), None):
        return None
    return _rule_of(out, os.fsdecode(out.file))


def exe_path(prog: str, env_path: str | None = None) -> str | None:
    """PROG as the layer sees itself in /proc/self/exe: found through PATH, absolute, links resolved."""
    if "/" not in prog:
        for d in (env_path if env_path is not None else os.environ.get("PATH", os.defpath)).split(":"):
            cand = os.path.join(d or ".", prog)
            if os.path.isfile(cand) and os.access(cand, os.X_OK):
                return os.path.realpath(cand)
        return None
    if not os.path.exists(prog):
        return None
    return os.path.realpath(prog)


# ---- writing ----------------------------------------------------------------------------------

_GLOB_SPECIAL = "*?[\\"
# What a line cannot carry in a pattern: the white space that splits its words, and the comment sign.
_UNWRITABLE = " \t\n\r\x0b\x0c#"


def pattern_for_path(path: str) -> str:
    """A pattern that matches exactly PATH: glob characters escaped with a backslash (fnmatch
    without FNM_NOESCAPE honours it); whitespace and '#', which a rules line cannot carry,
    become '?' (so the pattern also matches that position with any other character)."""
    out = []
    for ch in path:
        if ch in _GLOB_SPECIAL:
            out.append("\\" + ch)
        elif ch in _UNWRITABLE:
            out.append("?")
        else:
            out.append(ch)
    return "".join(out)


def _lines(data: bytes) -> list[bytes]:
    lines = data.split(b"\n")
    if lines[-1] == b"":
        lines.pop()  # the empty piece after the final newline
    return lines


def set_rule(path: str, verdict: str, pattern: str, exe: str | None = None) -> int:
    """Write `VERDICT PATTERN` into the rules file PATH; returns its line number.

    The line is first read back by the C reader: one that would not read as
    exactly this rule (another verdict word, a pattern with spaces, a line too
    long) raises ValueError with the reader's reason, and nothing is written.
    Every other line (comments, other rules, even malformed lines) is kept as
    it is. A rule for the same pattern is replaced in place. When EXE is given
    and an earlier rule of this file also matches it, the new rule goes right
    before that one, so that it is the first match; otherwise a new rule is
    appended. The file is replaced atomically (a temporary file in the same
    directory, fsync, rename), keeping its permissions; missing directories
    are created.
    """
    new = f"{verdict} {pattern}".encode(errors="surrogateescape")
    got = parse_line(new)
    if got != (verdict, pattern):
        raise ValueError(got if isinstance(got, str) else f"'{verdict} {pattern}' would not read back as that rule")
    try:
        with open(path, "rb") as f:
            data = f.read()
        mode = os.stat(path).st_mode & 0o7777
    except FileNotFoundError:
        data = b""
        mode = 0o644
    lines = _lines(data)
    same = None
    earlier = None
    for i, raw in enumerate(lines):
        got = parse_line(raw)
        if not isinstance(got, tuple):
            continue
        if got[1] == pattern and same is None:
            same = i
        if exe is not None and earlier is None and matches(Rule(path, i + 1, *got), exe):
            earlier = i
    if same is not None and (earlier is None or earlier >= same):
        lines[same] = new
        at = same
    elif earlier is not None:
        if same is not None:
            del lines[same]
        lines.insert(earlier, new)
        at = earlier
    else:
        lines.append(new)
        at = len(lines) - 1
    out = b"\n".join(lines) + b"\n"
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    import tempfile  # only to write: reading rules is on `scaf run`'s path

    fd, tmp = tempfile.mkstemp(prefix=".rules.", dir=directory)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(out)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    return at + 1
