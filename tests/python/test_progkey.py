"""The program key through python/scaf/lib/progkey.py: the ctypes binding and libscaf_launch.so agree with an independent reading of the same files (pyelftools, os.stat, FNV-1a in Python)."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest
from elftools.elf.elffile import ELFFile
from scaf.lib import paths, progkey

pytestmark = pytest.mark.skipif(not paths.launch_lib().exists(), reason="libscaf_launch.so not built (make)")


def fnv1a(data: bytes) -> int:
    h = 0xCBF29CE484222325
    for b in data:
        h = ((h ^ b) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return h or 1


def build_id(path: str) -> str | None:
    with open(path, "rb") as f:
        elf = ELFFile(f)
        for seg in elf.iter_segments():
            if seg["p_type"] != "PT_NOTE":
                continue
            for note in seg.iter_notes():
                if note["n_type"] == "NT_GNU_BUILD_ID":
                    return note["n_desc"]
    return None


def file_text(path: str) -> str:
    real = os.path.realpath(path)
    st = os.stat(real)
    return f"file:{real}:{st.st_size}:{st.st_mtime_ns // 10**9}.{st.st_mtime_ns % 10**9:09d}"


def test_an_executable_is_named_by_its_build_id() -> None:
    exe = os.path.realpath(sys.executable)
    bid = build_id(exe)
    if bid is None:
        pytest.skip(f"{exe} has no build ID")
    k = progkey.key_of(exe, [exe, "-c", "pass"])
    first = k.text.split("\n")[0]
    assert first == f"exe=build-id:{bid}"
    assert k.key == fnv1a(k.text.encode())
    assert k.name == f"{os.path.basename(exe)} (code)"


def test_a_file_without_build_id_is_named_by_path_size_and_time(tmp_path: Path) -> None:
    script = tmp_path / "run.sh"
    script.write_text("#!/bin/sh\nexit 0\n")
    k = progkey.key_of(str(script), [str(script)])
    assert k.text == f"exe={file_text(str(script))}"
    assert k.key == fnv1a(k.text.encode()) and k.name == "run.sh"


def test_a_python_script_and_its_changes(tmp_path: Path) -> None:
    exe = os.path.realpath(sys.executable)
    script = tmp_path / "train.py"
    script.write_text("print(1)\n")
    a = progkey.key_of(exe, ["python3", "-u", str(script), "--depth", "3"])
    assert a.text.endswith(f"\nscript={file_text(str(script))}")
    assert a.name == f"{os.path.basename(exe)} train.py"
    # Arguments after the script are the program's input, not the program.
    assert progkey.key_of(exe, ["python3", str(script), "--depth", "9"]).key == a.key
    script.write_text("print(2)\n")
    assert progkey.key_of(exe, ["python3", str(script)]).key not in (a.key, 0)
    # From stdin: the program cannot be named, and is never remembered.
    assert progkey.key_of(exe, ["python3"]).key == 0
    assert progkey.key_of(exe, ["python3", "-m", "json.tool"]).text.endswith("\nscript=module:json.tool")


def test_an_unreadable_executable_raises(tmp_path: Path) -> None:
    with pytest.raises(OSError):
        progkey.key_of(str(tmp_path / "absent"), ["absent"])


def test_command_follows_shebang_lines_as_the_kernel_does(tmp_path: Path) -> None:
    py = os.path.realpath(sys.executable)
    direct = tmp_path / "direct.py"
    direct.write_text(f"#!{py} -u\nprint(1)\n")
    assert progkey.command(str(direct), [str(direct), "a"]) == (py, [py, "-u", str(direct), "a"])
    envpath = tmp_path / "bin"
    envpath.mkdir()
    (envpath / "mypy3").symlink_to(py)
    viaenv = tmp_path / "viaenv.py"
    viaenv.write_text("#!/usr/bin/env mypy3\nprint(1)\n")
    splitenv = tmp_path / "splitenv.py"
    splitenv.write_text("#!/usr/bin/env -S mypy3 -u\nprint(1)\n")
    old = os.environ["PATH"]
    os.environ["PATH"] = f"{envpath}:{old}"
    try:
        assert progkey.command(str(viaenv), [str(viaenv)]) == (str(envpath / "mypy3"), ["mypy3", str(viaenv)])
        assert progkey.command(str(splitenv), [str(splitenv), "x"]) == (
            str(envpath / "mypy3"), ["mypy3", "-u", str(splitenv), "x"])
        # The key is the interpreter's with the script: the same as running it by hand.
        assert progkey.of_command(str(viaenv), [str(viaenv)]).key == progkey.key_of(py, [py, str(viaenv)]).key
    finally:
        os.environ["PATH"] = old
    true = shutil.which("true") or "/bin/true"
    assert progkey.command(true, ["true", "x"]) == (true, ["true", "x"])


@pytest.mark.parametrize("words, want", [
    (["Rscript", "a.R"], ["--file=a.R"]),
    (["Rscript", "a.R", "x", "--y"], ["--file=a.R", "--args", "x", "--y"]),
    (["Rscript", "--vanilla", "--verbose", "--default-packages=stats", "a.R"], ["--vanilla", "--file=a.R"]),
    (["Rscript", "-e", "1+1", "-e", "2"], ["-e", "1+1", "-e", "2"]),
    (["Rscript", "-e", "f()", "arg"], ["-e", "f()", "--args", "arg"]),
    (["Rscript"], []),
])
def test_rscript_becomes_the_engine_with_the_arguments_rscript_gives_it(words: list[str], want: list[str]) -> None:
    assert progkey._rscript_as_r("/r/bin/exec/R", words) == ["/r/bin/exec/R", "--no-echo", "--no-restore", *want]


@pytest.mark.skipif(not shutil.which("Rscript"), reason="R is not installed (r-base-core)")
def test_rscript_is_named_as_the_layer_names_r_running_the_script(tmp_path: Path) -> None:
    script = tmp_path / "s.R"
    script.write_text("cat(1)\n")
    exe, words = progkey.command("Rscript", ["Rscript", str(script), "in.csv"])
    assert exe.endswith("/bin/exec/R") and os.access(exe, os.X_OK), exe
    assert words[1:] == ["--no-echo", "--no-restore", f"--file={script}", "--args", "in.csv"]
    # What the layer computes in R's engine for the same script: the R rule's key, not Rscript's.
    engine = progkey.key_of(exe, [exe, "--no-echo", "--no-restore", f"--file={script}"])
    assert progkey.of_command("Rscript", ["Rscript", str(script)]).key == engine.key != 0
    assert engine.key != progkey.key_of(shutil.which("Rscript") or "Rscript", ["Rscript", str(script)]).key


def test_where_r_lives_is_asked_once_and_again_when_the_r_script_changes(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """`R RHOME` runs a shell script: its answer is kept in the per-user cache while that script is unchanged."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv("R_HOME", raising=False)
    bindir = tmp_path / "bin"
    bindir.mkdir()
    asked = tmp_path / "asked"
    homes = []
    for name in ("home1", "home2"):
        engine = tmp_path / name / "bin" / "exec" / "R"
        engine.parent.mkdir(parents=True)
        engine.write_text("#!/bin/sh\n")
        engine.chmod(0o755)
        homes.append(tmp_path / name)
    rscript = bindir / "Rscript"
    shutil.copy(shutil.which("true") or "/bin/true", rscript)  # a binary, as Rscript is: no #! to follow
    r = bindir / "R"

    def r_says(home: Path) -> None:
        r.write_text(f'#!/bin/sh\necho x >> "{asked}"\n[ "$1" = RHOME ] && echo "{home}"\n')
        r.chmod(0o755)

    def engine() -> str:
        progkey._r_engine_of.cache_clear()  # this process's own memo: the cache on disk is what is tested
        exe, _ = progkey.command(str(rscript), ["Rscript", "-e", "1"])
        return exe

    def times_asked() -> int:
        return len(asked.read_text().splitlines()) if asked.exists() else 0

    r_says(homes[0])
    assert engine() == str(homes[0] / "bin" / "exec" / "R")
    assert engine() == str(homes[0] / "bin" / "exec" / "R")
    assert times_asked() == 1
    r_says(homes[1])  # an R upgraded in place: the script is rewritten
    assert engine() == str(homes[1] / "bin" / "exec" / "R")
    assert times_asked() == 2
    monkeypatch.setenv("XDG_CACHE_HOME", "")  # no cache: asked each time, as before
    monkeypatch.setenv("HOME", "relative")
    engine()
    engine()
    assert times_asked() == 4
