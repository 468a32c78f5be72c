"""The shipped systemd units: systemd's own verifier accepts them, and they say what the deployment guide promises."""

from __future__ import annotations

import configparser
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import ROOT, short_tmpdir
from scaf.lib import paths

UNITS = ROOT / "dist" / "systemd"
ANALYZE = shutil.which("systemd-analyze")
needs_analyze = pytest.mark.skipif(ANALYZE is None, reason="systemd-analyze (Debian's systemd package) is not installed")


def render(kind: str, dest: Path) -> list[Path]:
    """The unit templates with ExecStart pointing at the built scafd (what make install substitutes)."""
    out = []
    for src in sorted((UNITS / kind).glob("*.in")):
        unit = dest / src.name.removesuffix(".in")
        unit.write_text(src.read_text().replace("@SBINDIR@", str(paths.scafd().parent)))
        out.append(unit)
    return out


def analyze(*args: str, user: bool = False, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    if user:
        # The user manager's paths (%t) need a runtime directory even to verify.
        env["XDG_RUNTIME_DIR"] = str(cwd)
    cmd = [str(ANALYZE), *(["--user"] if user else []), *args, "--man=no"]
    return subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=cwd, timeout=60, check=False)


@pytest.fixture
def tdir() -> Path:
    d = Path(short_tmpdir())
    os.chmod(d, 0o700)
    yield d
    shutil.rmtree(d, ignore_errors=True)


@needs_analyze
@pytest.mark.parametrize("kind", ["system", "user"])
def test_units_verify_without_a_word(kind: str, tdir: Path) -> None:
    units = render(kind, tdir)
    assert {u.name for u in units} == {"scafd.service", "scafd.socket"}
    r = analyze("verify", *(f"./{u.name}" for u in units), user=kind == "user", cwd=tdir)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "" and r.stderr.strip() == "", r.stdout + r.stderr


@needs_analyze
def test_verify_would_report_a_mistake(tdir: Path) -> None:
    # The check above can fail: systemd-analyze names a misspelt option (it exits 0 for those).
    unit = render("system", tdir)[0]
    text = unit.read_text().replace("ProtectSystem=strict", "ProtectSystm=strict")
    (tdir / "scafd.service").write_text(text)
    r = analyze("verify", "./scafd.service", "./scafd.socket", cwd=tdir)
    assert "Unknown key 'ProtectSystm'" in r.stderr


@needs_analyze
def test_system_service_is_sandboxed(tdir: Path) -> None:
    render("system", tdir)
    # systemd's own exposure score, 0 (locked down) to 10 (unsandboxed), times ten: at most 2.0.
    r = analyze("security", "--offline=true", "--threshold=20", "./scafd.service", cwd=tdir)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr


def units(kind: str) -> dict[str, configparser.ConfigParser]:
    out = {}
    for src in (UNITS / kind).glob("*.in"):
        cp = configparser.ConfigParser(strict=False, interpolation=None, comment_prefixes=("#", ";"))
        cp.optionxform = str  # type: ignore[assignment,method-assign]
        cp.read_string(src.read_text())
        out[src.name.removesuffix(".in")] = cp
    return out


def test_system_units_are_the_documented_shared_daemon() -> None:
    u = units("system")
    sock, svc = u["scafd.socket"]["Socket"], u["scafd.service"]["Service"]
    assert sock["ListenStream"] == "/run/scaf/scafd.sock"
    assert sock["SocketMode"] == "0666"
    assert svc["ExecStart"].split() == ["@SBINDIR@/scafd", "--shared"]
    assert svc["User"] == "scaf" and svc["DynamicUser"] == "yes"
    for key in ("NoNewPrivileges", "ProtectHome", "PrivateTmp"):
        assert svc[key] == "yes", key
    assert svc["ProtectSystem"] == "strict"
    assert svc["RestrictAddressFamilies"] == "AF_UNIX"
    # The memory (docs/memory.md) in a directory systemd makes and hands over as $STATE_DIRECTORY.
    assert svc["StateDirectory"] == "scaf" and svc["StateDirectoryMode"] == "0700"
    deploy = (ROOT / "docs" / "deploy.md").read_text()
    assert "/run/scaf/scafd.sock" in deploy and "User=scaf" in deploy


def test_user_units_listen_where_scaf_run_looks_first() -> None:
    u = units("user")
    assert u["scafd.socket"]["Socket"]["ListenStream"] == "%t/scaf/scafd.sock"
    assert u["scafd.socket"]["Socket"]["SocketMode"] == "0600"
    # %t is $XDG_RUNTIME_DIR: the first default in the socket search order.
    xdg = "/run/user/4242"
    env = {k: v for k, v in os.environ.items() if k != "SCAF_SOCKET"}
    r = subprocess.run([str(paths.build_dir() / "venv" / "bin" / "python"), "-c",
                        "from scaf.lib import sockpath; print(sockpath.default_socket())"],
                       capture_output=True, text=True, env=dict(env, XDG_RUNTIME_DIR=xdg,
                                                                PYTHONPATH=str(ROOT / "python")), check=True)
    assert r.stdout.strip() == f"{xdg}/scaf/scafd.sock"
    assert u["scafd.service"]["Service"]["ExecStart"] == "@SBINDIR@/scafd"
