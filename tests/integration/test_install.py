"""make install into a DESTDIR from a copy of the checkout, the copy then deleted: the installed scaf runs programs as clients, its manual pages render, make uninstall removes it."""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sysconfig
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import ROOT, parse_result, short_tmpdir
from scaf.lib import paths

# The first test's set-up is a whole build and install (a few minutes quiet, three times that with
# the CPUs busy elsewhere): pytest.ini's 300 s is for one test, not for a build.
pytestmark = pytest.mark.timeout(1800)

PREFIX = "/usr/local"
PAGES = {"scaf.1", "scaf-run.1", "scaf-status.1", "scaf-bench.1", "scaf-check.1", "scaf-daemon.1",
         "scaf-doctor.1", "scafd.8", "scaf-settings.7"}


def make_env() -> dict[str, str]:
    # The suite may run under make: its flags are not for this make.
    return {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL", "SCAF_BUILD")}


def checkout_files() -> list[str]:
    r = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                       capture_output=True, text=True, check=False)
    if r.returncode != 0:
        pytest.skip(f"not a git checkout: {r.stderr.strip()}")
    return [f for f in r.stdout.split("\0") if f and (ROOT / f).is_file()]


@pytest.fixture(scope="module")
def dest(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """DESTDIR after `make install` from a fresh copy of the checkout, which is then deleted."""
    top = tmp_path_factory.mktemp("install")
    src, destdir = top / "src", top / "dest"
    for f in checkout_files():
        (src / f).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / f, src / f)
    # The copy builds its own C tree and manual pages; the Python packages the build needs are
    # the ones already installed for the tests (the install itself makes a venv of its own).
    (src / "build").mkdir()
    (src / "build" / "venv").symlink_to(paths.build_dir() / "venv")
    # The copy's `make` names its own python/ folder in the shared venv's .pth file, and the copy is deleted
    # below: every later `scaf` of the suite would find no package. Put back the checkout's.
    pth = Path(sysconfig.get_path("purelib", vars={"base": str(paths.build_dir() / "venv")})) / "scaf-source.pth"
    kept = pth.read_bytes() if pth.exists() else None
    try:
        r = subprocess.run(["make", "-C", str(src), "install", f"DESTDIR={destdir}", f"PREFIX={PREFIX}"],
                           capture_output=True, text=True, env=make_env(), timeout=1500, check=False)
    finally:
        if kept is not None:
            pth.write_bytes(kept)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    shutil.rmtree(src)
    yield destdir


def prefix(destdir: Path) -> Path:
    return destdir / PREFIX.lstrip("/")


def test_installed_files_are_where_the_gnu_conventions_say(dest: Path) -> None:
    p = prefix(dest)
    assert os.access(p / "bin" / "scaf", os.X_OK)
    assert os.access(p / "sbin" / "scafd", os.X_OK)
    libs = sorted(x.name for x in (p / "lib" / "scaf").glob("libscaf_*.so"))
    assert libs == sorted(x.name for x in (paths.build_dir() / "lib").glob("libscaf_*.so"))
    assert {x.name for x in (p / "share" / "man").glob("man*/*")} >= PAGES
    for unit in ("system/scafd.service", "system/scafd.socket", "user/scafd.service", "user/scafd.socket"):
        text = (p / "lib" / "systemd" / unit).read_text()
        assert not re.search(r"@[A-Z_]+@", text), f"{unit} has an unsubstituted name"
    assert f"ExecStart={PREFIX}/sbin/scafd --shared" in (p / "lib/systemd/system/scafd.service").read_text()
    assert (p / "share" / "doc" / "scaf" / "deploy.md").is_file()
    prolog = p / "lib" / "scaf" / "slurm-taskprolog"
    assert os.access(prolog, os.X_OK)
    assert f"setsid {PREFIX}/sbin/scafd --socket" in prolog.read_text()


@pytest.fixture
def runtime_dir() -> Iterator[str]:
    d = short_tmpdir()
    os.chmod(d, 0o700)
    yield d
    # The daemon `scaf run` started lingers for a while after its last client: end it.
    try:
        pid = json.loads(Path(d, "daemon.json").read_text())["daemon_pid"]
        os.kill(pid, signal.SIGTERM)
    except (OSError, ValueError, KeyError):
        pass
    shutil.rmtree(d, ignore_errors=True)


def test_installed_scaf_runs_a_program_as_a_client(dest: Path, runtime_dir: str, tmp_path: Path) -> None:
    p = prefix(dest)
    scaf = str(p / "bin" / "scaf")
    # A user's environment: no socket chosen, a runtime directory of their own; not in the checkout.
    env = {k: v for k, v in make_env().items() if not k.startswith(("SCAF_", "LD_PRELOAD"))}
    env.update(XDG_RUNTIME_DIR=runtime_dir, SCAF_REPORT=str(tmp_path / "report.jsonl"))
    workload = str(p / "lib" / "scaf" / "workloads" / "cg")
    r = subprocess.run([scaf, "run", "--", workload, "--size", "S"], capture_output=True, text=True,
                       env=env, cwd=tmp_path, timeout=300, check=False)
    assert r.returncode == 0, r.stderr
    assert parse_result(r.stdout)["verified"] == "yes"
    # The layer reports only when regions ran while it was connected: the program was a client.
    report = [json.loads(x) for x in (tmp_path / "report.jsonl").read_text().splitlines()]
    assert report and report[-1]["exe"] == workload and report[-1]["regions"] > 0

    st = subprocess.run([scaf, "status", "--json"], capture_output=True, text=True, env=env, timeout=60, check=False)
    assert st.returncode == 0, st.stderr
    status = json.loads(st.stdout)
    Path(runtime_dir, "daemon.json").write_text(st.stdout)
    # The daemon `scaf run` started is the installed one, on the per-user default socket.
    assert os.readlink(f"/proc/{status['daemon_pid']}/exe") == str(p / "sbin" / "scafd")
    assert os.path.exists(f"{runtime_dir}/scaf/scafd.sock")

    # And the layer preloaded is the installed one.
    r = subprocess.run([scaf, "run", "--", "sh", "-c", "echo $LD_PRELOAD"], capture_output=True, text=True,
                       env=env, cwd=tmp_path, timeout=120, check=False)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == [str(p / "lib" / "scaf" / "libscaf_gomp.so")]
    # The same command again is replayed by the installed scaf-run, with no Python to fall back on.
    r = subprocess.run([str(p / "lib" / "scaf" / "scaf-run"), "/nonexistent/scaf-test/python", "", "run", "--", "sh",
                        "-c", "echo $LD_PRELOAD"], capture_output=True, text=True, env=env, cwd=tmp_path,
                       timeout=120, check=False)
    assert r.returncode == 0 and r.stderr == "", r.stderr
    assert r.stdout.split() == [str(p / "lib" / "scaf" / "libscaf_gomp.so")]


