"""`scaf allocate` as a subprocess, and the Python policy binding the simulator uses."""

from __future__ import annotations

import os
import random
import re
import shlex
import subprocess
import tempfile

import pytest
from conftest import ROOT, SCAF
from scaf.lib import policy as pol


def run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(SCAF), "allocate", *args], check=False, capture_output=True, text=True, timeout=60,
                          env=dict(os.environ, **(env or {})))


def alloc(*args: str) -> list[int]:
    r = run(*args)
    assert r.returncode == 0, r.stderr
    assert r.stderr == ""
    return [int(x) for x in r.stdout.splitlines()[0].split()]


def help_examples() -> list[tuple[str, list[int]]]:
    """Pairs (command, printed allocation) from the EXAMPLES of `scaf allocate --help`."""
    r = run("--help")
    assert r.returncode == 0
    lines = r.stdout.splitlines()
    out = []
    for i, line in enumerate(lines[:-1]):
        m = re.match(r"^\s+scaf allocate (.*)$", line)
        want = re.match(r"^\s+(\d+(?: \d+)*)\s{2,}", lines[i + 1])
        if m and want:
            out.append((m.group(1), [int(x) for x in want.group(1).split()]))
    return out


def test_help_is_complete() -> None:
    r = run("--help")
    assert r.returncode == 0
    for word in ("ALLOC:EFF", "--cpus", "--policy", "--chunk", "--prev", "--cap", "--verbose", "exit status",
                 "examples", "S(p) = p / (1 + sigma (p - 1) + kappa p (p - 1))", "ALLOC2:EFF2"):
        assert word in r.stdout, word


def test_help_examples_print_what_they_say() -> None:
    examples = help_examples()
    assert len(examples) >= 6
    for cmd, want in examples:
        assert alloc(*shlex.split(cmd)) == want, cmd


def test_better_scaler_gets_more_and_order_follows_input() -> None:
    assert alloc("--cpus", "16", "8:0.9", "8:0.5") == [14, 2]
    assert alloc("--cpus", "16", "8:0.5", "8:0.9") == [2, 14]


def test_a_measured_peak_leaves_contexts_idle_and_one_point_never_does() -> None:
    """E 0.304 at 16 and 0.119 at 32: the larger team is slower, so the curve through both peaks near 13.
    The same program known from one point only is read as Amdahl and gets the machine."""
    assert alloc("--cpus", "32", "16:0.304+32:0.119") == [13]
    assert alloc("--cpus", "32", "32:0.119+16:0.304") == [13]
    assert alloc("--cpus", "32", "16:0.304") == [32]
    assert alloc("--cpus", "32", "--policy", "equipartition", "16:0.304+32:0.119") == [32]


@pytest.mark.parametrize("client", ["16:0.3+", "16:0.3+1:0.9", "16:0.3+8:?", "16:0.3+x:0.5", "16:0.3+8:0.5+4:0.9+2:0.95",
                                    "16:0.3+8:0.5+8:0.4", "16:0.3+8:0.5+16:0.2", "16:0.3+8:0.5+4:?"])
def test_bad_second_point_is_exit_2(client: str) -> None:
    r = run("--cpus", "4", client)
    assert r.returncode == 2, r
    assert r.stdout == "" and "error" in r.stderr


def test_a_third_point_is_where_a_move_toward_it_is_read() -> None:
    """An SMT pair (docs/policy.md): the compute program fitted through 10 and 14 threads alone reads S(8) = 6.6 and
    keeps 10; its run at 8 threads (S 7.4), given as the third point, sends the pair back to 8 + 8."""
    both = ("6:0.6+8:0.525+2:0.89",)
    assert alloc("--cpus", "16", "--chunk", "2", "10:0.78+14:0.6", *both) == [10, 6]
    assert alloc("--cpus", "16", "--chunk", "2", "10:0.78+14:0.6+8:0.925", *both) == [8, 8]
    r = run("--cpus", "16", "--chunk", "2", "--verbose", "10:0.78+14:0.6+8:0.925", *both)
    row0 = next(line for line in r.stdout.splitlines() if line.startswith("0 "))
    assert "14:0.600" in row0 and "8:0.925" in row0 and " 7.40 " in row0, row0


