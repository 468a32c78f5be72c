"""Serial experiments are safe: forked children never change the world, never outlive their parent,
and a blocked call or a big heap never harms the program. Real daemon, real layer, real programs."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from conftest import ROOT, UNSCALED, Daemon, layer_env, parse_result
from scaf.lib import paths

PROGS = ROOT / "tests" / "progs"

# Every forkable region instance becomes an experiment: no laziness, nothing short enough to run
# in place, no waiting between experiments at a site.
FORCED = {
    "SCAF_LAZY": "0",
    "SCAF_INPLACE_MAX_MS": "0",
    "SCAF_EXPERIMENT_INTERVAL_S": "0",
    "SCAF_VERBOSE": "1",
}

EXP_LINE = re.compile(r"experiment (\d+) at site \S+: ([a-z ]+)")


def build_prog(name: str) -> Path:
    """Compile tests/progs/NAME.c with OpenMP into the build tree (once per source change)."""
    src = PROGS / f"{name}.c"
    out = paths.build_dir() / "tests" / "progs" / name
    if not out.exists() or out.stat().st_mtime < src.stat().st_mtime:
        out.parent.mkdir(parents=True, exist_ok=True)
        cc = os.environ.get("CC", "cc")
        subprocess.run([cc, "-std=c11", "-O2", "-fopenmp", "-Wall", "-Wextra", "-Werror", "-o", str(out), str(src)],
                       check=True)
    return out


def outcomes(stderr: str) -> list[str]:
    """Outcomes of the experiments the layer reported (SCAF_VERBOSE=1)."""
    return [m.group(2).strip() for m in EXP_LINE.finditer(stderr)]


def children(pid: int) -> set[int]:
    """Direct children of pid, from /proc (every thread's list: fork may come from any thread)."""
    out: set[int] = set()
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            try:
                with open(f"/proc/{pid}/task/{task}/children") as f:
                    out.update(int(x) for x in f.read().split())
            except OSError:
                pass
    except OSError:
        pass
    return out


def alive(pid: int) -> bool:
    """True while pid exists and is not a zombie."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state not in ("Z", "X")


def test_chatty_output_and_file_exactly_once_under_forced_experiments(scafd: Daemon, tmp_path: Path) -> None:
    out_file = tmp_path / "chatty.out"
    env = layer_env(scafd.socket, FORCED)
    # UNSCALED: a count, the instances after the fork in which its outcome is collected.
    r = subprocess.run(check=False, args=[str(paths.workload("chatty")), "--size", "S", *UNSCALED, "--file", str(out_file)],
                       env=env, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    res = parse_result(r.stdout)
    assert res["verified"] == "yes"
    m = re.search(r"instances=(\d+)", r.stdout)
    assert m, r.stdout
    n = int(m.group(1))
    printed = [int(x) for x in re.findall(r"chatty instance=(\d+)", r.stdout)]
    assert printed == list(range(n)), "each instance printed exactly once, in order"
    lines = out_file.read_text().splitlines()
    assert len(lines) == n
    assert [int(re.search(r"instance=(\d+)", ln).group(1)) for ln in lines] == list(range(n))
    # The experiment really ran and really was stopped: the region's fopen is a blocked call.
    got = outcomes(r.stderr)
    assert "blocked call" in got, r.stderr


def test_blocked_call_leaves_parent_result_identical(scafd: Daemon, tmp_path: Path) -> None:
    """Same checksum and same printed lines as without the layer, although the experiment was killed."""
    plain = subprocess.run(check=False, args=[str(paths.workload("chatty")), "--size", "S", *UNSCALED, "--file", str(tmp_path / "a.out")],
                           capture_output=True, text=True, timeout=60)
    forced = subprocess.run(check=False, args=[str(paths.workload("chatty")), "--size", "S", *UNSCALED, "--file", str(tmp_path / "b.out")],
                            env=layer_env(scafd.socket, FORCED), capture_output=True, text=True, timeout=60)
    assert plain.returncode == 0 and forced.returncode == 0, forced.stderr

    def stable(s: str) -> list[str]:
        return [ln for ln in s.splitlines() if not ln.startswith(("name=", "instances="))]

    assert stable(forced.stdout) == stable(plain.stdout)
    assert (tmp_path / "a.out").read_text() == (tmp_path / "b.out").read_text()
    assert "blocked call" in outcomes(forced.stderr)


def test_experiment_child_dies_with_killed_parent(scafd: Daemon) -> None:
    prog = build_prog("slowregions")
    # Region 0 is short (it measures the site); region 1 is forked: its serial child runs for seconds.
    env = layer_env(scafd.socket, {**FORCED, "OMP_NUM_THREADS": "2"})
    before = {int(p) for p in os.listdir("/proc") if p.isdigit()}
    p = subprocess.Popen([str(prog), "--regions", "3", "--first-iters", "1000000", "--iters", "3000000000"],
                         env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 20
        kids: set[int] = set()
        while time.monotonic() < deadline and not kids:
            kids = {k for k in children(p.pid) if alive(k)}
            if p.poll() is not None:
                break
            time.sleep(0.02)
        assert kids, "no experiment child appeared"
        assert not kids & before
        p.send_signal(signal.SIGKILL)
        p.wait(timeout=10)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and any(alive(k) for k in kids):
            time.sleep(0.02)
        assert not any(alive(k) for k in kids), f"experiment {kids} outlived its SIGKILLed parent"
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()


def test_fork_with_1gib_heap(scafd: Daemon) -> None:
    prog = build_prog("bigheap")
    regions = 4
    r = subprocess.run(check=False, args=[str(prog), "--heap-mib", "1024", "--regions", str(regions)],
                       env=layer_env(scafd.socket, {**FORCED, "OMP_NUM_THREADS": "2"}),
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    # Page p holds 1 + (r+1) at byte 0 after region r and 1 in its 15 other sampled bytes.
    pages = (1024 << 20) // 4096
    expect = sum(pages * (r_ + 2 + 15) for r_ in range(regions))
    assert f"checksum={expect}" in r.stdout
    assert "done" in outcomes(r.stderr), r.stderr


def test_lazy_no_experiment_while_alone(scafd_factory: Callable[..., Daemon]) -> None:
    """Alone with the daemon and SCAF_LAZY at its default: no child is forked, ever; and an in-place baseline
    only within its budget, a hundredth of SCAF_EXPERIMENT_INTERVAL_S, here 0: none at all."""
    d = scafd_factory("--policy", "equipartition", "--cpus", "4", "--no-lookout")
    prog = build_prog("slowregions")
    env = layer_env(d.socket, {"SCAF_INPLACE_MAX_MS": "0", "SCAF_EXPERIMENT_INTERVAL_S": "0",
                               "SCAF_VERBOSE": "1", "OMP_NUM_THREADS": "2"})
    r = subprocess.run(check=False, args=[str(prog), "--regions", "6", "--iters", "20000000"], env=env,
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert "forked" not in r.stderr and "baseline" not in r.stderr, r.stderr
    env["SCAF_LAZY"] = "0"
    r = subprocess.run(check=False, args=[str(prog), "--regions", "6", "--iters", "20000000"], env=env,
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert "forked" in r.stderr, r.stderr


def test_experiment_child_never_becomes_a_client(scafd: Daemon) -> None:
    """The child never touches the daemon socket: it is never a client of its own."""
    prog = build_prog("slowregions")
    env = layer_env(scafd.socket, {**FORCED, "OMP_NUM_THREADS": "2"})
    p = subprocess.Popen([str(prog), "--regions", "3", "--first-iters", "1000000", "--iters", "3000000000"],
                         env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 20
        kids: set[int] = set()
        while time.monotonic() < deadline and not kids:
            kids = {k for k in children(p.pid) if alive(k)}
            time.sleep(0.02)
        assert kids
        # The experiment child keeps the parent's comm and is in its process tree, never a separate client.
        st = scafd.status()
        pids = {c["pid"] for c in st["clients"]}
        assert p.pid in pids and not kids & pids
    finally:
        p.kill()
        p.wait()
