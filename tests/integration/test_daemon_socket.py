"""scafd's command line and socket: --help, bad options, default path, stale socket, second daemon, unusable paths."""

from __future__ import annotations

import os
import re
import signal
import socket
import stat
import subprocess
import time
from collections.abc import Callable, Iterator

import pytest
from conftest import ROOT, Daemon, daemon_binaries, short_tmpdir
from scaf.lib import paths
from support import wire

SCAFD = str(paths.scafd())


def run(*args: str, env: dict[str, str] | None = None, timeout: float = 10) -> subprocess.CompletedProcess[str]:
    return subprocess.run([SCAFD, *args], capture_output=True, text=True, timeout=timeout, env=env, check=False)


@pytest.fixture
def tmpdir_short() -> Iterator[str]:
    d = short_tmpdir()
    yield d
    subprocess.run(["rm", "-rf", d], check=False)


def wait_serving(sock: str, proc: subprocess.Popen[bytes]) -> dict:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        assert proc.poll() is None, f"scafd exited {proc.returncode}"
        try:
            return wire.status(sock, timeout=1)
        except wire.DaemonUnavailable:
            time.sleep(0.02)
    pytest.fail(f"no daemon on {sock}")


def test_help_is_a_manual() -> None:
    r = run("--help")
    assert r.returncode == 0 and r.stderr == ""
    for section in ("NAME", "SYNOPSIS", "DESCRIPTION", "OPTIONS", "SIGNALS", "EXIT STATUS", "EXAMPLES"):
        assert f"\n{section}\n" in "\n" + r.stdout, section
    for opt in ("--socket", "--policy", "--cpus", "--rate", "-t", "--log", "--idle-exit", "--max-clients",
                "--chunk", "--no-lookout", "--shared", "--verbose", "--version", "SIGUSR1", "equipartition"):
        assert opt in r.stdout, opt
    assert run("-h").stdout == r.stdout


def option_rows() -> list[dict[str, str]]:
    """The rows of scafd's options table (src/daemon/options.c), each field as its source writes it."""
    text = (ROOT / "src" / "daemon" / "options.c").read_text()
    table = text[text.index("static const struct opt_row rows[] = {"):]
    table = table[:table.index("\n};\n")]
    # The file's own macros stand for their values (SCAFD_RATE_MIN, SCAFD_POLICY_DEFAULT, ...).
    macros = dict(re.findall(r"^#define (\w+) (\S+)$", text, re.MULTILINE))
    rows = []
    for entry in re.split(r"\n    \{(?=\.name)", table)[1:]:
        row = {}
        for key, value in re.findall(r"\.(\w+) = ((?:\"(?:[^\"\\]|\\.)*\"\s*)+|[^,}]+)", entry):
            value = macros.get(value.strip(), value.strip())
            row[key] = re.sub(r'"\s*"', "", value).strip('"') if value.startswith('"') else value
        rows.append(row)
    return rows


def number(literal: str) -> str:
    """A C number literal as --help writes it (%g, without the exponent's sign and leading zero)."""
    return re.sub(r"e\+0?", "e", f"{float(literal):g}")


def test_help_has_every_row_of_the_options_table() -> None:
    """--help is written from the table that parses the options: each row, its argument, range and default."""
    rows = option_rows()
    assert len(rows) >= 20 and {"socket", "policy", "memory-programs", "help"} <= {r["name"] for r in rows}
    out = run("--help").stdout
    options = out[out.index("\nOPTIONS\n"):out.index("\nSIGNALS\n")]
    prose = " ".join(options.split())
    synopsis = " ".join(out[out.index("SYNOPSIS\n"):out.index("\nDESCRIPTION\n")].split())
    labels = re.findall(r"^    (-\S.*?)(?:  |$)", options, re.MULTILINE)
    assert len(labels) == len(rows), labels
    for r in rows:
        short = f"-{r['shortname'][1]}, " if "shortname" in r else ""
        label = f"{short}--{r['name']}" + (f" {r['arg']}" if "arg" in r else "")
        assert label in labels, label
        assert (f"[-{r['shortname'][1]}" if "shortname" in r else f"[--{r['name']}") in synopsis, r["name"]
        assert " ".join(r["help"].split()) in prose, r["name"]
        if "def" not in r and "deftext" in r:
            assert f"Default: {r['deftext']}." in prose, r["name"]
        if all(re.fullmatch(r"[0-9.e]+", r.get(b, "x")) for b in ("lo", "hi")) and r["kind"] in ("OPT_U32", "OPT_SECS"):
            assert f" {number(r['lo'])} to {number(r['hi'])}" in prose, r["name"]
        if re.fullmatch(r"[0-9.e]+", r.get("def", "x")):
            assert f"Default: {number(r['def'])}{r.get('deftext', '')}." in prose, r["name"]
        # The parser knows each row by the same name, and wants a value exactly where --help names one.
        if "arg" in r:
            bad = run(f"--{r['name']}")
            assert bad.returncode == 2 and f"option --{r['name']} needs a value" in bad.stderr, (r["name"], bad.stderr)