def rendered(page: Path) -> str:
    env = dict(os.environ, LC_ALL="C", MANWIDTH="250")
    r = subprocess.run(["man", "-l", str(page)], capture_output=True, text=True, env=env, timeout=60, check=False)
    assert r.returncode == 0, f"{page.name}: {r.stderr}"
    assert r.stderr == "", f"{page.name}: {r.stderr}"
    return r.stdout


def long_options(help_text: str) -> set[str]:
    return set(re.findall(r"(?<![\w-])--[a-z][a-z0-9-]*", help_text)) - {"--"}


def nested_commands(command: str) -> list[str]:
    """The commands of a scaf command that has its own (argparse's view, not the help text's)."""
    from scaf import cli

    for action in cli.build_parser()._actions:
        if isinstance(action, argparse._SubParsersAction) and command in action.choices:
            for inner in action.choices[command]._actions:
                if isinstance(inner, argparse._SubParsersAction):
                    return list(inner.choices)
    return []


@pytest.mark.skipif(shutil.which("man") is None, reason="man-db is not installed")
def test_each_installed_page_renders_and_names_its_options(dest: Path) -> None:
    p = prefix(dest)
    pages = sorted((p / "share" / "man").glob("man*/*"))
    seen = set()
    for page in pages:
        text = rendered(page)
        name = page.name.rsplit(".", 1)[0]
        assert re.search(rf"^NAME\n\s+{re.escape(name)} - \S", text, re.MULTILINE), f"{page.name} has no NAME line"
        if page.name == "scaf-settings.7":
            table = (ROOT / "src" / "layer" / "core" / "settings.c").read_text()
            names = set(re.findall(r'\{"(SCAF_[A-Z0-9_]+)"', table))
            assert names and {n for n in names if n not in text} == set(), "settings missing from scaf-settings(7)"
            continue
        if name == "scafd":
            cmd = [str(p / "sbin" / "scafd"), "--help"]
        else:
            cmd = [str(p / "bin" / "scaf"), *([name.removeprefix("scaf-")] if name != "scaf" else []), "--help"]
        help_text = subprocess.run(cmd, capture_output=True, text=True, timeout=60, check=True).stdout
        # A command's own commands (scaf bench pairs, ...) are on its page too.
        for sub in nested_commands(name.removeprefix("scaf-")) if name.startswith("scaf-") else []:
            help_text += subprocess.run([*cmd[:-1], sub, "--help"], capture_output=True, text=True,
                                        timeout=60, check=True).stdout
        options = long_options(help_text)
        assert options, f"{cmd} --help names no options"
        missing = {o for o in options if not re.search(rf"(?<![\w-]){re.escape(o)}(?![\w-])", text)}
        assert missing == set(), f"{page.name} does not name {sorted(missing)}"
        seen.add(page.name)
    assert PAGES - {"scaf-settings.7"} <= seen


def test_a_second_install_over_the_first_is_refused(dest: Path) -> None:
    r = subprocess.run(["make", "-C", str(ROOT), "-s", "install", f"DESTDIR={dest}", f"PREFIX={PREFIX}"],
                       capture_output=True, text=True, env=make_env(), timeout=900, check=False)
    assert r.returncode != 0
    assert "already installed" in r.stderr


def test_uninstall_removes_exactly_what_install_put_there(dest: Path) -> None:
    # Someone else's page, in a directory the install created: it and its directory stay.
    other = prefix(dest) / "share" / "man" / "man1" / "other.1"
    other.write_text(".TH OTHER 1\n")
    r = subprocess.run(["make", "-C", str(ROOT), "-s", "uninstall", f"DESTDIR={dest}", f"PREFIX={PREFIX}"],
                       capture_output=True, text=True, env=make_env(), timeout=300, check=False)
    assert r.returncode == 0, r.stderr
    left = sorted(str(x.relative_to(dest)) for x in dest.rglob("*"))
    assert left == ["usr", "usr/local", "usr/local/share", "usr/local/share/man", "usr/local/share/man/man1",
                    "usr/local/share/man/man1/other.1"]


def pins(path: Path) -> dict[str, str]:
    out = {}
    for line in path.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            name, _, version = line.partition("==")
            assert version, f"{path.name}: {line} is not pinned with =="
            out[name.lower()] = version
    return out


def test_runtime_requirements_are_the_same_pins_as_the_tests_use() -> None:
    run, full = pins(ROOT / "requirements-run.txt"), pins(ROOT / "requirements.txt")
    assert run, "requirements-run.txt is empty"
    assert {name: v for name, v in run.items() if full.get(name) != v} == {}
