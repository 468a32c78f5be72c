"""The scaf command line as a user meets it: help, exit codes, errors, LD_PRELOAD, signals."""

from __future__ import annotations

import contextlib
import os
import select
import shutil
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import SCAF, short_tmpdir
from scaf.lib import paths

COMMANDS = ["daemon", "run", "status", "demo"]


def scaf(*args: str, env: dict[str, str] | None = None, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(SCAF), *args], capture_output=True, text=True, env=env, timeout=timeout,
                          check=False)


@pytest.fixture
def nosock() -> Iterator[str]:
    """An environment's worth of socket where no daemon is: a fresh, empty private directory."""
    d = short_tmpdir()
    yield os.path.join(d, "scafd.sock")
    shutil.rmtree(d, ignore_errors=True)


def env_with(**kw: str) -> dict[str, str]:
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)
    env.update(kw)
    return env


def test_top_level_help_lists_commands() -> None:
    r = scaf("--help")
    assert r.returncode == 0, r.stderr
    for cmd in COMMANDS:
        assert f"\n    {cmd} " in r.stdout
    assert "examples:" in r.stdout
    assert "cannot load" not in r.stdout, r.stdout


def test_version_says_the_version_alone() -> None:
    from scaf import __version__

    r = scaf("--version")
    assert (r.returncode, r.stdout, r.stderr) == (0, f"scaf {__version__}\n", ""), r


def test_no_command_is_usage_error() -> None:
    r = scaf()
    assert r.returncode == 2
    assert "usage: scaf" in r.stderr


@pytest.mark.parametrize("cmd", COMMANDS)
def test_help(cmd: str) -> None:
    r = scaf(cmd, "--help")
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith(f"usage: scaf {cmd}")
    assert "examples:" in r.stdout
    assert r.stderr == ""


def test_daemon_help_lists_scafd_options() -> None:
    r = scaf("daemon", "--help")
    assert r.returncode == 0
    # These come from running `scafd --help`, not from scaf's own text.
    assert "scafd's options" in r.stdout
    for opt in ("--socket", "--policy", "--cpus", "--idle-exit", "--shared"):
        assert opt in r.stdout.split("scafd's options", 1)[1], opt


@pytest.mark.parametrize("cmd", ["run", "status"])
def test_help_documents_exit_status_and_environment(cmd: str) -> None:
    r = scaf(cmd, "--help")
    assert "exit status:" in r.stdout
    assert "SCAF_SOCKET" in r.stdout


# --- scaf status without a daemon -------------------------------------------------------------


def test_status_without_daemon(nosock: str) -> None:
    r = scaf("status", env=env_with(SCAF_SOCKET=nosock))
    assert r.returncode == 1
    assert r.stderr.startswith(f"scaf: no daemon answers on {nosock} (")
    assert r.stdout == ""


def test_status_json_without_daemon(nosock: str) -> None:
    r = scaf("status", "--json", "--socket", nosock)
    assert r.returncode == 1
    assert f"no daemon answers on {nosock}" in r.stderr
    assert r.stdout == ""


def test_status_socket_is_a_directory(nosock: str) -> None:
    d = os.path.dirname(nosock)
    r = scaf("status", "--socket", d)
    assert r.returncode == 1
    assert f"socket path {d} is a directory" in r.stderr
    assert "Traceback" not in r.stderr


def test_status_socket_path_too_long() -> None:
    path = "/tmp/" + "x" * 200 + "/scafd.sock"
    r = scaf("status", env=env_with(SCAF_SOCKET=path))
    assert r.returncode == 1
    assert "too long" in r.stderr and "Traceback" not in r.stderr


def test_status_long_socket_from_the_c_search_order(tmp_path: os.PathLike[str]) -> None:
    """XDG_RUNTIME_DIR, not SCAF_SOCKET, makes the path too long: the C search order gives it whole, and the
    command says what is wrong with it (the same words as for SCAF_SOCKET)."""
    env = env_with(XDG_RUNTIME_DIR="/tmp/" + "y" * 200)
    env.pop("SCAF_SOCKET", None)
    r = scaf("status", env=env)
    assert r.returncode == 1, r.stderr
    assert f"socket path /tmp/{'y' * 200}/scaf/scafd.sock is too long" in r.stderr and "Traceback" not in r.stderr


def test_launch_library_missing_is_said(tmp_path: os.PathLike[str]) -> None:
    """Every command finds its socket and judges the daemon through libscaf_launch.so: without it, one line."""
    r = scaf("status", env=env_with(SCAF_BUILD=str(tmp_path)))
    assert r.returncode == 125, r.stderr
    assert "libscaf_launch.so not found: run make" in r.stderr and "Traceback" not in r.stderr