def test_version() -> None:
    r = run("--version")
    assert r.returncode == 0 and f"protocol {wire.VERSION}" in r.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--cpus", "0"], "invalid --cpus '0'"),
        (["--cpus", "abc"], "invalid --cpus 'abc'"),
        (["--cpus", "-3"], "invalid --cpus"),
        (["--cpus", "99999"], "invalid --cpus"),
        (["--rate", "0"], "invalid --rate"),
        (["--rate", "nan"], "invalid --rate"),
        (["--rate", "1e-20"], "invalid --rate '1e-20': expected a number from 0.01 to 1000"),
        (["--rate", "1001"], "invalid --rate"),
        (["-t", "1e-10"], "invalid -t '1e-10'"),
        (["-t", "0"], "invalid -t"),
        (["--gang-quantum", "0.5"], "invalid --gang-quantum"),
        (["--idle-exit", "1e-12"], "invalid --idle-exit"),
        (["--socket", ""], "--socket needs a path, not an empty string"),
        (["-t", "-1"], "invalid -t"),
        (["--idle-exit", "x"], "invalid --idle-exit"),
        (["--max-clients", "0"], "invalid --max-clients"),
        (["--max-clients", "100000"], "invalid --max-clients"),
        (["--chunk", "0"], "invalid --chunk"),
        (["--bogus"], "unknown option --bogus"),
        (["--cpus"], "needs a value"),
        (["stray"], "unexpected argument 'stray'"),
        (["--policy", "nope"], "unknown policy 'nope' (known: "),
        (["--min-gain", "0"], "invalid --min-gain '0': expected a number from 0.001 to 1"),
        (["--min-gain", "1.5"], "invalid --min-gain"),
        (["--min-gain", "nan"], "invalid --min-gain"),
        (["--policy", "consumption", "--min-gain", "x"], "invalid --min-gain 'x'"),
    ],
)
def test_bad_command_line_exits_2(args: list[str], message: str, tmpdir_short: str) -> None:
    r = run("--socket", os.path.join(tmpdir_short, "s.sock"), *args)
    assert r.returncode == 2, r.stderr
    assert message in r.stderr
    assert not os.path.exists(os.path.join(tmpdir_short, "s.sock")), "nothing was started"


def test_consumption_min_gain_accepted(scafd_factory: Callable[..., Daemon]) -> None:
    d = scafd_factory("--no-lookout", "--policy", "consumption", "--min-gain", "0.3")
    assert d.status()["policy"] == "consumption"
    assert "--min-gain G" in run("--help").stdout


def test_unknown_policy_lists_known_ones() -> None:
    r = run("--policy", "speedupp")
    assert r.returncode == 2
    assert "equipartition" in r.stderr.split("known:")[1]


def test_default_path_per_user_directory(tmpdir_short: str) -> None:
    """No --socket, no SCAF_SOCKET: $XDG_RUNTIME_DIR/scaf/scafd.sock, in a private directory."""
    env = {k: v for k, v in os.environ.items() if k != "SCAF_SOCKET"}
    env["XDG_RUNTIME_DIR"] = tmpdir_short
    sock = os.path.join(tmpdir_short, "scaf", "scafd.sock")
    proc = subprocess.Popen([SCAFD, "--no-lookout"], env=env, stderr=subprocess.PIPE)
    try:
        wait_serving(sock, proc)
        assert stat.S_IMODE(os.stat(os.path.dirname(sock)).st_mode) == 0o700
        assert stat.S_IMODE(os.stat(sock).st_mode) == 0o600
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=10) == 0
    assert not os.path.exists(sock)


