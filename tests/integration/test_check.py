"""`scaf check` end to end on real programs, `scaf run --malleable/--fixed`, and the verdicts in
`scaf status`: subprocesses, checked on stdout, stderr and exit status."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import SCAF, Daemon, layer_env
from scaf.lib import paths


def scaf(*args: str, env: dict[str, str] | None = None, timeout: float = 300,
         cwd: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(SCAF), *args], capture_output=True, text=True, timeout=timeout, check=False,
                          env=env if env is not None else clean_env(), cwd=cwd)


def clean_env(**kw: str) -> dict[str, str]:
    """Our environment without anything that would change what a check means."""
    drop = ("LD_PRELOAD", "SCAF_RULES", "SCAF_MALLEABLE", "SCAF_SOCKET", "OMP_NUM_THREADS", "SCAF_CHECK_SEED",
            "SCAF_REPORT")
    env = {k: v for k, v in os.environ.items() if k not in drop}
    env["SCAF_RULES"] = ""  # no rules of the machine's or the user's
    # The verdict's record goes nowhere (test_cli_memory.py tests it): no daemon is started for it.
    env["SCAF_SOCKET"] = "/nonexistent/scaf-test/none.sock"
    env.update(kw)
    return env


def wl(name: str) -> str:
    return str(paths.workload(name))


# A floating-point reduction whose rounding depends on the team size, printed to 17 digits.
REDUCTION_C = r"""
#include <stdio.h>
int main(int argc, char **argv) {
    FILE *out = argc > 1 ? fopen(argv[1], argc > 2 ? "wb" : "w") : stdout;
    if (!out) return 2;
    for (int r = 0; r < 4; r++) {
        double s = 0.0;
#pragma omp parallel for reduction(+:s)
        for (int i = 1; i <= 1000000; i++) s += 1.0 / ((double)i + r);
        if (argc > 2) fwrite(&s, sizeof s, 1, out);   /* binary */
        else fprintf(out, "sum %d = %.17g\n", r, s);
    }
    if (out != stdout) { fclose(out); puts("done"); }
    return 0;
}
"""

# Every region sets its own team: scaf keeps explicit counts, so nothing can vary.
EXPLICIT_C = r"""
#include <stdio.h>
int main(void) {
    double s = 0;
    for (int r = 0; r < 4; r++) {
#pragma omp parallel for reduction(+:s) num_threads(1)
        for (int i = 1; i <= 100000; i++) s += 1.0 / i;
    }
    printf("%.17g\n", s);
    return 0;
}
"""

# Fixed by evidence (omp_set_num_threads outside a region and a region that numbers its threads),
# then parked: a client to look at.
PARKED_C = r"""
#include <omp.h>
#include <unistd.h>
int main(void) {
    omp_set_num_threads(2);
    int x = 0;
#pragma omp parallel
    {
#pragma omp atomic
        x += omp_get_thread_num() + 1;
    }
    sleep(30);
    return x == 0;
}
"""


@pytest.fixture(scope="module")
def progs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    d = tmp_path_factory.mktemp("check-progs")
    out = {}
    for name, src in (("reduction", REDUCTION_C), ("parked", PARKED_C), ("explicit", EXPLICIT_C)):
        c = d / f"{name}.c"
        c.write_text(src)
        subprocess.run(["gcc", "-O2", "-fopenmp", str(c), "-o", str(d / name)], check=True)
        out[name] = str(d / name)
    return out


# ---- the verdict on real programs ---------------------------------------------------------------

# Workloads print their time (and largest team) on the result line: masked with --ignore.
WORKLOADS = [
    ("fixed", "2", 1, "not malleable"),
    ("fixed", "3", 1, "not malleable"),
    ("ep", "2", 0, "malleable"),
    ("cg", "2", 0, "malleable"),
    ("banner", "2", 0, "malleable"),
    ("split", "2", 1, "not malleable"),
    ("partials", "2", 1, "not malleable"),
    ("tpcarry", "2", 1, "not malleable"),
    ("tpscratch", "2", 0, "malleable"),
    ("explicit", "2", 0, "malleable"),
    ("xgbhist", "3", 1, "not malleable"),
]


@pytest.mark.parametrize(("name", "threads", "code", "verdict"), WORKLOADS,
                         ids=[f"{w[0]}-{w[1]}" for w in WORKLOADS])
def test_workloads(name: str, threads: str, code: int, verdict: str) -> None:
    r = scaf("check", "--threads", threads, "--ignore", "^name=", "--", wl(name), "--size", "S")
    assert r.returncode == code, r.stdout + r.stderr
    assert f"\nverdict: {verdict} (" in r.stdout, r.stdout
    lines = r.stdout.splitlines()
    assert lines[0].startswith(f"scaf check: {wl(name)} --size S  (OMP_NUM_THREADS={threads}, teams 1..{threads}")
    for s in range(1, 5):
        row = next(ln for ln in lines if ln.startswith(f"seed {s} "))
        teams = row.split()[5]
        assert re.fullmatch(r"\d+(,\d+)*", teams), row
        assert all(1 <= int(t) <= int(threads) for t in teams.split(",")), row
    assert any(ln.startswith("auto ") for ln in lines)
    assert "the layer's rule says: " in r.stdout
    if code == 1:
        assert "  evidence, seed " in r.stdout
        assert "      plain:  " in r.stdout and "      scaf:   " in r.stdout
        # The layer's evidence rule catches these: fixed, or, for tpcarry, whose thread-local check may
        # still run when a short run ends (how short depends on the machine), an honest undecided that
        # names the sites still held. Never malleable, and no disagreement.
        says = re.search(r"the layer's rule says: (\w+) — (.*)", r.stdout)
        assert says, r.stdout
        assert says.group(1) == "fixed" or (name == "tpcarry" and says.group(1) == "undecided"
                                            and "held for the thread-local check" in says.group(2)), r.stdout
        assert "DISAGREEMENT" not in r.stdout
    else:
        assert "DISAGREEMENT" not in r.stdout


def test_reduction_is_not_malleable_and_the_layer_disagrees(progs: dict[str, str]) -> None:
    # Honest behaviour: a double reduction rounds differently with a different team, and the
    # layer's evidence rule cannot see that (no team-size call), so it would steer it.
    # Two threads at most: with three or more, libgomp combines the partial sums in the order
    # the threads finish, and two plain runs can already differ (exit 3).
    r = scaf("check", "--threads", "2", "--", progs["reduction"])
    assert r.returncode == 1, r.stdout + r.stderr
    assert "verdict: not malleable" in r.stdout
    m = re.search(r"stdout line (\d+):\n\s+plain:\s+sum \d = ([\d.]+)\n\s+scaf:\s+sum \d = ([\d.]+)", r.stdout)
    assert m and m.group(2) != m.group(3), r.stdout
    assert "the layer's rule says: malleable" in r.stdout
    assert ("DISAGREEMENT: the rule would steer it but the check found a difference: use --save or "
            "`scaf run --fixed`") in r.stdout


def test_dtgroup_is_malleable_where_the_rule_keeps_it_fixed() -> None:
    """data.table's shape (dtgroup): thread-numbered scratch inside a dynamic loop's iterations, over
    buffers sized by the count read at start. Seeded teams up to that count change nothing, while
    the rule, which sees the calls partials makes, keeps the team: the check says so, and that
    --save records what it found (docs/shapes.md: why the rule cannot tell the two apart)."""
    r = scaf("check", "--threads", "3", "--ignore", "^name=", "--", wl("dtgroup"), "--size", "S")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "\nverdict: malleable (" in r.stdout, r.stdout
    assert "the layer's rule says: fixed — region dtgroup+" in r.stdout, r.stdout
    assert "numbers threads without omp_get_num_threads()" in r.stdout, r.stdout
    assert "DISAGREEMENT: the rule keeps its team fixed but the check found no difference" in r.stdout


def test_nondeterministic_plainly_exits_3() -> None:
    r = scaf("check", "--", "sh", "-c", "echo start; date +%s%N; echo end")
    assert r.returncode == 3, r.stdout + r.stderr
    assert "verdict: nondeterministic: two runs WITHOUT scaf already differ" in r.stdout
    assert "stdout line 2:" in r.stdout
    assert "--ignore REGEX" in r.stdout
    assert not re.search(r"^seed ", r.stdout, re.MULTILINE), "no run under scaf after a nondeterministic plain pair"


def test_ignore_masks_the_line_then_nothing_to_exercise() -> None:
    r = scaf("check", "--ignore", r"^\d+$", "--", "sh", "-c", "echo start; date +%s%N; echo end")
    assert r.returncode == 4, r.stdout + r.stderr
    assert "verdict: not exercised: PROG never opened a parallel region under the layer" in r.stdout


def test_no_parallel_region_exits_4() -> None:
    r = scaf("check", "--", "true")
    assert r.returncode == 4, r.stdout + r.stderr
    assert "not exercised" in r.stdout


def test_team_that_cannot_vary_exits_4() -> None:
    r = scaf("check", "--threads", "1", "--ignore", "^name=", "--", wl("ep"), "--size", "S")
    assert r.returncode == 4, r.stdout + r.stderr
    assert "every region ran with 1 thread, the team it gets without scaf" in r.stdout
    assert "use --threads N" in r.stdout


def test_explicit_team_everywhere_exits_4(progs: dict[str, str]) -> None:
    r = scaf("check", "--threads", "2", "--", progs["explicit"])
    assert r.returncode == 4, r.stdout + r.stderr
    assert "every region ran with 1 thread, in every run, seeded or not" in r.stdout
    assert "num_threads" in r.stdout


def test_plain_timeout_exits_4() -> None:
    """--timeout stops the run: a check that waited for `sleep 100000` would end in the helper's own
    time cap (TimeoutExpired), loudly."""
    r = scaf("check", "--timeout", "0.5", "--", "sleep", "100000")
    assert r.returncode == 4, r.stdout + r.stderr
    assert re.search(r"^plain 1\s+timeout", r.stdout, re.MULTILINE), r.stdout
    assert "did not finish within 0.5 s" in r.stdout


def test_output_file_text_difference(progs: dict[str, str], tmp_path: Path) -> None:
    out = tmp_path / "sums.txt"
    r = scaf("check", "--threads", "2", "--output", str(out), "--", progs["reduction"], str(out))
    assert r.returncode == 1, r.stdout + r.stderr
    assert re.search(r"DIFFERENT: sums\.txt line \d", r.stdout), r.stdout
    assert re.search(rf"{re.escape(str(out))} line \d+:\n\s+plain:\s+sum", r.stdout), r.stdout
    assert "stdout line" not in r.stdout  # stdout ("done") is the same every time
    assert out.exists()  # the last run's version stays


def test_output_file_binary_difference(progs: dict[str, str], tmp_path: Path) -> None:
    out = tmp_path / "sums.bin"
    r = scaf("check", "--threads", "2", "--output", str(out), "--", progs["reduction"], str(out), "binary")
    assert r.returncode == 1, r.stdout + r.stderr
    m = re.search(rf"{re.escape(str(out))} byte (\d+): plain 0x[0-9a-f]{{2}}, scaf 0x[0-9a-f]{{2}} "
                  r"\(sizes 32 and 32\)", r.stdout)
    assert m, r.stdout


def test_output_file_never_written_is_warned(tmp_path: Path) -> None:
    r = scaf("check", "--threads", "2", "--ignore", "^name=", "--output", str(tmp_path / "nothing"), "--",
             wl("ep"), "--size", "S")
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"warning: {tmp_path / 'nothing'} does not exist after the plain run" in r.stdout


def test_json(progs: dict[str, str]) -> None:
    r = scaf("check", "--json", "--seeds", "2", "--threads", "2", "--", progs["reduction"])
    assert r.returncode == 1, r.stdout + r.stderr
    d = json.loads(r.stdout)
    assert d["verdict"] == "not malleable" and d["exit"] == 1
    assert d["program"] == os.path.realpath(progs["reduction"])
    assert [x["name"] for x in d["runs"]] == ["plain 1", "plain 2", "seed 1", "seed 2", "auto"]
    seeded = [x for x in d["runs"] if x["kind"] == "seed"]
    assert all(x["regions"] == 4 and x["teams"] and max(x["teams"]) <= 2 for x in seeded)
    assert d["evidence"][0]["what"] == "stdout" and d["evidence"][0]["run"].startswith("seed")
    assert d["layer"]["verdict"] == "malleable"
    assert d["disagreement"].startswith("the rule would steer it")


def test_malleable_but_a_rule_keeps_it_fixed(tmp_path: Path) -> None:
    f = tmp_path / "rules"
    f.write_text("fixed ep\n")
    r = scaf("check", "--threads", "2", "--ignore", "^name=", "--", wl("ep"), "--size", "S",
             env=clean_env(SCAF_RULES=str(f)))
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"the layer's rule says: fixed — rule {f}:1: fixed ep (decided by: rules)" in r.stdout
    assert "DISAGREEMENT: a rules file keeps it fixed, but the check found no difference" in r.stdout


def test_save_then_rules_which(progs: dict[str, str], tmp_path: Path) -> None:
    xdg = tmp_path / "xdg"
    env = clean_env(XDG_CONFIG_HOME=str(xdg))
    del env["SCAF_RULES"]
    prog = os.path.realpath(progs["reduction"])
    r = scaf("check", "--save", "--threads", "2", "--", progs["reduction"], env=env)
    assert r.returncode == 1, r.stdout + r.stderr
    rules_file = xdg / "scaf" / "rules"
    assert f"saved: {rules_file}:1: fixed {prog}" in r.stdout
    assert rules_file.read_text() == f"fixed {prog}\n"
    w = scaf("rules", "--which", progs["reduction"], env=env)
    assert w.returncode == 0, w.stderr
    assert w.stdout.startswith(f"{prog}: fixed, by {rules_file}:1: fixed {prog}")
    # Checked again: the layer now follows the rule, the rule is replaced, not repeated.
    r = scaf("check", "--save", "--threads", "2", "--", progs["reduction"], env=env)
    assert r.returncode == 1
    assert f"the layer's rule says: fixed — rule {rules_file}:1: fixed {prog} (decided by: rules)" in r.stdout
    assert "the layer agrees" in r.stdout
    assert rules_file.read_text() == f"fixed {prog}\n"


@pytest.mark.parametrize("how", ["fork", "exec"])
def test_save_names_the_program_that_ran_the_regions(progs: dict[str, str], tmp_path: Path,
                                                      how: str) -> None:
    # A rule is matched against the executable that runs the regions: not the script (or the
    # shell) that started it, whether it forked or exec'd the program. The layer's report
    # names that executable (its "exe"), so the rule is saved for it.
    script = tmp_path / "wrap.sh"
    script.write_text(f"#!/bin/sh\n{'exec ' if how == 'exec' else ''}{progs['reduction']}\n")
    script.chmod(0o755)
    env = clean_env(XDG_CONFIG_HOME=str(tmp_path / "xdg"))
    del env["SCAF_RULES"]
    r = scaf("check", "--save", "--threads", "2", "--", str(script), env=env)
    assert "verdict: not malleable" in r.stdout
    assert r.returncode == 1, r.stdout + r.stderr
    assert (tmp_path / "xdg" / "scaf" / "rules").read_text() == f"fixed {os.path.realpath(progs['reduction'])}\n"


def test_save_without_a_verdict_saves_nothing(tmp_path: Path) -> None:
    env = clean_env(XDG_CONFIG_HOME=str(tmp_path))
    del env["SCAF_RULES"]
    r = scaf("check", "--save", "--", "true", env=env)
    assert r.returncode == 4
    assert "--save: nothing saved (no verdict)" in r.stdout
    assert not (tmp_path / "scaf").exists()


def test_keep(tmp_path: Path) -> None:
    r = scaf("check", "--keep", "--seeds", "1", "--threads", "2", "--ignore", "^name=", "--", wl("ep"),
             "--size", "S")
    assert r.returncode == 0, r.stdout + r.stderr
    m = re.search(r"outputs of each run kept in (/\S+)", r.stdout)
    assert m, r.stdout
    kept = Path(m.group(1))
    try:
        names = {p.name for p in kept.iterdir()}
        for run in ("plain-1", "plain-2", "seed-1", "auto"):
            assert {f"{run}.stdout", f"{run}.stderr", f"{run}.exit"} <= names, names
        assert "seed-1.report.jsonl" in names
        assert (kept / "plain-1.stdout").read_text().startswith("checksum=")
        rep = json.loads((kept / "seed-1.report.jsonl").read_text().splitlines()[0])
        assert rep["source"] == "check"
    finally:
        shutil.rmtree(kept, ignore_errors=True)


# ---- usage and scaf's own failures -------------------------------------------------------------


@pytest.mark.parametrize(("args", "message"), [
    ([], "no program given"),
    (["--"], "no program given"),
    (["--seeds", "0", "--", "true"], "--seeds must be at least 1"),
    (["--threads", "0", "--", "true"], "--threads must be at least 1"),
    (["--timeout", "0", "--", "true"], "--timeout must be more than 0"),
    (["--ignore", "(", "--", "true"], "is not a regular expression"),
    (["--", "no-such-program-xyz"], "no-such-program-xyz: command not found"),
    (["--", "/nonexistent/prog"], "No such file or directory"),
    (["--bogus", "--", "true"], "unrecognized arguments"),
])
def test_usage_errors_exit_2(args: list[str], message: str) -> None:
    r = scaf("check", *args)
    assert r.returncode == 2, r
    assert message in r.stderr
    assert r.stdout == ""


def test_missing_build_exits_125(tmp_path: Path) -> None:
    r = scaf("check", "--", "true", env=clean_env(SCAF_BUILD=str(tmp_path)))
    assert r.returncode == 125
    assert "missing; run make" in r.stderr


def test_check_help() -> None:
    r = scaf("check", "--help")
    assert r.returncode == 0 and r.stderr == ""
    assert r.stdout.startswith("usage: scaf check")
    for want in ("exit status:", "examples:", "ONE input", "Identical output does not prove",
                 "reduction", "--threads", "--ignore", "--save", "125"):
        assert want in r.stdout, want
    for code in ("0 ", "1 ", "2 ", "3 ", "4 ", "125 "):
        assert f"\n  {code}" in r.stdout, code


# ---- scaf run --malleable / --fixed -------------------------------------------------------------


def test_run_malleable_and_fixed_conflict_exit_2() -> None:
    r = scaf("run", "--no-start", "--malleable", "--fixed", "--", "true")
    assert r.returncode == 2
    assert "not allowed with argument" in r.stderr


@pytest.mark.parametrize(("flag", "value"), [("--malleable", "yes"), ("--fixed", "no"), (None, "")])
def test_run_sets_scaf_malleable(flag: str | None, value: str) -> None:
    args = ["run", "--no-start", *([flag] if flag else []), "--", "sh", "-c", 'echo "[$SCAF_MALLEABLE]"']
    r = scaf(*args)
    assert r.returncode == 0, r.stderr
    assert r.stdout == f"[{value}]\n"


def test_run_help_explains_fixed() -> None:
    r = scaf("run", "--help")
    assert "--malleable | --fixed" in r.stdout
    assert "bitwise" in r.stdout and "reduction" in r.stdout
    assert "SCAF_MALLEABLE" in r.stdout


def test_run_fixed_reaches_the_layer(scafd: Daemon, tmp_path: Path) -> None:
    report = tmp_path / "report.jsonl"
    env = clean_env(SCAF_SOCKET=scafd.socket, SCAF_REPORT=str(report))
    r = scaf("run", "--fixed", "--", wl("ep"), "--size", "S", env=env)
    assert r.returncode == 0, r.stderr
    rep = json.loads(report.read_text().splitlines()[0])
    assert (rep["verdict"], rep["source"]) == ("fixed", "user"), rep
    assert rep["teams"] == [max(rep["teams"])]  # one team size throughout


# ---- scaf status shows the verdicts ---------------------------------------------------------------


def test_status_shows_verdict_and_reason(scafd: Daemon, progs: dict[str, str]) -> None:
    procs = [subprocess.Popen([progs["parked"]], env=layer_env(scafd.socket, extra), stdout=subprocess.DEVNULL)
             for extra in ({}, {"SCAF_MALLEABLE": "yes"})]
    try:
        # The region count is published as a region starts, the verdict when the layer has judged
        # it: wait for both, with room for a busy machine.
        st = scafd.wait_for(lambda s: len(s["clients"]) == 2 and all(c.get("regions", 0) > 0
                                                                    and c.get("verdict") != "undecided"
                                                                    for c in s["clients"]),
                            timeout=60, what="two clients that ran a region and were judged")
        by_pid = {c["pid"]: c for c in st["clients"]}
        assert by_pid[procs[0].pid]["verdict"] == "fixed"
        r = scaf("status", "--socket", scafd.socket)
        assert r.returncode == 0, r.stderr
        assert "MALLEABLE" in r.stdout and "BY" in r.stdout
        rows = {int(ln.split()[0]): ln.split() for ln in r.stdout.splitlines() if ln.split()[:1]
                and ln.split()[0].isdigit()}
        assert rows[procs[0].pid][4:6] == ["no", "evidence"], rows
        assert rows[procs[1].pid][4:6] == ["yes", "user"], rows
        assert "why:" not in r.stdout
        v = scaf("status", "-v", "--socket", scafd.socket)
        assert f"{procs[0].pid} parked: fixed (by evidence): region parked" in v.stdout, v.stdout
        assert "numbers threads; omp_set_num_threads(2) outside regions" in v.stdout, v.stdout
        assert f"{procs[1].pid} parked: malleable (by user): SCAF_MALLEABLE=yes" in v.stdout
        j = json.loads(scaf("status", "--json", "--socket", scafd.socket).stdout)
        assert {c["pid"]: c["verdict_source"] for c in j["clients"]} == {procs[0].pid: "evidence",
                                                                         procs[1].pid: "user"}
    finally:
        for p in procs:
            p.kill()
            p.wait()