def test_status_socket_is_a_regular_file(tmp_path: os.PathLike[str]) -> None:
    f = os.path.join(tmp_path, "plain")
    with open(f, "w") as fh:
        fh.write("not a socket\n")
    r = scaf("status", "--socket", f)
    assert r.returncode == 1
    assert "is not a socket" in r.stderr
    with open(f) as fh:
        assert fh.read() == "not a socket\n"  # loses nothing


# --- scaf run: exit statuses, without a daemon (--no-start) --------------------------------------


@pytest.mark.parametrize(
    ("argv", "code"),
    [
        (["true"], 0),
        (["false"], 1),
        (["sh", "-c", "exit 7"], 7),
        (["sh", "-c", "kill -KILL $$"], 128 + signal.SIGKILL),
        (["sh", "-c", "kill -TERM $$"], 128 + signal.SIGTERM),
    ],
)
def test_run_exit_status(nosock: str, argv: list[str], code: int) -> None:
    r = scaf("run", "--no-start", "--", *argv, env=env_with(SCAF_SOCKET=nosock))
    assert r.returncode == code, r.stderr
    assert not os.path.exists(nosock), "--no-start must not start a daemon"


def test_run_command_not_found(nosock: str) -> None:
    r = scaf("run", "--no-start", "--", "scaf-no-such-command-xyz", env=env_with(SCAF_SOCKET=nosock))
    assert r.returncode == 127
    assert r.stderr == "scaf: scaf-no-such-command-xyz: command not found\n"


def test_run_missing_path_is_127(nosock: str) -> None:
    r = scaf("run", "--no-start", "--", "/nonexistent/prog", env=env_with(SCAF_SOCKET=nosock))
    assert r.returncode == 127
    assert "/nonexistent/prog" in r.stderr


def test_run_not_executable_is_126(nosock: str, tmp_path: os.PathLike[str]) -> None:
    f = os.path.join(tmp_path, "script.sh")
    with open(f, "w") as fh:
        fh.write("#!/bin/sh\necho hi\n")
    os.chmod(f, 0o644)
    r = scaf("run", "--no-start", "--", f, env=env_with(SCAF_SOCKET=nosock))
    assert r.returncode == 126
    assert "Permission denied" in r.stderr


def test_run_command_not_found_starts_no_daemon(nosock: str) -> None:
    r = scaf("run", "--", "scaf-no-such-command-xyz", env=env_with(SCAF_SOCKET=nosock))
    assert r.returncode == 127
    assert "started a daemon" not in r.stderr
    assert not os.path.exists(nosock)


@pytest.mark.parametrize("argv", [[], ["--"], ["--no-start"], ["--socket", "/tmp/x.sock", "--"]])
def test_run_without_command_is_usage_error(argv: list[str]) -> None:
    r = scaf("run", *argv)
    assert r.returncode == 2
    assert "usage: scaf run" in r.stderr and "no command" in r.stderr


def test_run_unknown_option_is_usage_error() -> None:
    r = scaf("run", "--bogus", "--", "true")
    assert r.returncode == 2


@pytest.mark.parametrize("path", [
    ["run"], ["status"], ["bench"], ["bench", "pairs"], ["bench", "solo"], ["bench", "report", "/tmp"],
    ["bench", "overhead"], ["doctor"], ["demo"], ["trace"], ["check"], ["forget"], ["rules"], ["plot"],
    ["plot", "trace", "x.trace"], ["sim"], ["sim", "run", "x.toml"], ["allocate", "--cpus", "2", "1:1"],
], ids=lambda p: " ".join(p))
def test_unknown_option_prints_the_subcommands_usage(path: list[str]) -> None:
    r = scaf(*path, "--bogus")
    assert r.returncode == 2, r.stdout + r.stderr
    words = [w for w in path if not w.startswith(("-", "/")) and "." not in w and ":" not in w and not w.isdigit()]
    assert r.stderr.startswith(f"usage: scaf {' '.join(words)} "), r.stderr
    assert f"scaf {' '.join(words)}: error: unrecognized arguments: --bogus" in r.stderr
    assert r.stdout == ""


def test_run_passes_arguments_and_stdio_untouched(nosock: str) -> None:
    r = subprocess.run([str(SCAF), "run", "--no-start", "--", "sh", "-c", 'printf "%s|" "$@"; cat', "sh",
                        "a b", "--help", "", "-x"],
                       input="from stdin\n", capture_output=True, text=True, env=env_with(SCAF_SOCKET=nosock),
                       timeout=30, check=False)
    assert r.returncode == 0, r.stderr
    assert r.stdout == "a b|--help||-x|from stdin\n"
    assert r.stderr == ""


