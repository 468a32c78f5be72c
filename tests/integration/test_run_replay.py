"""scaf-run, which starts a command exactly as the last identical `scaf run` decided without starting Python, and
hands it to Python whenever anything that decision rested on has changed (docs/python.md, "Replays"). Real
`scaf run`s and scaf-run as subprocesses, a real per-user daemon, and a scripted one for the start team.

A replay is told from a run through Python by giving scaf-run a Python that does not exist: the run replays
when the program runs, and falls back when scaf-run says it cannot run that Python (status 125).
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import SCAF, short_tmpdir
from scaf.lib import paths, proto, replay
from support.memoryd import Answer, Memoryd
from test_cli_memory import FIXED_REMEMBERED, SH, needs_two, sh_key

SCAF_RUN = paths.lib_dir() / "scaf-run"
NO_PYTHON = "/nonexistent/scaf-test/python"
FELL_BACK = f"scaf: cannot run {NO_PYTHON}"
# The program's environment as it started (its /proc environ), one entry a line.
ENVIRON = ["sh", "-c", "tr '\\0' '\\n' < /proc/$$/environ"]


class User:
    """A user of their own: cache, runtime and state folders, no rules, no scaf settings; their daemon (the
    first `scaf run` starts it) is stopped at the end."""

    def __init__(self, tmp: Path) -> None:
        runtime = Path(short_tmpdir()) / "rt"
        runtime.mkdir(mode=0o700)
        self.cache = tmp / "cache"
        self.env = {k: v for k, v in os.environ.items()
                    if not k.startswith("SCAF_") and k not in ("OMP_NUM_THREADS", "LD_PRELOAD", "LD_LIBRARY_PATH")}
        if "SCAF_BUILD" in os.environ:
            self.env["SCAF_BUILD"] = os.environ["SCAF_BUILD"]
        self.env.update(XDG_RUNTIME_DIR=str(runtime), XDG_CACHE_HOME=str(self.cache),
                        XDG_STATE_HOME=str(tmp / "state"), SCAF_RULES="")
        self.daemons: list[int] = []

    def scaf(self, *args: str, env: dict[str, str] | None = None, cwd: Path | None = None,
             **kw) -> subprocess.CompletedProcess[str]:
        """`scaf run ARGS` as a user types it."""
        r = subprocess.run([str(SCAF), "run", *args], capture_output=True, text=True, timeout=120, check=False,
                           env=env or self.env, cwd=cwd, **kw)
        self.daemons += [int(p) for p in re.findall(r"started a daemon on \S+ \(pid (\d+)\)", r.stderr)]
        return r

    def replay(self, *args: str, env: dict[str, str] | None = None, cwd: Path | None = None,
               binary: Path = SCAF_RUN, **kw) -> subprocess.CompletedProcess[str]:
        """The same through scaf-run (BINARY) with no Python to fall back on."""
        return subprocess.run([str(binary), NO_PYTHON, "", "run", *args], capture_output=True, text=True,
                              timeout=120, check=False, env=env or self.env, cwd=cwd, **kw)

    def records(self) -> list[Path]:
        d = self.cache / "scaf" / replay.FOLDER
        return sorted(d.iterdir()) if d.is_dir() else []

    def stop(self) -> None:
        for pid in self.daemons:
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                pass


@pytest.fixture
def user(tmp_path: Path) -> Iterator[User]:
    u = User(tmp_path)
    yield u
    u.stop()


def entries(out: str) -> set[str]:
    return set(out.splitlines())


def replayed(r: subprocess.CompletedProcess[str]) -> bool:
    return FELL_BACK not in r.stderr


@pytest.mark.parametrize(("case", "flags", "extra"), [
    ("plain", [], {}),
    ("--fixed", ["--fixed"], {}),
    ("--malleable", ["--malleable"], {}),
    ("--no-memory", ["--no-memory"], {}),
    ("--layer omp", ["--layer", "omp"], {}),
    ("the user's counts", [], {"OMP_NUM_THREADS": "1", "GOMP_SPINCOUNT": "300"}),
    ("an LD_PRELOAD of the user's", [], {"LD_PRELOAD": str(paths.launch_lib())}),
    # A Python program: the process pools' counts are scaf's too (docs/cli.md, "Process pools").
    ("a Python program", [], {"PYTHON": sys.executable}),
])
def test_a_command_run_again_starts_as_the_first_run_started_it(case: str, flags: list[str], extra: dict[str, str],
                                                                 user: User) -> None:
    env = dict(user.env, **extra)
    prog = [sys.executable, "-c", "import os; print('\\n'.join(f'{k}={v}' for k, v in os.environ.items()))"] \
        if "PYTHON" in extra else ENVIRON
    first = user.scaf(*flags, "--", *prog, env=env)
    assert first.returncode == 0, first.stderr
    assert len(user.records()) == 1, "the first run left no record"
    again = user.replay(*flags, "--", *prog, env=env)
    assert again.returncode == 0 and replayed(again), (case, again.stderr)
    assert again.stderr == "", again.stderr
    assert entries(again.stdout) == entries(first.stdout), case
    assert "SCAF_SOCKET=" in first.stdout and ("LD_PRELOAD=" in first.stdout), case


@needs_two
def test_a_replay_asks_the_daemon_for_the_start_team_each_time(tmp_path: Path, user: User) -> None:
    memd = Memoryd(os.path.join(short_tmpdir(), "memd.sock"))
    show = ("e=$(tr '\\0' '\\n' < /proc/$$/environ); g() { printf '%s\\n' \"$e\" | sed -n \"s/^$1=//p\"; }; "
            'echo "OMP=$(g OMP_NUM_THREADS) START=$(g SCAF_START_TEAM) PARENT=$(g SCAF_START_PARENT) PPID=$PPID"')
    args = ["--socket", memd.path, "--no-start", "--", SH, "-c", show]
    try:
        memd.answers[proto.MEMORY_RECALL] = FIXED_REMEMBERED
        first = user.scaf(*args)
        assert first.returncode == 0 and "OMP=1 START=1" in first.stdout, first.stderr
        # Forgotten meanwhile (`scaf forget`): the replay starts it with its own count.
        memd.answers[proto.MEMORY_RECALL] = Answer(proto.MEMORY_UNKNOWN, start_team=1)
        r = user.replay(*args)
        assert r.returncode == 0 and replayed(r), r.stderr
        assert "OMP= START= PARENT=" in r.stdout, r.stdout
        # Remembered again: the start team, and scaf-run (the program's parent) as the one it is for.
        memd.answers[proto.MEMORY_RECALL] = FIXED_REMEMBERED
        r = user.replay(*args)
        assert r.returncode == 0 and replayed(r), r.stderr
        got = dict(kv.split("=", 1) for kv in r.stdout.split())
        assert got["OMP"] == got["START"] == "1" and got["PARENT"] == got["PPID"], r.stdout
        assert [a.op for a in memd.asked] == [proto.MEMORY_RECALL] * 3
        assert {a.key for a in memd.asked} == {sh_key()} and {a.max_threads for a in memd.asked} == {len(
            os.sched_getaffinity(0))}
    finally:
        memd.close()


@needs_two
def test_a_replay_gives_every_runtime_the_share_as_the_first_run_did(user: User) -> None:
    """A share below the CPUs (the daemon's answer: 1): the replay sets each spinning runtime's own variable as
    Python's scaf run did (the one table, include/scaf/startenv.h), and asks again each time: the share of the
    moment."""
    memd = Memoryd(os.path.join(short_tmpdir(), "memd.sock"))
    args = ["--socket", memd.path, "--no-start", "--", *ENVIRON]
    try:
        memd.answers[proto.MEMORY_RECALL] = Answer(proto.MEMORY_UNKNOWN, start_team=1)
        first = user.scaf(*args)
        assert first.returncode == 0, first.stderr
        r = user.replay(*args)
        assert r.returncode == 0 and replayed(r), r.stderr
        assert entries(r.stdout) == entries(first.stdout)
        assert {"ORT_INTRA_OP_NUM_THREADS=1", "SCAF_START_SHARE=1"} <= entries(r.stdout), r.stdout
        # The pools whose threads sleep keep their own count (docs/runtimes.md).
        assert not any(e.startswith(("POLARS_MAX_THREADS=", "GOMAXPROCS=")) for e in entries(r.stdout)), r.stdout
        # Alone now: nothing is set, whatever the record holds.
        memd.answers[proto.MEMORY_RECALL] = Answer(proto.MEMORY_UNKNOWN, start_team=len(os.sched_getaffinity(0)))
        r = user.replay(*args)
        assert r.returncode == 0 and replayed(r), r.stderr
        assert not any(e.startswith(("ORT_INTRA_OP_NUM_THREADS=", "SCAF_START_SHARE=")) for e in entries(r.stdout))
        assert [a.op for a in memd.asked] == [proto.MEMORY_RECALL] * 3
    finally:
        memd.close()


def _mutations() -> list:
    cases = [
        "another argument", "another folder", "a variable changed", "the program changed", "a rules file appeared",
        "SCAF_RUN_REPLAY=0", "the record damaged", "the record writable by others", "the daemon gone",
        "another scaf's scaf-run",
    ]
    if len(os.sched_getaffinity(0)) >= 2:
        cases.append("fewer CPUs")
    return cases


@pytest.mark.parametrize("change", _mutations())
def test_a_change_to_anything_the_decision_rested_on_hands_the_command_to_python(change: str, tmp_path: Path,
                                                                                 user: User) -> None:
    prog = tmp_path / "prog"
    shutil.copy("/bin/true", prog)
    rules = tmp_path / "rules"
    env = dict(user.env, SCAF_RULES=str(rules))
    here = tmp_path / "here"
    here.mkdir()
    args = ["--", str(prog)]
    first = user.scaf(*args, env=env, cwd=here)
    assert first.returncode == 0, first.stderr
    # Nothing changed yet: replayed.
    r = user.replay(*args, env=env, cwd=here)
    assert r.returncode == 0 and replayed(r), r.stderr
    kw: dict = {}
    if change == "another argument":
        args = ["--", str(prog), "x"]
    elif change == "another folder":
        here = tmp_path
    elif change == "a variable changed":
        env["SOMETHING"] = "else"
    elif change == "the program changed":
        shutil.copy("/bin/false", prog)
    elif change == "a rules file appeared":
        rules.write_text(f"fixed {prog}\n")
    elif change == "SCAF_RUN_REPLAY=0":
        env["SCAF_RUN_REPLAY"] = "0"
    elif change == "the record damaged":
        (rec,) = user.records()
        rec.write_bytes(rec.read_bytes()[:-5])
    elif change == "the record writable by others":
        (rec,) = user.records()
        rec.chmod(0o622)
    elif change == "the daemon gone":
        user.stop()
        for pid in user.daemons:
            _wait_gone(pid)
    elif change == "fewer CPUs":
        kw["preexec_fn"] = lambda: os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    other: dict = {}
    if change == "another scaf's scaf-run":
        # An installed scaf beside this build tree: its scaf-run must not preload this build's layers.
        (tmp_path / "other").mkdir()
        other["binary"] = Path(shutil.copy(SCAF_RUN, tmp_path / "other" / "scaf-run"))
    r = user.replay(*args, env=env, cwd=here, **kw, **other)
    assert r.returncode == 125 and FELL_BACK in r.stderr, (change, r.returncode, r.stderr)
    # Python takes it: the same result as ever, and its decision is replayed from then on.
    r = user.scaf(*args, env=env, cwd=here, **kw)
    want = 1 if change == "the program changed" else 0
    assert r.returncode == want, (change, r.stderr)
    r = user.replay(*args, env=env, cwd=here, **kw)
    if change == "SCAF_RUN_REPLAY=0":
        assert FELL_BACK in r.stderr, "SCAF_RUN_REPLAY=0 replayed"
    else:
        assert r.returncode == want and replayed(r), (change, r.stderr)


def _wait_gone(pid: int) -> None:
    import time

    for _ in range(400):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.025)
    pytest.fail(f"daemon {pid} did not stop")


def test_a_replay_passes_signals_and_the_exit_status_on(user: User) -> None:
    for code, script in ((3, "exit 3"), (128 + signal.SIGTERM, "kill -TERM $$")):
        assert user.scaf("--", SH, "-c", script).returncode == code
        r = user.replay("--", SH, "-c", script)
        assert r.returncode == code and replayed(r), r.stderr
    # SIGTERM to scaf run reaches the program: first through Python (which records it), then replayed.
    script = 'trap "exit 7" TERM; echo ready; while :; do sleep 0.05; done'
    for runner in ([str(SCAF), "run"], [str(SCAF_RUN), NO_PYTHON, "", "run"]):
        p = subprocess.Popen([*runner, "--", SH, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True, env=user.env)
        try:
            assert p.stdout is not None and p.stdout.readline() == "ready\n"
            p.send_signal(signal.SIGTERM)
            assert p.wait(timeout=60) == 7
            err = p.stderr.read() if p.stderr else ""
            user.daemons += [int(x) for x in re.findall(r"\(pid (\d+)\)", err)]
            assert FELL_BACK not in err, err
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()


@pytest.mark.parametrize("flags", [["--verbose"], ["--policy", "equipartition"], ["--daemon-arg=--cpus=4"]])
def test_a_run_with_something_to_say_each_time_is_never_replayed(flags: list[str], user: User) -> None:
    first = user.scaf(*flags, "--", "true")
    assert first.returncode == 0, first.stderr
    assert user.records() == []
    r = user.replay(*flags, "--", "true")
    assert r.returncode == 125 and FELL_BACK in r.stderr


def test_nothing_on_the_run_path_reads_what_the_fingerprint_leaves_out() -> None:
    """A variable left out of the environment's fingerprint must not change the decision: nothing `scaf run`
    loads names one (the program itself gets them as they are)."""
    code = ("import sys, scaf.commands.run, scaf.lib.daemon\n"
            "print('\\n'.join(m.__file__ for n, m in sys.modules.items()"
            " if n.split('.')[0] == 'scaf' and getattr(m, '__file__', None)))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert any(f.endswith("runenv.py") for f in out), out
    names = [n.decode() for n in replay.UNHASHED if n != b"_"] + [p.decode() for p in replay.UNHASHED_PREFIXES]
    pattern = re.compile(r"""["'](""" + "|".join(map(re.escape, names)) + r""")|\[["']_["']\]|get\(["']_["']""")
    for f in out:
        if f.endswith("replay.py"):
            continue
        for n, line in enumerate(Path(f).read_text().splitlines(), 1):
            assert not pattern.search(line), f"{f}:{n} reads a variable the fingerprint leaves out: {line.strip()}"


def test_the_sanitized_build_replays_and_falls_back_cleanly(tmp_path: Path, user: User) -> None:
    """scaf-run built with AddressSanitizer and UBSan (make test builds it): a replay with a start team, a stale
    record and a damaged one, with nothing reported on stderr."""
    asan = os.environ.get("SCAF_ASAN_SCAFD")
    built = Path(asan).parent.parent / "lib" / "scaf-run" if asan else None
    if built is None or not built.exists():
        pytest.skip("no sanitized build (make test builds one)")
    # Beside this build's layers: a scaf-run replays only the records of the scaf it is part of.
    binary = Path(shutil.copy(built, paths.lib_dir() / f".scaf-run-asan-{os.getpid()}"))
    memd = Memoryd(os.path.join(short_tmpdir(), "memd.sock"))
    try:
        memd.answers[proto.MEMORY_RECALL] = FIXED_REMEMBERED
        args = ["--socket", memd.path, "--no-start", "--", *ENVIRON]
        first = user.scaf(*args)
        assert first.returncode == 0, first.stderr
        r = user.replay(*args, binary=binary)
        assert r.returncode == 0 and r.stderr == "", r.stderr
        assert entries(r.stdout) - {e for e in entries(r.stdout) if e.startswith("SCAF_START_PARENT=")} == \
            entries(first.stdout) - {e for e in entries(first.stdout) if e.startswith("SCAF_START_PARENT=")}
        r = user.replay(*args, env=dict(user.env, SOMETHING="else"), binary=binary)
        assert r.returncode == 125 and r.stderr == f"{FELL_BACK}: No such file or directory\n", r.stderr
        (rec,) = user.records()
        rec.write_bytes(rec.read_bytes()[: len(rec.read_bytes()) // 2])
        r = user.replay(*args, binary=binary)
        assert r.returncode == 125 and r.stderr == f"{FELL_BACK}: No such file or directory\n", r.stderr
    finally:
        memd.close()
        binary.unlink()
