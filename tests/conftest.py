"""Shared fixtures: paths to the build, and real scafd daemons on private sockets."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "python"))

from scaf.lib import paths, proto

SCAF = paths.build_dir() / "bin" / "scaf"


def short_tmpdir() -> str:
    """A directory short enough for sun_path (pytest's tmp_path can exceed 108 bytes)."""
    return tempfile.mkdtemp(prefix="scaf-t-", dir="/tmp")


class Daemon:
    """A real scafd process on a private socket."""

    def __init__(self, binary: Path, args: list[str], env: dict[str, str] | None = None):
        self.dir = short_tmpdir()
        self.socket = os.path.join(self.dir, "scafd.sock")
        self.log = os.path.join(self.dir, "alloc.jsonl")
        self.stderr_path = os.path.join(self.dir, "scafd.stderr")
        self.args = args
        self.binary = binary
        self.env = dict(os.environ, **(env or {}))
        self.proc: subprocess.Popen[bytes] | None = None
        self.start()

    def start(self) -> None:
        cmd = [str(self.binary), "--socket", self.socket, "--log", self.log, *self.args]
        self._stderr = open(self.stderr_path, "ab")  # noqa: SIM115 -- lives as long as the daemon
        self.proc = subprocess.Popen(cmd, stdout=self._stderr, stderr=self._stderr, env=self.env)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"scafd exited {self.proc.returncode}: {self.stderr()}")
            try:
                proto.status(self.socket, timeout=1)
                return
            except proto.DaemonUnavailable:
                time.sleep(0.02)
        raise RuntimeError(f"scafd did not answer: {self.stderr()}")

    def stderr(self) -> str:
        with open(self.stderr_path, "rb") as f:
            return f.read().decode(errors="replace")

    def status(self) -> dict:
        return proto.status(self.socket)

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

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self, sig: int = signal.SIGTERM) -> int:
        assert self.proc is not None
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._stderr.close()
        return self.proc.returncode

    def cleanup(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


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