# --- scaf run: the environment it gives the program ------------------------------------------------


def test_run_appends_to_ld_preload(nosock: str) -> None:
    pre = "/lib/x86_64-linux-gnu/libm.so.6" if os.path.exists("/lib/x86_64-linux-gnu/libm.so.6") else ""
    if not pre:
        pre = subprocess.run(["sh", "-c", "ldconfig -p | awk '/libm.so.6 / {print $NF; exit}'"],
                             capture_output=True, text=True, check=True).stdout.strip()
    assert pre, "need a real library to preload"
    r = scaf("run", "--no-start", "--", "sh", "-c", 'echo "$LD_PRELOAD"; echo "$SCAF_SOCKET"',
             env=env_with(SCAF_SOCKET=nosock, LD_PRELOAD=pre))
    assert r.returncode == 0, r.stderr
    preload, sock = r.stdout.splitlines()
    assert preload.replace(":", " ").split() == [pre, str(paths.layer())]
    assert sock == nosock


def test_run_sets_ld_preload_when_none(nosock: str) -> None:
    r = scaf("run", "--no-start", "--", "sh", "-c", 'echo "$LD_PRELOAD"', env=env_with(SCAF_SOCKET=nosock))
    assert r.stdout.strip() == str(paths.layer())


def test_run_does_not_preload_the_layer_twice(nosock: str) -> None:
    layer = str(paths.layer())
    r = scaf("run", "--no-start", "--", "sh", "-c", 'echo "$LD_PRELOAD"',
             env=env_with(SCAF_SOCKET=nosock, LD_PRELOAD=layer))
    assert r.stdout.strip().replace(":", " ").split() == [layer]


@pytest.mark.parametrize("user", [None, "/nowhere/a:/nowhere/b"])
def test_run_leaves_pythonpath_as_the_user_had_it(nosock: str, tmp_path: os.PathLike[str], user: str | None) -> None:
    """scaf's own package path must not reach the program: a Python program would import from it. Run from
    a folder holding a module named like one scaf imports, which must not shadow it either."""
    with open(os.path.join(tmp_path, "argparse.py"), "w") as f:
        f.write("raise SystemExit('the current folder shadowed argparse')\n")
    env = env_with(SCAF_SOCKET=nosock)
    env.pop("PYTHONPATH", None)
    if user is not None:
        env["PYTHONPATH"] = user
    r = subprocess.run([str(SCAF), "run", "--no-start", "--", "sh", "-c", 'echo "${PYTHONPATH-unset}"'],
                       capture_output=True, text=True, env=env, cwd=tmp_path, timeout=30, check=False)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == (user or "unset")


def test_run_socket_option_wins_over_environment(nosock: str) -> None:
    other = nosock + ".other"
    r = scaf("run", "--no-start", "--socket", other, "--", "sh", "-c", 'echo "$SCAF_SOCKET"',
             env=env_with(SCAF_SOCKET=nosock))
    assert r.stdout.strip() == other


def test_run_missing_layer_says_run_make(nosock: str) -> None:
    empty = short_tmpdir()
    try:
        r = scaf("run", "--no-start", "--", "true", env=env_with(SCAF_SOCKET=nosock, SCAF_BUILD=empty))
    finally:
        shutil.rmtree(empty)
    assert r.returncode == 125
    assert "libscaf_gomp.so" in r.stderr and "run make" in r.stderr


def test_run_unusable_socket_fails_clearly(nosock: str) -> None:
    d = os.path.dirname(nosock)
    r = scaf("run", "--", "true", env=env_with(SCAF_SOCKET=d))
    assert r.returncode == 125
    assert f"socket path {d} is a directory" in r.stderr and "--no-start" in r.stderr


# --- scaf run: signals ----------------------------------------------------------------------------

TRAP = """
import signal, sys, time
signal.signal(signal.{sig}, lambda *a: sys.exit({code}))
print("ready", flush=True)
time.sleep(60)
sys.exit(99)
"""


@pytest.mark.parametrize(("sig", "code"), [("SIGTERM", 3), ("SIGINT", 4), ("SIGHUP", 5), ("SIGUSR1", 6),
                                           ("SIGUSR2", 8), ("SIGQUIT", 9)])
