"""A per-user cache of what `scaf run` works out before each program (the layer it chooses, where R lives), trusted only while every file and directory read to work it out is unchanged."""

from __future__ import annotations

import contextlib
import json
import os
from typing import Any

# The file's layout; a file of another version is ignored, then replaced at the next write.
VERSION = 1
# The programs kept: the most recently walked first to stay. An entry is a few kilobytes.
ENTRIES = 128
NAME = f"layer-choices-v{VERSION}.json"


def cache_dir() -> str | None:
    """$XDG_CACHE_HOME/scaf (an absolute one, as the XDG specification has it), else ~/.cache/scaf; None
    without either (no cache)."""
    xdg = os.environ.get("XDG_CACHE_HOME", "")
    if os.path.isabs(xdg):
        return os.path.join(xdg, "scaf")
    home = os.environ.get("HOME", "")
    return os.path.join(home, ".cache", "scaf") if os.path.isabs(home) else None


def stamp(path: str) -> list[int]:
    """What changes when a file or directory is replaced, written, or gains or loses an entry: device, inode,
    size, modification and change times (a package manager may set the first time back, never the second).
    [] when it does not exist, which is a state to keep too (a library that appears changes the answer)."""
    try:
        st = os.stat(path)
    except OSError:
        return []
    return [st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns]


class Witness:
    """The paths a walk read, each stamped before it was read: a change after that is seen at the next lookup."""

    def __init__(self) -> None:
        self.seen: dict[str, list[int]] = {}

    def saw(self, path: str) -> None:
        if path not in self.seen:
            self.seen[path] = stamp(path)

    def add(self, seen: dict[str, list[int]]) -> None:
        """What another walk read, with the stamps it took then (a path already seen keeps its own)."""
        for p, s in seen.items():
            self.seen.setdefault(p, s)


def _entry_ok(e: Any) -> bool:
    return (isinstance(e, dict) and isinstance(e.get("key"), list) and all(isinstance(k, str) for k in e["key"])
            and isinstance(e.get("witness"), dict) and isinstance(e.get("value"), dict)
            and all(isinstance(p, str) and isinstance(s, list) and all(isinstance(n, int) for n in s)
                    for p, s in e["witness"].items()))


def _load(path: str, checked: bool = True) -> list[Any]:
    """The file's entries; none when it is missing, unreadable, damaged or of another version (it is then
    replaced at the next write, never trusted). Unless CHECKED, the entries are not checked one by one: the
    caller checks the one it uses."""
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, ValueError, UnicodeDecodeError):
        return []
    if not isinstance(data, dict) or data.get("version") != VERSION or not isinstance(data.get("entries"), list):
        return []
    return [e for e in data["entries"] if _entry_ok(e)] if checked else data["entries"]


def lookup(key: list[str], seen: Witness | None = None) -> dict | None:
    """The value stored under KEY, if every path its walk read is as it was then; SEEN then gets those paths.
    Only that entry is checked: checking all 128 of a full cache cost about 1.5 ms of each `scaf run`'s start
    (97.6 ms against 99.0)."""
    d = cache_dir()
    if d is None:
        return None
    for e in _load(os.path.join(d, NAME), checked=False):
        if isinstance(e, dict) and e.get("key") == key:
            if not _entry_ok(e):
                return None
            if not all(stamp(p) == s for p, s in e["witness"].items()):
                return None
            if seen is not None:
                seen.add(e["witness"])
            return e["value"]
    return None


def store(key: list[str], witness: Witness, value: dict) -> None:
    """Keeps VALUE under KEY with what the walk read. Written whole to a new file renamed over the old one, so
    a reader never sees half of it; two writers at once lose at most one entry, walked again next time. A cache
    that cannot be written is no error: the next run walks again."""
    d = cache_dir()
    if d is None:
        return
    path = os.path.join(d, NAME)
    entries = [e for e in _load(path) if e["key"] != key]
    entries.append({"key": key, "witness": witness.seen, "value": value})
    tmp = None
    try:
        os.makedirs(d, mode=0o700, exist_ok=True)
        import tempfile  # only on a miss: a hit, every `scaf run` but the first, need not load it

        fd, tmp = tempfile.mkstemp(dir=d, prefix=".layer-choices-", suffix=".tmp")
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump({"version": VERSION, "entries": entries[-ENTRIES:]}, f)
        os.replace(tmp, path)
        tmp = None
    except OSError:
        pass
    finally:
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