def test_equal_efficiencies_equal_equipartition() -> None:
    for n, k in ((16, 3), (7, 2), (64, 5), (3, 3)):
        clients = ["4:0.8"] * k
        assert alloc("--cpus", str(n), *clients) == alloc("--cpus", str(n), "--policy", "equipartition", *clients)


def test_unknown_and_more_clients_than_cpus() -> None:
    assert alloc("--cpus", "9", "0:?", "3:?", "5:?") == [3, 3, 3]
    assert alloc("--cpus", "2", "8:0.9", "8:0.5", "0:?") == [1, 1, 1]


def test_random_inputs_keep_the_invariants() -> None:
    rng = random.Random(7)
    for _ in range(10):
        n, k = rng.randint(1, 64), rng.randint(1, 8)
        chunk = rng.choice([1, 2, 4])
        clients = [f"{rng.randint(0, n)}:{rng.choice(['?', f'{rng.uniform(0, 1.2):.3f}'])}" for _ in range(k)]
        out = alloc("--cpus", str(n), "--chunk", str(chunk), *clients)
        assert len(out) == k and min(out) >= 1
        assert sum(out) == max(n, k), (n, chunk, clients, out)


def test_verbose_table_shows_the_model() -> None:
    r = run("--cpus", "16", "--verbose", "--prev", "10,6", "8:0.9", "8:0.5")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == "10 6"
    assert any(line.split()[:2] == ["client", "p'"] for line in lines)
    row0 = next(line for line in lines if line.startswith("0 "))
    sigma0 = (1 / 0.9 - 1) / 7  # Amdahl through (8, 0.9)
    assert f"{sigma0:.4f}" in row0
    assert f"{10 / (1 + sigma0 * 9):.2f}" in row0  # S(10)
    assert "damped (undamped: 14)" in row0


def test_verbose_smt_prior_past_the_cores() -> None:
    """On 8 cores x 2 the next gain past the cores is a quarter of Amdahl's, and the table says so; not on 16
    cores."""
    sigma = (1 / 0.9 - 1) / 7  # Amdahl through (8, 0.9)
    amdahl = (10 / (1 + sigma * 9) - 7.2) / 2  # S(8) -> S(10) per context
    smt = run("--cpus", "16", "--chunk", "2", "--verbose", "8:0.9", "8:0.8")
    plain = run("--cpus", "16", "--verbose", "8:0.9", "8:0.8")
    assert smt.returncode == 0 and plain.returncode == 0, smt.stderr + plain.stderr
    assert smt.stdout.splitlines()[0] == "8 8" and plain.stdout.splitlines()[0] == "11 5"
    row0 = next(line for line in smt.stdout.splitlines() if line.startswith("0 "))
    assert f"{0.25 * amdahl:+.3f}" in row0
    assert "past the 8 cores: a quarter of the slope" in row0
    assert "cores" not in plain.stdout


@pytest.mark.parametrize("client", ["8", "8:", ":0.9", "x:0.9", "8:abc", "8:-1", "8:nan", "8:inf", "-1:0.5"])
def test_bad_client_is_exit_2(client: str) -> None:
    r = run("--cpus", "4", "2:0.5", client)
    assert r.returncode == 2
    assert r.stdout == ""
    assert "error" in r.stderr and client in r.stderr


@pytest.mark.parametrize("args", [
    ["--cpus", "0", "2:0.5"],
    ["--cpus", "-3", "2:0.5"],
    ["--cpus", "abc", "2:0.5"],
    ["--cpus", "4", "--chunk", "0", "2:0.5"],
    ["--cpus", "4", "--prev", "1,2", "2:0.5"],
    ["--cpus", "4", "--prev", "a", "2:0.5"],
    ["--cpus", "4", "--cap", "-1", "2:0.5"],
    ["--cpus", "4", "--policy", "nosuch", "2:0.5"],
    ["--cpus", "4"],
    ["2:0.5"],
])
def test_bad_arguments_are_exit_2(args: list[str]) -> None:
    r = run(*args)
    assert r.returncode == 2, r
    assert r.stdout == ""
    assert "error" in r.stderr


