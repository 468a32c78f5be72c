"""Shared fixtures: paths to the build, and real scafd daemons on private sockets."""

from __future__ import annotations

import os
import shutil
import signal
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "python"))

from scaf.lib import daemon, paths

SCAF = paths.build_dir() / "bin" / "scaf"


def _work_scale() -> float:
    """SCAF_TEST_SCALE: the speed envelope. Every workload size the tests use is multiplied by it (the
    workloads read WL_SCALE; the tests' own programs take counts through scaled()), so 0.25 runs the
    suite as a machine 4 times faster would and 4 as one 4 times slower. Tests make the conditions they
    judge, so the suite must pass anywhere in that envelope (docs/testing.md)."""
    raw = os.environ.get("SCAF_TEST_SCALE", "").strip()
    if not raw:
        return 1.0
    try:
        v = float(raw)
    except ValueError:
        v = float("nan")
    if not 1e-3 <= v <= 1e3:
        raise pytest.UsageError(f"SCAF_TEST_SCALE={raw!r}: give a number from 0.001 to 1000 (1: as built)")
    return v


WORK_SCALE = _work_scale()
if WORK_SCALE != 1.0:
    # Inherited by every program the tests start, through any env built from os.environ.
    os.environ["WL_SCALE"] = repr(WORK_SCALE)


def scaled(n: int, minimum: int = 1) -> int:
    """A count of work in a test's own program (iterations, regions), times the suite's work scale."""
    return max(minimum, round(n * WORK_SCALE))


def wl_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """A small environment for a workload run plainly, that still carries the suite's work scale."""
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}
    if "WL_SCALE" in os.environ:
        env["WL_SCALE"] = os.environ["WL_SCALE"]
    env.update(extra or {})
    return env


# For a workload a test ends itself (kill): --until a file that never appears, so that it runs for as
# long as the test needs on any machine, never for as long as its size happens to last.
UNTIL_KILLED = ["--until", "/nonexistent/scaf-test/never-released"]


class Hold:
    """A file whose appearance ends a workload's --until (or --switch, or a test program's --hold):
    the test decides when the program has run long enough, not the machine's speed."""

    def __init__(self, name: str = "release") -> None:
        self.path = Path(short_tmpdir()) / name

    def args(self, option: str = "--until") -> list[str]:
        return [option, str(self.path)]

    def release(self) -> None:
        self.path.touch()


# A count that a test's condition is made of (regions after a fork for its outcome to be collected,
# chances for a hazard to show): a faster machine runs the same count, only sooner, so the suite's
# work scale, which stands in for speed, must not change it.
UNSCALED = ["--scale", "1"]


def pytest_report_header(config: pytest.Config) -> str:
    return f"work scale: {WORK_SCALE:g} (SCAF_TEST_SCALE; workloads read WL_SCALE)"

# A suite started in the background by a non-interactive shell (`make test &`, nohup) inherits
# SIGINT ignored, and exec passes that on to every program the tests start: Ctrl-C tests would
# then test nothing. Python's own handler is reset to the default at exec, as from a terminal.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


_short_dirs: list[str] = []


def short_tmpdir() -> str:
    """A directory short enough for sun_path (pytest's tmp_path can exceed 108 bytes); removed when the
    session ends (module fixtures keep programs running in them until then)."""
    d = daemon.short_tmpdir("scaf-t-")
    _short_dirs.append(d)
    return d


# The daemons the suite starts keep their memory of programs (docs/memory.md) under the suite's own
# state directory, never the user's: a daemon that `scaf run` starts by itself, or a test's own scafd
# without --state-dir, would otherwise learn from one test and apply it in the next, and from the
# user's own runs. The conftest Daemon gives each daemon a directory of its own besides.
os.environ.pop("STATE_DIRECTORY", None)
os.environ["XDG_STATE_HOME"] = short_tmpdir()


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    for d in _short_dirs:
        shutil.rmtree(d, ignore_errors=True)