def test_run_forwards_signals(nosock: str, sig: str, code: int) -> None:
    p = subprocess.Popen([str(SCAF), "run", "--no-start", "--", "python3", "-c", TRAP.format(sig=sig, code=code)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         env=env_with(SCAF_SOCKET=nosock))
    try:
        assert p.stdout is not None
        assert p.stdout.readline() == "ready\n"
        p.send_signal(getattr(signal, sig))
        assert p.wait(timeout=20) == code, p.stderr.read() if p.stderr else ""
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()


def test_run_program_killed_by_forwarded_signal(nosock: str) -> None:
    p = subprocess.Popen([str(SCAF), "run", "--no-start", "--", "sh", "-c", "echo ready; exec sleep 60"],
                         stdout=subprocess.PIPE, text=True, env=env_with(SCAF_SOCKET=nosock))
    try:
        assert p.stdout is not None
        assert p.stdout.readline() == "ready\n"
        p.send_signal(signal.SIGTERM)
        assert p.wait(timeout=20) == 128 + signal.SIGTERM
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()


def test_run_killed_with_sigkill_takes_the_program_with_it(nosock: str) -> None:
    """A harness's kill() passes nothing on: the program goes too, as if `scaf run` had exec'd it. The
    program holds the stdout pipe: its end of file says it is gone (the deadline only turns a failure into
    one instead of a hang)."""
    p = subprocess.Popen([str(SCAF), "run", "--no-start", "--", "sh", "-c", "echo $$; exec sleep 600"],
                         stdout=subprocess.PIPE, text=True, env=env_with(SCAF_SOCKET=nosock))
    pid = 0
    try:
        assert p.stdout is not None
        pid = int(p.stdout.readline())
        p.kill()
        assert p.wait(timeout=20) == -signal.SIGKILL
        ready, _, _ = select.select([p.stdout], [], [], 60)
        assert ready and p.stdout.read() == "", f"the program (pid {pid}) outlived scaf run"
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        if pid:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


# Bits of /proc/PID/status's SigBlk and SigIgn masks.
def _bit(sig: int) -> int:
    return 1 << (sig - 1)


def _masks(status: str) -> dict[str, int]:
    return {k: int(v, 16) for k, v in (line.split(":\t") for line in status.splitlines())}


@pytest.mark.parametrize("replay", ["0", "1"])
def test_run_program_starts_with_the_callers_signals(nosock: str, replay: str) -> None:
    """The program starts with the mask `scaf run` was started with, not the one it waits with; SIGPIPE and SIGXFSZ,
    which Python ignores, at their default; what was ignored before scaf started, still ignored (as with exec). The
    mask crosses from Python to the C supervisor as bits: SIGTTIN and SIGRTMIN+3 check both ends of the range."""
    def blocked_and_ignoring() -> None:
        signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGTTIN, signal.SIGRTMIN + 3])
        signal.signal(signal.SIGWINCH, signal.SIG_IGN)

    cmd = [str(SCAF), "run", "--no-start", "--", "grep", "-E", "^Sig(Blk|Ign)", "/proc/self/status"]
    for _ in range(1 if replay == "0" else 2):  # the second run is scaf-run's replay
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=60, check=False,
                           env=env_with(SCAF_SOCKET=nosock, SCAF_RUN_REPLAY=replay), preexec_fn=blocked_and_ignoring)
        assert r.returncode == 0, r.stderr
        m = _masks(r.stdout)
        assert m["SigBlk"] == _bit(signal.SIGTTIN) | _bit(signal.SIGRTMIN + 3), r.stdout
        assert m["SigIgn"] & _bit(signal.SIGWINCH), r.stdout
        assert not m["SigIgn"] & (_bit(signal.SIGPIPE) | _bit(signal.SIGXFSZ)), r.stdout


def test_run_missing_launch_library_says_run_make(nosock: str) -> None:
    """Asking the daemon and supervising the program are libscaf_launch.so's C code: a build without it is told so
    before anything starts."""
    build = Path(short_tmpdir())
    try:
        (build / "lib").mkdir()
        for f in (paths.build_dir() / "lib").iterdir():
            if f.name != "libscaf_launch.so":
                (build / "lib" / f.name).symlink_to(f)
        r = scaf("run", "--no-start", "--", "sh", "-c", "echo ran", env=env_with(SCAF_SOCKET=nosock,
                                                                                 SCAF_BUILD=str(build),
                                                                                 SCAF_RUN_REPLAY="0"))
    finally:
        shutil.rmtree(build)
    assert r.returncode == 125, r.stderr
    assert "libscaf_launch.so is missing; run make" in r.stderr and r.stdout == "", r.stderr
