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


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    for d in _short_dirs:
        shutil.rmtree(d, ignore_errors=True)


class Daemon(daemon.PrivateDaemon):
    """A real scafd process on a private socket, started at once; its allocation log is self.log."""

    def __init__(self, binary: Path, args: list[str], env: dict[str, str] | None = None):
        super().__init__(args, binary=binary, log=True, env=dict(os.environ, **(env or {})), prefix="scaf-t-")
        self.args = args
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