class Daemon(daemon.PrivateDaemon):
    """A real scafd process on a private socket, started at once; its allocation log is self.log."""

    def __init__(self, binary: Path, args: list[str], env: dict[str, str] | None = None):
        # Idle clients hold nothing (docs/daemon.md, "Idle clients"): the fake clients most tests register run
        # no region and burn no CPU, so they would be idle within a second. Tests of other things keep every
        # client busy with --idle-after 0; the idle tests name their own --idle-after.
        if not any(a.startswith("--idle-after") for a in args):
            args = [*args, "--idle-after", "0"]
        # A memory of its own, PrivateDaemon's (kept across start() after stop(): a restart remembers), unless the
        # test chose: --state-dir or --no-memory, or the defaults' variables to test scafd's own choice.
        super().__init__(args, binary=binary, log=True, env=dict(os.environ, **(env or {})), prefix="scaf-t-",
                         user_memory=bool({"STATE_DIRECTORY", "XDG_STATE_HOME"} & set(env or {})))
        self.args = args
        # Where a test that chose looks for it (test_no_memory: nothing made there).
        self.state_dir = self.state_dir or os.path.join(self.dir or "", "state")
        try:
            self.start()
        except BaseException:
            self.cleanup()
            raise

    def start(self) -> dict:
        try:
            return super().start()
        except daemon.DaemonExited as e:
            raise RuntimeError(f"scafd exited {e.returncode}: {e.stderr}") from None
        except daemon.DaemonTimeout as e:
            raise RuntimeError(f"scafd did not answer: {e.stderr}") from None

    def wait_for(self, pred: Callable[[dict], bool], timeout: float = 10, what: str = "") -> dict:
        """Poll status until pred(status) holds; fail the test with the last status otherwise."""
        deadline = time.monotonic() + timeout
        st: dict = {}
        while time.monotonic() < deadline:
            st = self.status()
            if pred(st):
                return st
            time.sleep(0.05)
        pytest.fail(f"timed out waiting for {what or pred}: last status {st}\nstderr: {self.stderr()}")


@pytest.fixture
def scafd_factory() -> Iterator[Callable[..., Daemon]]:
    """start(*args, binary=None, env=None) -> Daemon; every daemon is killed at teardown."""
    started: list[Daemon] = []

    def start(*args: str, binary: Path | None = None, env: dict[str, str] | None = None) -> Daemon:
        d = Daemon(binary or paths.scafd(), list(args), env)
        started.append(d)
        return d

    yield start
    for d in started:
        d.cleanup()


@pytest.fixture
def scafd(scafd_factory: Callable[..., Daemon]) -> Daemon:
    """One equipartition daemon that believes the machine has 4 contexts, lookout off."""
    return scafd_factory("--policy", "equipartition", "--cpus", "4", "--no-lookout")


def daemon_binaries() -> list[Path]:
    """The plain daemon, plus the ASan+UBSan build when make test provides it."""
    out = [paths.scafd()]
    asan = os.environ.get("SCAF_ASAN_SCAFD")
    if asan and Path(asan).exists():
        out.append(Path(asan))
    return out


def layer_env(socket: str | None, extra: dict[str, str] | None = None) -> dict[str, str]:
    """Environment that preloads the layer (what `scaf run` sets), without the CLI."""
    env = dict(os.environ)
    env["LD_PRELOAD"] = str(paths.layer())
    if socket is None:
        env["SCAF_SOCKET"] = "/nonexistent/scaf-test/none.sock"
    else:
        env["SCAF_SOCKET"] = socket
    env.update(extra or {})
    return env


def parse_result(stdout: str) -> dict[str, str]:
    """The workloads' last line: name=... threads=... time_s=... verified=yes|no."""
    lines = [ln for ln in stdout.strip().splitlines() if ln.strip()]
    assert lines, "workload printed nothing"
    fields = dict(kv.split("=", 1) for kv in lines[-1].split() if "=" in kv)
    assert {"name", "threads", "time_s", "verified"} <= fields.keys(), lines[-1]
    return fields
