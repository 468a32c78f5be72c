"""scaf run's cache of the layer it chooses (scaf.lib.choicecache): used while nothing the dependency walk read has
changed, walked again when a library is replaced or appears earlier in the search, never trusted when damaged,
and no error when it cannot be written. Real programs and libraries built here, `scaf run` as a subprocess."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from conftest import SCAF, short_tmpdir
from scaf.lib import choicecache, runtimes

DEP_OMP = "#include <omp.h>\nint dep(void) { return omp_get_max_threads(); }\n"
DEP_PLAIN = "int dep(void) { return 1; }\n"
PROG = "int dep(void);\nint main(void) { return dep() > 0 ? 0 : 1; }\n"
WITH_GOMP = "layer libscaf_gomp.so for GNU libgomp (/"
WITHOUT = "layer libscaf_gomp.so for GNU libgomp (default): no OpenMP runtime among its dynamic dependencies"


def build_dep(src: str, out: Path, work: Path) -> None:
    """libdep.so from SRC, written beside OUT and renamed over it (a new file, as a package manager writes)."""
    c = work / "dep.c"
    c.write_text(src)
    tmp = out.parent / ".libdep.so.new"
    subprocess.run(["gcc", "-shared", "-fPIC", *(["-fopenmp"] if "omp.h" in src else []), "-Wl,-soname,libdep.so",
                    "-o", str(tmp), str(c)], check=True)
    os.replace(tmp, out)


def build_prog(work: Path, rpath: list[Path], link_dir: Path) -> Path:
    c = work / "prog.c"
    c.write_text(PROG)
    exe = work / "prog"
    subprocess.run(["gcc", "-o", str(exe), str(c), f"-L{link_dir}", "-ldep",
                    "-Wl,--disable-new-dtags", "-Wl,-rpath," + ":".join(str(d) for d in rpath)], check=True)
    return exe


def run_v(exe: Path, cache: Path | str, home: Path | None = None) -> str:
    """`scaf run --verbose` without a daemon: its first line says which layer, for which runtime, and why."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SCAF_") and k != "LD_LIBRARY_PATH"}
    if "SCAF_BUILD" in os.environ:
        env["SCAF_BUILD"] = os.environ["SCAF_BUILD"]
    env["XDG_CACHE_HOME"] = str(cache)
    if home is not None:
        env["HOME"] = str(home)
    r = subprocess.run([str(SCAF), "run", "--no-start", "--socket", os.path.join(short_tmpdir(), "none.sock"),
                        "--verbose", "--", str(exe)], capture_output=True, text=True, timeout=120, check=False,
                       env=env)
    assert r.returncode == 0, r.stderr
    return r.stderr.splitlines()[0].removeprefix("scaf: ")


def cache_file(cache: Path) -> Path:
    return cache / "scaf" / choicecache.NAME


def entries(cache: Path) -> list[dict]:
    return json.loads(cache_file(cache).read_text())["entries"]


def count_walks(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """From now on, every ELF file the dependency walk reads is appended to the list returned."""
    walked: list[str] = []
    real = runtimes._dynamic

    def counting(path: str, symbols: bool = True) -> tuple[list[str], list[str], list[str], set[str]]:
        walked.append(path)
        return real(path, symbols)

    monkeypatch.setattr(runtimes, "_dynamic", counting)
    return walked


@pytest.fixture
def tree(tmp_path: Path) -> tuple[Path, Path, Path]:
    """Two library folders A and B, searched in that order (the program's DT_RPATH), and the cache's home."""
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    return a, b, tmp_path / "cache"


def test_a_library_replaced_is_walked_again(tree: tuple[Path, Path, Path], tmp_path: Path) -> None:
    a, b, cache = tree
    build_dep(DEP_OMP, b / "libdep.so", tmp_path)
    exe = build_prog(tmp_path, [a, b], b)
    assert run_v(exe, cache).startswith(WITH_GOMP)
    assert [e["key"][0] for e in entries(cache)] == [str(exe)]  # kept, and the next run finds it
    assert run_v(exe, cache).startswith(WITH_GOMP)
    build_dep(DEP_PLAIN, b / "libdep.so", tmp_path)
    assert run_v(exe, cache) == WITHOUT


def test_a_library_that_appears_earlier_in_the_search_is_walked_again(tree: tuple[Path, Path, Path],
                                                                      tmp_path: Path) -> None:
    a, b, cache = tree
    build_dep(DEP_PLAIN, b / "libdep.so", tmp_path)
    exe = build_prog(tmp_path, [a, b], b)
    assert run_v(exe, cache) == WITHOUT
    assert run_v(exe, cache) == WITHOUT
    build_dep(DEP_OMP, a / "libdep.so", tmp_path)
    assert run_v(exe, cache).startswith(WITH_GOMP)


def chosen_once(tree: tuple[Path, Path, Path], tmp_path: Path,
                monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path, runtimes.Choice]:
    """A program that loads libgomp through a library of the tree's second folder, chosen once in this process with
    the tree's cache: (the program, the cache, the choice)."""
    a, b, cache = tree
    build_dep(DEP_OMP, b / "libdep.so", tmp_path)
    exe = build_prog(tmp_path, [a, b], b)
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache))
    monkeypatch.delenv("LD_LIBRARY_PATH", raising=False)
    return exe, cache, runtimes.choose(str(exe))


