"""Rules files (`malleable PATTERN` / `fixed PATTERN`): read, matched and written exactly as the layer reads them.

The layer (src/layer/malleable/malleable.c) reads these files at its first connect. This
module reads them exactly as the layer does, so that `scaf rules --which`
names the rule the layer would pick:

- files: `$SCAF_RULES` when set (a colon-separated list, empty items skipped;
  set but empty means no file), otherwise `$XDG_CONFIG_HOME/scaf/rules` (only
  when XDG_CONFIG_HOME is an absolute path, as the XDG spec says) or else
  `$HOME/.config/scaf/rules`, then `/etc/scaf/rules`;
- a line: everything from the first `#` on is a comment; the rest is split on
  ASCII whitespace (like sscanf's %s); no word is a blank line; exactly two
  words with the first `malleable` or `fixed` (lowercase) is a rule; anything
  else is malformed and ignored by the layer;
- PATTERN is an fnmatch(3) glob with flags 0 (libc's own fnmatch, through
  ctypes, so that `[[:digit:]]`, `[^x]` and backslash escapes mean what they
  mean to the layer); with a `/` it is matched against the program's absolute
  executable path (the layer reads /proc/self/exe), otherwise against that
  path's basename;
- the first matching rule in file order, files in the order above, wins.
  SCAF_MALLEABLE=yes|no (`scaf run --malleable/--fixed`) and scaf check's
  SCAF_CHECK_SEED beat every rule.
"""

import ctypes
import fnmatch as _pyfnmatch
import functools
import os
from typing import NamedTuple

VERDICTS = ("malleable", "fixed")
SYSTEM_FILE = "/etc/scaf/rules"

# The layer reads a line with fgets into 1024 bytes (newline and NUL included): a longer
# line reaches it in pieces, and its line numbers drift from there on.
LINE_MAX = 1022
# ... and the words with sscanf("%31s %4095s").
WORD_MAX = 31
PATTERN_MAX = 4095

# The layer takes at most this many files from SCAF_RULES (the rest are not read).
SCAF_RULES_MAX = 8

# C's isspace() in the C locale (what sscanf splits on; bytes.split() splits on the same), and '#'.
_UNWRITABLE = " \t\n\r\x0b\x0c#"


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


# ---- where the files are ----------------------------------------------------------------------


def user_file(env: dict[str, str] | None = None) -> str | None:
    """The per-user rules file: $XDG_CONFIG_HOME/scaf/rules or $HOME/.config/scaf/rules."""
    env = os.environ if env is None else env
    xdg = env.get("XDG_CONFIG_HOME", "")
    if xdg.startswith("/"):
        return os.path.join(xdg, "scaf", "rules")
    home = env.get("HOME", "")
    if home:
        return os.path.join(home, ".config", "scaf", "rules")
    return None


def _scaf_rules(env: dict[str, str]) -> list[str]:
    return [p for p in env["SCAF_RULES"].split(":") if p]


def search_path(env: dict[str, str] | None = None) -> list[str]:
    """The files the layer reads, in its order."""
    env = os.environ if env is None else env
    if "SCAF_RULES" in env:
        return _scaf_rules(env)[:SCAF_RULES_MAX]
    out = []
    user = user_file(env)
    if user:
        out.append(user)
    out.append(SYSTEM_FILE)
    return out


def unread_files(env: dict[str, str] | None = None) -> list[str]:
    """Files named in SCAF_RULES beyond the ones the layer reads."""
    env = os.environ if env is None else env
    return _scaf_rules(env)[SCAF_RULES_MAX:] if "SCAF_RULES" in env else []


def save_target(env: dict[str, str] | None = None) -> str | None:
    """Where a new rule goes so that the layer reads it first: SCAF_RULES's first file, else the user's."""
    env = os.environ if env is None else env
    if "SCAF_RULES" in env:
        files = search_path(env)
        return files[0] if files else None
    return user_file(env)


# ---- parsing ----------------------------------------------------------------------------------