def test_shared_socket_mode(scafd_factory: Callable[..., Daemon]) -> None:
    d = scafd_factory("--no-lookout", "--shared")
    assert stat.S_IMODE(os.stat(d.socket).st_mode) == 0o666


@pytest.mark.parametrize("binary", daemon_binaries(), ids=lambda b: b.parent.parent.name)
def test_stale_socket_is_replaced(binary: os.PathLike[str], tmpdir_short: str) -> None:
    sock = os.path.join(tmpdir_short, "s.sock")
    dead = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    dead.bind(sock)  # a socket file nobody listens on: what a SIGKILL'd daemon leaves
    dead.close()
    assert stat.S_ISSOCK(os.lstat(sock).st_mode)
    proc = subprocess.Popen([str(binary), "--socket", sock, "--no-lookout", "-v"], stderr=subprocess.PIPE, text=True)
    try:
        wait_serving(sock, proc)
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=10) == 0
        assert proc.stderr is not None
        err = proc.stderr.read()
        proc.stderr.close()
    assert "stale socket" in err


def test_after_sigkill_a_new_daemon_takes_over(scafd_factory: Callable[..., Daemon]) -> None:
    d = scafd_factory("--no-lookout")
    d.stop(signal.SIGKILL)
    assert os.path.exists(d.socket), "a killed daemon cannot clean up"
    d.start()  # same socket path: the stale file is recovered
    assert d.status()["clients"] == []


def test_second_daemon_on_same_socket_refused(scafd: Daemon) -> None:
    r = run("--socket", scafd.socket, "--no-lookout")
    assert r.returncode == 1
    assert "another scafd" in r.stderr and scafd.socket in r.stderr
    assert scafd.alive()
    assert scafd.status()["daemon_pid"] == scafd.proc.pid, "the first daemon still owns the socket"


@pytest.mark.parametrize(
    "where",
    ["missing-grandparent", "parent-is-file", "too-long"],
)
def test_unusable_socket_path_exits_1(where: str, tmpdir_short: str) -> None:
    if where == "missing-grandparent":
        path = os.path.join(tmpdir_short, "no", "such", "s.sock")
    elif where == "parent-is-file":
        f = os.path.join(tmpdir_short, "file")
        open(f, "w").close()
        path = os.path.join(f, "s.sock")
    elif where == "too-long":
        path = os.path.join(tmpdir_short, "x" * 200 + ".sock")
    r = run("--socket", path, "--no-lookout")
    assert r.returncode == 1, r.stderr
    assert r.stderr.startswith("scafd: ") and len(r.stderr.splitlines()) == 1, r.stderr
    assert path in r.stderr


def test_regular_file_at_socket_path_is_kept(tmpdir_short: str) -> None:
    """Bad input loses nothing: a file that is not a socket is never deleted."""
    path = os.path.join(tmpdir_short, "s.sock")
    with open(path, "w") as f:
        f.write("precious")
    r = run("--socket", path, "--no-lookout")
    assert r.returncode == 1 and "not a socket" in r.stderr
    with open(path) as f:
        assert f.read() == "precious"


def test_unwritable_log_exits_1(tmpdir_short: str) -> None:
    r = run("--socket", os.path.join(tmpdir_short, "s.sock"), "--log", os.path.join(tmpdir_short, "no", "x.log"))
    assert r.returncode == 1 and "cannot open log file" in r.stderr
    assert not os.path.exists(os.path.join(tmpdir_short, "s.sock"))


def test_policy_option(scafd_factory: Callable[..., Daemon]) -> None:
    assert scafd_factory("--policy", "equipartition", "--no-lookout").status()["policy"] == "equipartition"


def test_cpus_override_and_rate(scafd_factory: Callable[..., Daemon]) -> None:
    st = scafd_factory("--cpus", "7", "--rate", "10", "--chunk", "2", "--no-lookout").status()
    assert st["cpus"] == 7 and st["available"] == 7 and st["rate_hz"] == 10 and st["chunk"] == 2


def test_capacity_without_override(scafd_factory: Callable[..., Daemon]) -> None:
    st = scafd_factory("--no-lookout").status()
    assert 1 <= st["cpus"] <= len(os.sched_getaffinity(0))