def test_a_cached_choice_is_not_walked_again(tree: tuple[Path, Path, Path], tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """In one process: the second choice reads no ELF file while nothing changed, and the third does after a
    change (the walk itself, pyelftools, is what the cache saves)."""
    a, b, _ = tree
    exe, _, first = chosen_once(tree, tmp_path, monkeypatch)
    assert first.layer == "gomp" and first.runtime.startswith("GNU libgomp (/"), first
    walked = count_walks(monkeypatch)
    assert runtimes.choose(str(exe)) == first and walked == []
    # Another LD_LIBRARY_PATH is another search: its own entry.
    assert runtimes.choose(str(exe), {"LD_LIBRARY_PATH": str(a)}) == first and walked != []
    walked.clear()
    build_dep(DEP_PLAIN, b / "libdep.so", tmp_path)
    assert runtimes.choose(str(exe)).runtime == "GNU libgomp (default)" and str(exe) in walked


@pytest.mark.parametrize("damage", ["garbage", "another version", "a value of the wrong type", "a folder"])
def test_a_damaged_cache_is_never_trusted_and_is_replaced(damage: str, tree: tuple[Path, Path, Path],
                                                          tmp_path: Path) -> None:
    a, b, cache = tree
    build_dep(DEP_OMP, b / "libdep.so", tmp_path)
    exe = build_prog(tmp_path, [a, b], b)
    assert run_v(exe, cache).startswith(WITH_GOMP)
    f = cache_file(cache)
    good = json.loads(f.read_text())
    if damage == "garbage":
        f.write_bytes(b"\0\xff{not json")
    elif damage == "another version":
        f.write_text(json.dumps({**good, "version": choicecache.VERSION + 1}))
    elif damage == "a value of the wrong type":
        # Its witness still holds: only the value's check keeps it from being used.
        good["entries"][0]["value"]["layer"] = 5
        f.write_text(json.dumps(good))
    else:
        f.unlink()
        f.mkdir()
    assert run_v(exe, cache).startswith(WITH_GOMP)
    if damage != "a folder":
        assert entries(cache)[0]["value"]["layer"] == "gomp"


def test_a_lookup_checks_the_entry_it_uses(tree: tuple[Path, Path, Path], tmp_path: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """A damaged entry of another program does not hide a good one; a damaged entry of this one is not used (the
    program is walked again, and the entry replaced)."""
    exe, cache, first = chosen_once(tree, tmp_path, monkeypatch)
    good = json.loads(cache_file(cache).read_text())
    key = good["entries"][0]["key"]
    others = [7, "text", {"key": "not a list"}, {"key": ["/other"], "witness": {"/x": "no"}, "value": {}}]
    cache_file(cache).write_text(json.dumps({**good, "entries": [*others, *good["entries"]]}))
    assert choicecache.lookup(key) == good["entries"][0]["value"]
    walked = count_walks(monkeypatch)
    assert runtimes.choose(str(exe)) == first and walked == []
    bad = {**good["entries"][0], "witness": {str(exe): "not a stamp"}}
    cache_file(cache).write_text(json.dumps({**good, "entries": [bad]}))
    assert choicecache.lookup(key) is None
    assert runtimes.choose(str(exe)) == first and walked != []
    assert choicecache.lookup(key) == good["entries"][0]["value"]


def test_a_cache_that_cannot_be_written_is_no_error(tree: tuple[Path, Path, Path], tmp_path: Path) -> None:
    """XDG_CACHE_HOME a file, or relative (not used, as the XDG specification says) with a HOME that is a
    file too: the program runs, with the layer it needs, and scaf says nothing of the cache."""
    a, b, _ = tree
    build_dep(DEP_OMP, b / "libdep.so", tmp_path)
    exe = build_prog(tmp_path, [a, b], b)
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder\n")
    for where in (blocker, "relative/not/used"):
        assert run_v(exe, where, home=blocker).startswith(WITH_GOMP)
        assert run_v(exe, where, home=blocker).startswith(WITH_GOMP)
    assert blocker.read_text() == "not a folder\n"