def parse_line(raw: bytes) -> tuple[str, str] | str | None:
    """One line (without its newline): (verdict, pattern), None for a blank or comment line,
    or a string saying why it is not a rule."""
    if len(raw) > LINE_MAX:
        return f"line longer than {LINE_MAX} bytes (the layer reads it in pieces)"
    body = raw.split(b"\0", 1)[0].split(b"#", 1)[0]  # C strings end at a NUL
    words = body.split()
    if not words:
        return None
    if words[0] not in (b"malleable", b"fixed"):
        if words[0].lower() in (b"malleable", b"fixed"):
            return f"'{_show(words[0])}' must be lowercase: want 'malleable PATTERN' or 'fixed PATTERN'"
        return f"'{_show(words[0])}' is not 'malleable' or 'fixed': want 'malleable PATTERN' or 'fixed PATTERN'"
    if len(words) == 1:
        return f"'{_show(words[0])}' without a pattern: want '{_show(words[0])} PATTERN'"
    if len(words) > 2:
        return ("more than one pattern (a pattern cannot contain spaces; write one rule per line, "
                "or use ? for a space)")
    if len(words[1]) > PATTERN_MAX:
        return f"pattern longer than {PATTERN_MAX} bytes"
    return words[0].decode(), os.fsdecode(words[1])


def _show(b: bytes) -> str:
    s = os.fsdecode(b)
    return s if len(s) <= 40 else s[:37] + "..."


def _lines(data: bytes) -> list[bytes]:
    lines = data.split(b"\n")
    if lines[-1] == b"":
        lines.pop()  # the empty piece after the final newline
    return lines


def parse_text(path: str, data: bytes) -> RulesFile:
    rf = RulesFile(path, exists=True)
    for n, raw in enumerate(_lines(data), start=1):
        got = parse_line(raw)
        if got is None:
            continue
        if isinstance(got, str):
            rf.problems.append(Problem(path, n, got))
            continue
        rf.rules.append(Rule(path, n, got[0], got[1]))
    return rf


def read_file(path: str) -> RulesFile:
    """A rules file; a missing file has no rules and no problems (the layer skips it too)."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        return RulesFile(path)
    except IsADirectoryError:
        return RulesFile(path, exists=True, problems=[Problem(path, 0, "is a directory, not a rules file")])
    except OSError as e:
        return RulesFile(path, exists=True,
                         problems=[Problem(path, 0, f"cannot be read ({e.strerror}); the layer skips it")])
    return parse_text(path, data)


def load(env: dict[str, str] | None = None) -> list[RulesFile]:
    return [read_file(p) for p in search_path(env)]


# ---- matching ---------------------------------------------------------------------------------


@functools.cache  # at the first match, not at import: `scaf run` imports this module before every program
def _libc_fnmatch():
    try:
        # The process's own symbols, libc's among them: ctypes.util.find_library would run ldconfig for this.
        fn = ctypes.CDLL(None, use_errno=True).fnmatch
    except (OSError, AttributeError):
        return None
    fn.argtypes = (ctypes.c_char_p, ctypes.c_char_p, ctypes.c_int)
    fn.restype = ctypes.c_int
    return fn


def fnmatch(pattern: str, name: str) -> bool:
    """fnmatch(3) with flags 0, as the layer calls it."""
    libc_fnmatch = _libc_fnmatch()
    if libc_fnmatch is not None:
        return libc_fnmatch(os.fsencode(pattern), os.fsencode(name), 0) == 0
    return _pyfnmatch.fnmatchcase(name, pattern)  # pragma: no cover - no libc fnmatch


def matches(rule: Rule, exe: str) -> bool:
    subject = exe if "/" in rule.pattern else os.path.basename(exe)
    return fnmatch(rule.pattern, subject)


def first_match(files: list[RulesFile], exe: str) -> Rule | None:
    for rf in files:
        for rule in rf.rules:
            if matches(rule, exe):
                return rule
    return None


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


def set_rule(path: str, verdict: str, pattern: str, exe: str | None = None) -> int:
    """Write `VERDICT PATTERN` into the rules file PATH; returns its line number.

    Every other line (comments, other rules, even malformed lines) is kept as
    it is. A rule for the same pattern is replaced in place. When EXE is given
    and an earlier rule of this file also matches it, the new rule goes right
    before that one, so that it is the first match; otherwise a new rule is
    appended. The file is replaced atomically (a temporary file in the same
    directory, fsync, rename), keeping its permissions; missing directories
    are created.
    """
    if verdict not in VERDICTS:
        raise ValueError(f"verdict must be one of {VERDICTS}")
    new = f"{verdict} {pattern}".encode(errors="surrogateescape")
    if len(new) > LINE_MAX:
        raise ValueError(f"the rule would be longer than {LINE_MAX} bytes")
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

