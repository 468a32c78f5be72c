"""`scaf demo` end to end at size S: the table it prints, and nothing left running after it."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import threading
import time

import psutil
import pytest
from conftest import SCAF

MARKER = "SCAF_DEMO_DIR"


def demo_processes(demo_dir: str) -> list[psutil.Process]:
    """Every live process the demo started carries MARKER=<its private directory>."""
    out = []
    for p in psutil.process_iter(["status"]):
        try:
            if p.info["status"] != psutil.STATUS_ZOMBIE and p.environ().get(MARKER) == demo_dir:
                out.append(p)
        except (psutil.AccessDenied, psutil.NoSuchProcess, psutil.ZombieProcess):
            continue
    return out


def demo_dir_from(stderr: str) -> str:
    m = re.search(r"private daemon \(equipartition\) on (/tmp/scaf-demo-\S+)/scafd\.sock", stderr)
    assert m, stderr
    return m.group(1)


def test_demo_size_s_prints_the_table_and_leaves_nothing() -> None:
    r = subprocess.run([str(SCAF), "demo", "--size", "S"], capture_output=True, text=True, timeout=240,
                       check=False)
    assert r.returncode == 0, r.stdout + r.stderr
    out = r.stdout
    assert "scaf demo: spin + cg at size S" in out
    for col in ("program", "serial s", "unmodified s", "under scaf s", "speedup", "threads"):
        assert col in out, col
    rows = {ln.split()[0]: ln.split() for ln in out.splitlines() if ln.split()[:1] in (["spin"], ["cg"])}
    assert set(rows) == {"spin", "cg"}, out
    for cells in rows.values():
        # serial, unmodified, threads, speedup, scaf, threads, speedup
        assert len(cells) == 8, cells
        assert all(float(cells[i]) > 0 for i in (1, 2, 5)), cells
        assert cells[4].endswith("x") and cells[7].endswith("x"), cells
    sums = re.search(r"sum of speedups\s+(\d+\.\d+)x\s+(\d+\.\d+)x", out)
    assert sums, out
    # The sums are the sums of the rows' speedups (to the printed rounding).
    assert abs(float(sums.group(1)) - sum(float(c[4][:-1]) for c in rows.values())) < 0.02
    assert abs(float(sums.group(2)) - sum(float(c[7][:-1]) for c in rows.values())) < 0.02
    assert re.search(r"scaf / unmodified \(sum of speedups\): \d+\.\d+x", out), out
    # Progress went to stderr, so the table stays clean on stdout.
    for step in ("serial: spin", "serial: cg", "unmodified:", "under scaf:"):
        assert step in r.stderr, step
    d = demo_dir_from(r.stderr)
    assert not os.path.exists(d), "the demo's directory must be removed without --keep"
    assert demo_processes(d) == []


def test_demo_keep_keeps_logs_and_still_stops_everything() -> None:
    r = subprocess.run([str(SCAF), "demo", "--size", "S", "--workloads", "spin", "--keep"], capture_output=True,
                       text=True, timeout=120, check=False)
    assert r.returncode == 0, r.stdout + r.stderr
    d = demo_dir_from(r.stderr)
    try:
        assert f"kept outputs, the daemon's stderr and its allocation log in {d}" in r.stderr
        assert os.path.getsize(os.path.join(d, "alloc.jsonl")) > 0
        assert not os.path.exists(os.path.join(d, "scafd.sock")), "the daemon removes its socket on SIGTERM"
        assert demo_processes(d) == []
    finally:
        subprocess.run(["rm", "-rf", d], check=False)


def test_demo_interrupted_leaves_nothing() -> None:
    p = subprocess.Popen([str(SCAF), "demo", "--size", "W"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True)
    d = ""
    try:
        assert p.stderr is not None
        line = p.stderr.readline()
        d = demo_dir_from(line)
        # Wait until the demo has a workload running, then interrupt it like Ctrl-C would.
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not any("workloads" in " ".join(q.cmdline())
                                                      for q in demo_processes(d)):
            time.sleep(0.05)
        assert demo_processes(d), "the demo started nothing"
        # Keep both pipes drained from here on: a demo blocked writing to a full pipe could not exit,
        # and what it wrote is the evidence when it does not.
        rest: list[str] = []
        drains = [threading.Thread(target=lambda f=f: rest.append(f.read()), daemon=True) for f in (p.stdout, p.stderr)]
        for t in drains:
            t.start()
        p.send_signal(signal.SIGINT)
        try:
            p.wait(timeout=30)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
            for t in drains:
                t.join(5)
            pytest.fail("scaf demo did not exit within 30 s of SIGINT; it wrote:\n" + "\n".join(rest))
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert p.returncode == 130
    assert demo_processes(d) == []
    assert not os.path.exists(d)


def test_demo_unknown_workload() -> None:
    r = subprocess.run([str(SCAF), "demo", "--workloads", "spin,nosuch"], capture_output=True, text=True,
                       timeout=30, check=False)
    assert r.returncode == 2
    assert "unknown workload 'nosuch'" in r.stderr and "built:" in r.stderr


@pytest.mark.parametrize("given", [True, False], ids=["folder-given", "default-folder"])
def test_demo_plot_writes_allocation_and_trace_pictures(tmp_path, given: bool) -> None:
    """--plot DIR, or --plot alone: a new folder under $XDG_STATE_HOME/scaf, never the current folder."""
    cwd, state = tmp_path / "cwd", tmp_path / "state"
    cwd.mkdir()
    env = dict(os.environ, XDG_STATE_HOME=str(state))
    r = subprocess.run([str(SCAF), "demo", "--size", "S", "--workloads", "ep,crit", "--plot",
                        *([str(tmp_path / "pics")] if given else [])],
                       capture_output=True, text=True, timeout=240, check=False, cwd=cwd, env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    assert list(cwd.iterdir()) == []
    if given:
        out = tmp_path / "pics"
    else:
        (out,) = (state / "scaf").iterdir()
        assert out.name.startswith("demo-")
    for name in ("demo-alloc.png", "demo-trace-unmodified.png", "demo-trace-scaf.png"):
        png = out / name
        assert png.exists(), r.stderr
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", name
        assert f"wrote {png}" in r.stderr