def test_missing_library_says_run_make() -> None:
    with tempfile.TemporaryDirectory() as empty:
        r = run("--cpus", "4", "2:0.5", env={"SCAF_BUILD": empty})
    assert r.returncode == 1
    assert "run make" in r.stderr


# The Python API the simulator calls.

def test_api_layout_and_names() -> None:
    assert pol.policy_names()[0] == "speedup"
    assert set(pol.policy_names()) == {"speedup", "equipartition", "consumption"}
    assert pol._load().scaf_policy_client_size() == pol.ctypes.sizeof(pol._CClient)


def test_api_allocate_and_feedback() -> None:
    threads, coef = pol.allocate("speedup", 16, [pol.Client(8, 0.9), pol.Client(8, 0.5)])
    assert threads == [14, 2]
    assert coef[0] == pytest.approx(1 / (1 + (1 / 0.9 - 1) / 7))  # E(2) of the curve
    assert pol.curve(pol.Client(16, 0.304, alt_team=32, alt_efficiency=0.119))[0] == 2
    # p' = 1 with the last coef fed back keeps a non-scaler at one thread.
    threads, _ = pol.allocate("speedup", 8, [pol.Client(1, 1.0, prev=1, prev_coef=0.3), pol.Client(4, 0.9, prev=7)])
    assert threads == [1, 7]
    assert pol.allocate("equipartition", 4, []) == ([], [])


def test_api_intpart_and_errors() -> None:
    assert pol.intpart([1, 1, 1], 10, 2) == [4, 4, 2]
    assert pol.targets([10, 1, 1], 16, 1, [4, 0, 0]) == [4.0, 6.0, 6.0]
    with pytest.raises(ValueError, match="unknown policy"):
        pol.allocate("nosuch", 4, [pol.Client()])
    with pytest.raises(ValueError, match="contexts"):
        pol.allocate("speedup", 0, [pol.Client()])
    with pytest.raises(ValueError):
        pol.intpart([1, -1], 4)


def test_docs_examples_match() -> None:
    """Every `$ scaf allocate ...` in docs/policy.md is followed by what it prints."""
    text = (ROOT / "docs" / "policy.md").read_text()
    blocks = re.findall(r"^\$ scaf allocate (.*)\n((?:(?!\$ ).*\n)*?)(?=^\$ |^```)", text, re.MULTILINE)
    assert len(blocks) >= 5
    assert len(blocks) == text.count("$ scaf allocate"), "an example the pattern does not see"
    for cmd, expected in blocks:
        r = run(*shlex.split(cmd))
        assert r.returncode == 0, (cmd, r.stderr)
        assert r.stdout == expected, cmd


def test_consumption_leaves_contexts_idle() -> None:
    """E = 0.4 at 16: sigma = 0.1; one more context adds >= 0.5 up to 4 threads, >= 0.3 up to 8."""
    assert alloc("--cpus", "16", "--policy", "consumption", "16:0.4") == [4]
    assert alloc("--cpus", "16", "--policy", "consumption", "--min-gain", "0.3", "16:0.4", "0:?") == [8, 8]
    assert alloc("--cpus", "16", "--policy", "consumption", "8:1.0") == [16]


@pytest.mark.parametrize("value", ["0", "1.5", "nan", "-1", "x"])
def test_consumption_bad_min_gain(value: str) -> None:
    r = run("--cpus", "16", "--policy", "consumption", "--min-gain", value, "16:0.4")
    assert r.returncode == 2
    assert "--min-gain" in r.stderr
    assert r.stdout == ""


def test_consumption_verbose_shows_the_curve_and_idle() -> None:
    r = run("--cpus", "16", "--policy", "consumption", "-v", "16:0.4")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == "4"
    assert "min_gain=0.5" in lines[1] and "idle=12" in lines[1]
    # sigma = (1/0.4 - 1) / 15 = 0.1; S(4) = 4 / 1.3; S(5) - S(4) = 0.49 < 0.5
    assert lines[3].split()[:11] == ["0", "16", "0.400", "-", "-", "0.1000", "0.00000", "-", "4", "3.08", "+0.495"]
    assert "below min_gain" in lines[3]
