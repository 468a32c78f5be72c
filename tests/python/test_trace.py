"""`scaf trace` against real processes: tree attribution, command mode, formats, bad input."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from conftest import SCAF

# The parent sleeps while a child it forks burns a CPU: it forks once told (a line on stdin), which the
# test does once `scaf trace` has attached, however long that takes on a busy machine.
PARENT = r"""
import os, sys, time
print("ready", flush=True)
sys.stdin.readline()
pid = os.fork()
if pid == 0:
    end = time.monotonic() + 1.5
    x = 0
    while time.monotonic() < end:
        x += 1
    os._exit(0)
os.waitpid(pid, 0)
"""


def scaf(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(SCAF), *args], check=False, capture_output=True, text=True, timeout=timeout)


def rows(text: str) -> list[tuple[float, int, int, float]]:
    out = []
    for line in text.splitlines():
        if line.startswith("#") or not line.strip():
            continue
        t, who, use = line.split()
        pid, cpu = who.split("@")
        out.append((float(t), int(pid), int(cpu), float(use)))
    return out


def test_busy_child_counts_for_parent_tree(tmp_path: Path) -> None:
    out = tmp_path / "t.trace"
    parent = subprocess.Popen([sys.executable, "-c", PARENT], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              text=True)
    tracer = None
    try:
        assert parent.stdout is not None and parent.stdout.readline().strip() == "ready"
        tracer = subprocess.Popen([str(SCAF), "trace", "--period", "0.1", "-o", str(out), str(parent.pid)],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        # The header is written (line-buffered) once the tracer holds the process: only then may it fork.
        deadline = time.monotonic() + 60
        while not (out.exists() and out.read_text().startswith("# scaf-trace 1 ")):
            assert tracer.poll() is None, tracer.communicate()[1]
            assert time.monotonic() < deadline, "scaf trace wrote no header within 60 s"
            time.sleep(0.05)
        assert parent.stdin is not None
        parent.stdin.write("go\n")
        parent.stdin.close()
        _, err = tracer.communicate(timeout=60)
    finally:
        if parent.poll() is None and parent.stdin and not parent.stdin.closed:
            parent.stdin.close()
        parent.wait(timeout=30)
        if tracer is not None and tracer.poll() is None:
            tracer.kill()
            tracer.wait()
    assert tracer.returncode == 0, err
    text = out.read_text()
    assert text.startswith("# scaf-trace 1 period=0.1 ")
    assert f"# tree {parent.pid} " in text
    data = rows(text)
    assert data, text
    # Only the traced root appears, and its tree used CPU although the parent only slept.
    assert {pid for _, pid, _, _ in data} == {parent.pid}
    assert sum(u for *_, u in data) > 0.3
    assert all(u > 0 for *_, u in data)
    times = [t for t, *_ in data]
    assert times == sorted(times)


def test_command_mode_exit_status_and_output_file(tmp_path: Path) -> None:
    out = tmp_path / "t.trace"
    spin = "import time\nend=time.monotonic()+0.5\nwhile time.monotonic()<end: pass\nraise SystemExit(7)"
    res = scaf("trace", "--period", "0.1", "-o", str(out), "--", sys.executable, "-c", spin)
    assert res.returncode == 7, res.stderr
    text = out.read_text()
    assert text.startswith("# scaf-trace 1 ")
    assert rows(text) and all(cpu >= 0 for _, _, cpu, _ in rows(text))


def test_command_mode_killed_by_signal() -> None:
    res = scaf("trace", "--", "sh", "-c", "kill -TERM $$")
    assert res.returncode == 128 + 15


def test_csv_format(tmp_path: Path) -> None:
    out = tmp_path / "t.csv"
    spin = "import time\nend=time.monotonic()+0.4\nwhile time.monotonic()<end: pass"
    res = scaf("trace", "--csv", "--period", "0.1", "-o", str(out), "--", sys.executable, "-c", spin)
    assert res.returncode == 0, res.stderr
    lines = out.read_text().splitlines()
    assert lines[0] == "time,pid,name,cpu,usage"
    assert len(lines) > 1
    for line in lines[1:]:
        t, pid, name, cpu, use = line.split(",")
        assert float(t) > 0 and int(pid) > 0 and name and int(cpu) >= 0 and float(use) > 0


def test_bad_input() -> None:
    res = scaf("trace", "notapid")
    assert res.returncode == 2 and "not a process id" in res.stderr
    res = scaf("trace")
    assert res.returncode == 2 and "PIDs" in res.stderr
    res = scaf("trace", "--period", "0", "1")
    assert res.returncode == 2 and "--period" in res.stderr
    res = scaf("trace", "--", "/nonexistent/program")
    assert res.returncode == 127 and "cannot run" in res.stderr
    # A pid that is not running: pid_max is at most 2**22, so this one cannot exist.
    res = scaf("trace", str(2**22 + 1))
    assert res.returncode == 1 and "no such process" in res.stderr


def test_help() -> None:
    res = scaf("trace", "--help")
    assert res.returncode == 0
    for what in ("examples:", "--period", "--csv", "0.100 4242@0", "time,pid,name,cpu,usage"):
        assert what in res.stdout, what


SPIN = "import time\nend=time.monotonic()+{s}\nwhile time.monotonic()<end: pass"


def test_recorder_traces_programs_added_while_running(tmp_path: Path) -> None:
    """The in-process API the demo uses: programs join the trace as they start."""
    from scaf.lib.plot import plot_trace, read_trace
    from scaf.lib.trace import Recorder

    path = tmp_path / "rec.trace"
    with Recorder(path, period=0.1) as rec:
        a = subprocess.Popen([sys.executable, "-c", SPIN.format(s=0.8)])
        rec.add(a.pid, "first")
        time.sleep(0.3)
        b = subprocess.Popen([sys.executable, "-c", SPIN.format(s=0.5)])
        rec.add(b.pid, "second")
        a.wait(timeout=30)
        b.wait(timeout=30)
        rec.add(a.pid, "gone")  # already exited: ignored
    data = read_trace(path)
    assert data.names == {a.pid: "first", b.pid: "second"}
    used = {pid: sum(u for _, p, _, u in data.rows if p == pid) for pid in (a.pid, b.pid)}
    assert used[a.pid] > 0 and used[b.pid] > 0
    # b's rows all come after it was added.
    first_b = min(t for t, p, _, _ in data.rows if p == b.pid)
    assert first_b > min(t for t, p, _, _ in data.rows if p == a.pid)
    plot_trace(path, tmp_path / "rec.png")
    assert (tmp_path / "rec.png").read_bytes()[:4] == b"\x89PNG"


def test_sigterm_is_passed_to_the_command(tmp_path: Path) -> None:
    out = tmp_path / "t.trace"
    proc = subprocess.Popen([str(SCAF), "trace", "-o", str(out), "--", "sleep", "60"],
                            stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not (out.exists() and "# tree" in out.read_text()):
        time.sleep(0.05)
    proc.terminate()
    assert proc.wait(timeout=30) == 128 + 15
