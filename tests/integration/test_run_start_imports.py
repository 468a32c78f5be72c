"""What `scaf run` loads before the program starts: every module it imports is paid before each program, so a run
whose layer choice is cached and whose daemon already answers loads no code for a dependency walk or for starting
a daemon; and the same command once more is replayed by scaf-run, with no Python at all. `scaf run` as a
subprocess, with Python's own import report (PYTHONPROFILEIMPORTTIME)."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
from pathlib import Path

import pytest
from conftest import SCAF, short_tmpdir

# Loaded only by a dependency walk (a choice not cached), by starting a daemon, or by nothing on this path. Each one
# costs milliseconds before every program (dataclasses alone 12 ms, through inspect).
NOT_ON_THE_PATH = ("dataclasses", "inspect", "subprocess", "tempfile", "scaf.lib.daemon", "elftools", "ctypes.util")

_IMPORTED = re.compile(r"^import time:\s+\d+ \|\s+\d+ \|\s*(\S+)$")


def run_and_report(cmd: list[str], env: dict[str, str]) -> tuple[subprocess.CompletedProcess[str], set[str]]:
    r = subprocess.run([str(SCAF), "run", "--", *cmd], capture_output=True, text=True, timeout=120, check=False,
                       env=dict(env, PYTHONPROFILEIMPORTTIME="1"))
    return r, {m.group(1) for line in r.stderr.splitlines() if (m := _IMPORTED.match(line))}


@pytest.mark.parametrize("cmd", [
    ["true"],
    # Rscript is named as R's engine, which `R RHOME` finds: kept in the same cache.
    pytest.param(["Rscript", "-e", "invisible(1)"],
                 marks=pytest.mark.skipif(not shutil.which("Rscript"), reason="R is not installed (r-base-core)")),
])
def test_a_run_with_its_choice_cached_and_its_daemon_up_loads_no_walk_nor_start_code(cmd: list[str],
                                                                                       tmp_path: Path) -> None:
    runtime = Path(short_tmpdir()) / "rt"
    runtime.mkdir(mode=0o700)
    env = {k: v for k, v in os.environ.items() if not k.startswith("SCAF_") and k != "LD_LIBRARY_PATH"}
    if "SCAF_BUILD" in os.environ:
        env["SCAF_BUILD"] = os.environ["SCAF_BUILD"]
    env.update(XDG_RUNTIME_DIR=str(runtime), XDG_CACHE_HOME=str(tmp_path / "cache"),
               XDG_STATE_HOME=str(tmp_path / "state"))
    first, loaded_first = run_and_report(cmd, env)
    started = re.search(r"started a daemon on \S+ \(pid (\d+)\)", first.stderr)
    try:
        assert first.returncode == 0, first.stderr
        assert started, first.stderr
        # The report is real: the first run walked the program's libraries and started the daemon.
        assert {"scaf.lib.daemon", "subprocess"} <= loaded_first
        # The Python path, as a command that cannot be replayed takes it.
        second, loaded = run_and_report(cmd, dict(env, SCAF_RUN_REPLAY="0"))
        assert second.returncode == 0, second.stderr
        assert "started a daemon" not in second.stderr
        assert "scaf.lib.runenv" in loaded, second.stderr
        extra = sorted(m for m in loaded if m.split(".")[0] in NOT_ON_THE_PATH or m in NOT_ON_THE_PATH)
        assert not extra, f"scaf run loaded {extra} before the program (all it loaded: {sorted(loaded)})"
        # The first run's decision, replayed: Python never starts, so it reports no import.
        third, loaded = run_and_report(cmd, env)
        assert third.returncode == 0, third.stderr
        assert not loaded, f"a replayed scaf run started Python: {sorted(loaded)}"
    finally:
        if started:
            try:
                os.kill(int(started.group(1)), signal.SIGTERM)
            except ProcessLookupError:
                pass
