"""scaf run's start team, scaf forget and scaf check's record, as subprocesses (stdout, stderr, exit status),
against a scripted daemon that answers the memory requests (tests/support/memoryd.py).

What needs the daemon's real store (a verdict remembered at a departure, then recalled by the next run) is
tested with the daemon; here the commands' side: what they ask, with which key, and what they do with each
answer.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import SCAF, short_tmpdir
from scaf.lib import paths, progkey, proto
from support.memoryd import Answer, Memoryd
from test_layer_memory import build_pertd

SH = shutil.which("sh") or "/bin/sh"
# What the program was started with: /proc/PID/environ (the layer preloaded in sh takes SCAF_START_TEAM out of
# the environment its own children inherit: the count is this program's, not theirs).
SHOW = ("e=$(tr '\\0' '\\n' < /proc/$$/environ); g() { printf '%s\\n' \"$e\" | sed -n \"s/^$1=//p\"; }; "
        'echo "OMP=$(g OMP_NUM_THREADS) START=$(g SCAF_START_TEAM) MEM=$(g SCAF_MEMORY)"')
CPUS = len(os.sched_getaffinity(0))
FIXED_REMEMBERED = Answer(proto.MEMORY_OK, runs=3, verdict=proto.VERDICT_FIXED, source=proto.SOURCE_EVIDENCE,
                          start_team=1)


@pytest.fixture
def memd() -> Iterator[Memoryd]:
    d = Memoryd(os.path.join(short_tmpdir(), "memd.sock"))
    yield d
    d.close()


def env(**kw: str) -> dict[str, str]:
    """This environment without the settings that would change what a test means; no rules files."""
    e = {k: v for k, v in os.environ.items()
         if not k.startswith("SCAF_") and k not in ("OMP_NUM_THREADS", "LD_PRELOAD")}
    e["SCAF_RULES"] = ""
    if "SCAF_BUILD" in os.environ:
        e["SCAF_BUILD"] = os.environ["SCAF_BUILD"]
    e.update(kw)
    return e


def scaf(*args: str, environ: dict[str, str] | None = None, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(SCAF), *args], capture_output=True, text=True, env=environ or env(),
                          timeout=timeout, check=False)


def shown(out: str) -> dict[str, str]:
    line = next(ln for ln in out.splitlines() if ln.startswith("OMP="))
    return {k: v or "unset" for k, v in (kv.split("=", 1) for kv in line.split())}


def sh_key() -> int:
    return progkey.of_command(SH, ["sh", "-c", SHOW]).key


needs_two = pytest.mark.skipif(CPUS < 2, reason="a start team below the program's count needs 2 CPUs")


# ---- scaf run ----


@needs_two
@pytest.mark.parametrize(("case", "answer", "flags", "exported"), [
    ("remembered fixed", FIXED_REMEMBERED, [], "1"),
    ("fixed by scaf check", Answer(proto.MEMORY_OK, 2, proto.VERDICT_FIXED, proto.SOURCE_CHECK, 1), [], "1"),
    ("remembered malleable", Answer(proto.MEMORY_OK, 3, proto.VERDICT_MALLEABLE, proto.SOURCE_EVIDENCE, 1), [], None),
    # Steered as a `malleable` rule would be: it starts with the whole machine (docs/memory.md).
    ("malleable by scaf check", Answer(proto.MEMORY_OK, 1, proto.VERDICT_MALLEABLE, proto.SOURCE_CHECK, 1), [], None),
    ("a user's verdict remembered", Answer(proto.MEMORY_OK, 3, proto.VERDICT_FIXED, proto.SOURCE_USER, 1), [], None),
    ("nothing remembered", Answer(proto.MEMORY_UNKNOWN, start_team=1), [], None),
    ("nothing remembered, --fixed", Answer(proto.MEMORY_UNKNOWN, start_team=1), ["--fixed"], "1"),
    ("no start team offered", Answer(proto.MEMORY_OK, 3, proto.VERDICT_FIXED, proto.SOURCE_EVIDENCE, 0), [], None),
    ("share not below the count",
     Answer(proto.MEMORY_OK, 3, proto.VERDICT_FIXED, proto.SOURCE_EVIDENCE, CPUS), [], None),
    ("a daemon without memory", Answer(proto.MEMORY_OFF), [], None),
])
def test_run_exports_the_start_team_only_when_the_recall_says_so(
        case: str, answer: Answer, flags: list[str], exported: str | None, memd: Memoryd) -> None:
    memd.answers[proto.MEMORY_RECALL] = answer
    r = scaf("run", "--socket", memd.path, "--no-start", *flags, "--", SH, "-c", SHOW)
    assert r.returncode == 0, r.stderr
    got = shown(r.stdout)
    assert got["OMP"] == (exported or "unset") and got["START"] == (exported or "unset"), (case, r.stdout)
    assert r.stderr == "", r.stderr  # silent without --verbose, whatever the answer
    assert len(memd.asked) == 1
    asked = memd.asked[0]
    assert asked.op == proto.MEMORY_RECALL and asked.key == sh_key() and asked.max_threads == CPUS


@needs_two
def test_run_verbose_says_what_it_decided(memd: Memoryd) -> None:
    memd.answers[proto.MEMORY_RECALL] = FIXED_REMEMBERED
    r = scaf("run", "--socket", memd.path, "--no-start", "--verbose", "--", SH, "-c", SHOW)
    assert r.returncode == 0 and shown(r.stdout)["OMP"] == "1", r.stderr
    name = progkey.of_command(SH, ["sh"]).name
    assert (f"scaf: {name} starts with 1 of {CPUS} threads (OMP_NUM_THREADS=1): remembered fixed from 3 runs; "
            "it keeps them") in r.stderr, r.stderr
    memd.answers[proto.MEMORY_RECALL] = Answer(proto.MEMORY_OFF)
    r = scaf("run", "--socket", memd.path, "--no-start", "-v", "--", SH, "-c", SHOW)
    assert f"scaf: {name} starts with its own count ({CPUS}): the daemon on {memd.path} keeps no memory" in r.stderr
    memd.answers[proto.MEMORY_RECALL] = Answer(proto.MEMORY_OK, 1, proto.VERDICT_MALLEABLE, proto.SOURCE_CHECK, 1)
    r = scaf("run", "--socket", memd.path, "--no-start", "--verbose", "--", SH, "-c", SHOW)
    assert (f"scaf: {name} starts with its own count ({CPUS}): remembered malleable by scaf check: steered from its "
            "first region") in r.stderr, r.stderr


@pytest.mark.parametrize(("case", "flags", "extra", "want"), [
    ("the user's OMP_NUM_THREADS", [], {"OMP_NUM_THREADS": "2"}, {"OMP": "2", "START": "unset", "MEM": "unset"}),
    ("--no-memory", ["--no-memory"], {}, {"OMP": "unset", "START": "unset", "MEM": "0"}),
    ("SCAF_MEMORY=0", [], {"SCAF_MEMORY": "0"}, {"OMP": "unset", "START": "unset", "MEM": "0"}),
    ("--malleable", ["--malleable"], {}, {"OMP": "unset", "START": "unset", "MEM": "unset"}),
    ("a malleable rule", [], {"SCAF_RULES": "RULES"}, {"OMP": "unset", "START": "unset", "MEM": "unset"}),
])
def test_run_starts_no_openmp_team_when_the_count_is_not_its_to_choose(
        case: str, flags: list[str], extra: dict[str, str], want: dict[str, str], memd: Memoryd,
        tmp_path: os.PathLike[str]) -> None:
    """The daemon is asked all the same, for the share the program's other runtimes start with (docs/runtimes.md);
    without the memory, under key 0, which names no program."""
    memd.answers[proto.MEMORY_RECALL] = FIXED_REMEMBERED
    if extra.get("SCAF_RULES") == "RULES":
        rules = os.path.join(tmp_path, "rules")
        with open(rules, "w") as f:
            f.write(f"malleable {os.path.basename(os.path.realpath(SH))}\n")
        extra = {"SCAF_RULES": rules}
    r = scaf("run", "--socket", memd.path, "--no-start", *flags, "--", SH, "-c", SHOW, environ=env(**extra))
    assert r.returncode == 0, r.stderr
    assert shown(r.stdout) == want, (case, r.stdout)
    assert len(memd.asked) == 1 and memd.asked[0].op == proto.MEMORY_RECALL, (case, memd.asked)
    assert (memd.asked[0].key == 0) == (want["MEM"] == "0"), (case, memd.asked)


@needs_two
def test_run_against_an_older_daemon_starts_as_before(memd: Memoryd) -> None:
    memd.refuse = True
    r = scaf("run", "--socket", memd.path, "--no-start", "--", SH, "-c", SHOW)
    assert r.returncode == 0 and shown(r.stdout)["OMP"] == "unset" and r.stderr == "", r.stderr
    r = scaf("run", "--socket", memd.path, "--no-start", "--verbose", "--", SH, "-c", SHOW)
    assert "refused: scafd speaks protocol 5" in r.stderr, r.stderr


def test_run_without_a_daemon_starts_as_before() -> None:
    nosock = os.path.join(short_tmpdir(), "none.sock")
    r = scaf("run", "--socket", nosock, "--no-start", "--", SH, "-c", SHOW)
    assert r.returncode == 0 and shown(r.stdout)["OMP"] == "unset" and r.stderr == "", r.stderr


@needs_two
def test_run_names_a_script_as_its_interpreter_running_it(memd: Memoryd, tmp_path: os.PathLike[str]) -> None:
    """A `#!` script: the key is the interpreter's with the script, the one the layer's HELLO will carry."""
    memd.answers[proto.MEMORY_RECALL] = FIXED_REMEMBERED
    script = os.path.join(tmp_path, "show.sh")
    with open(script, "w") as f:
        f.write(f"#!{SH}\n{SHOW}\n")
    os.chmod(script, 0o755)
    r = scaf("run", "--socket", memd.path, "--no-start", "--", script)
    assert r.returncode == 0 and shown(r.stdout)["OMP"] == "1", r.stderr
    assert memd.asked[0].key == progkey.key_of(SH, [SH, script]).key


@needs_two
@pytest.mark.parametrize(("case", "script", "want"), [
    # dash execs the last command of -c: pertd is the process scaf run started, as R is after Rscript's exec.
    ("exec'd by a launcher", "exec {pertd} 3", {"max": "1", "env": "1", "procs": "1"}),
    # A command before another one runs as sh's child: a program the started program starts. It sees
    # OMP_NUM_THREADS=1 as any user's, and nothing keeps its count of processors to a share.
    ("started by the program", "{pertd} 3; true", {"max": "1", "env": "1", "procs": str(CPUS)}),
])
def test_run_starts_with_its_share_the_program_it_starts_through_its_execs(
        case: str, script: str, want: dict[str, str], memd: Memoryd, tmp_path: Path) -> None:
    memd.answers[proto.MEMORY_RECALL] = FIXED_REMEMBERED
    pertd = build_pertd("gomp", tmp_path)
    r = scaf("run", "--socket", memd.path, "--no-start", "--", SH, "-c", script.format(pertd=pertd))
    assert r.returncode == 0, r.stderr
    got = dict(kv.split("=", 1) for kv in r.stdout.split() if kv.split("=")[0] in want)
    assert got == want, (case, r.stdout, r.stderr)


PY_SHOW = "import os; print(' '.join(f'{v}={os.environ.get(v, \"unset\")}' for v in ('OMP_NUM_THREADS', " \
          "'OPENBLAS_NUM_THREADS')))"


@needs_two
@pytest.mark.parametrize(("case", "answer", "extra", "want"), [
    # A static split's OMP_NUM_THREADS=1 reaches OpenBLAS too: the pool count scaf run sets for a Python
    # program's workers must not give the fixed process's own OpenBLAS the whole machine.
    ("started with its share", FIXED_REMEMBERED, {}, {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}),
    ("its own count", Answer(proto.MEMORY_UNKNOWN, start_team=1), {},
     {"OMP_NUM_THREADS": str(CPUS), "OPENBLAS_NUM_THREADS": str(CPUS)}),
    ("the user's OpenBLAS count stands", FIXED_REMEMBERED, {"OPENBLAS_NUM_THREADS": "2"},
     {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "2"}),
])
def test_run_gives_a_python_program_started_with_its_share_the_same_blas_count(
        case: str, answer: Answer, extra: dict[str, str], want: dict[str, str], memd: Memoryd) -> None:
    memd.answers[proto.MEMORY_RECALL] = answer
    r = scaf("run", "--socket", memd.path, "--no-start", "--", sys.executable, "-c", PY_SHOW, environ=env(**extra))
    assert r.returncode == 0, r.stderr
    got = dict(kv.split("=", 1) for kv in r.stdout.split())
    assert got == want, (case, r.stdout)


# ---- scaf forget ----


@pytest.mark.parametrize(("answer", "code", "out", "err"), [
    (Answer(proto.MEMORY_OK), 0, "forgot {name}\n", ""),
    (Answer(proto.MEMORY_UNKNOWN), 1, "nothing remembered of {name}\n", ""),
    (Answer(proto.MEMORY_OFF), 3, "", "keeps no memory (scafd --no-memory): nothing to forget"),
    (Answer(proto.MEMORY_FAILED), 125, "", "could not forget"),
])
def test_forget_one_program(answer: Answer, code: int, out: str, err: str, memd: Memoryd) -> None:
    memd.answers[proto.MEMORY_FORGET] = answer
    r = scaf("forget", "--socket", memd.path, "--", SH, "-c", SHOW)
    name = progkey.of_command(SH, ["sh"]).name
    assert r.returncode == code, r.stdout + r.stderr
    assert r.stdout == out.format(name=name)
    assert err in r.stderr
    assert [(a.op, a.key) for a in memd.asked] == [(proto.MEMORY_FORGET, sh_key())]


def test_forget_everything(memd: Memoryd) -> None:
    memd.answers[proto.MEMORY_FORGET] = Answer(proto.MEMORY_OK, forgotten=3)
    r = scaf("forget", "--socket", memd.path)
    assert r.returncode == 0 and r.stdout == "forgot 3 programs\n" and r.stderr == "", r.stderr
    assert [(a.op, a.key) for a in memd.asked] == [(proto.MEMORY_FORGET, 0)]


def test_forget_errors(memd: Memoryd) -> None:
    nosock = os.path.join(short_tmpdir(), "none.sock")
    r = scaf("forget", "--socket", nosock, "--", SH)
    assert r.returncode == 4 and f"no daemon answers on {nosock}" in r.stderr, r.stderr
    r = scaf("forget", "--socket", memd.path, "--", "/nonexistent/prog")
    assert r.returncode == 2 and "usage: scaf forget" in r.stderr and "No such file" in r.stderr, r.stderr
    memd.refuse = True
    r = scaf("forget", "--socket", memd.path, "--", SH)
    assert r.returncode == 3 and "protocol 5" in r.stderr, r.stderr
    assert memd.asked and all(a.op == proto.MEMORY_FORGET for a in memd.asked)


# ---- scaf check ----


@needs_two
def test_check_records_its_verdict(memd: Memoryd) -> None:
    split = str(paths.workload("split"))
    r = scaf("check", "--seeds", "1", "--ignore", "time_s", "--", split, "--size", "S", environ=env(SCAF_SOCKET=memd.path))
    assert r.returncode == 1, r.stdout + r.stderr  # not malleable
    name = progkey.key_of(split, [split]).name
    assert f"remembered: {name} fixed (scaf run starts it with its share from now on" in r.stdout, r.stdout
    assert [(a.op, a.key, a.verdict, a.name) for a in memd.asked] == [
        (proto.MEMORY_REMEMBER, progkey.key_of(split, [split]).key, proto.VERDICT_FIXED, name)]
    # --no-memory: nothing asked; the check's own runs never asked anything either.
    memd.asked.clear()
    r = scaf("check", "--seeds", "1", "--ignore", "time_s", "--no-memory", "--", split, "--size", "S",
             environ=env(SCAF_SOCKET=memd.path))
    assert r.returncode == 1 and "remembered" not in r.stdout and memd.asked == [], r.stdout + r.stderr


@needs_two
def test_check_says_when_it_cannot_record(memd: Memoryd) -> None:
    split = str(paths.workload("split"))
    memd.answers[proto.MEMORY_REMEMBER] = Answer(proto.MEMORY_OFF)
    r = scaf("check", "--seeds", "1", "--ignore", "time_s", "--json", "--", split, "--size", "S", environ=env(SCAF_SOCKET=memd.path))
    assert r.returncode == 1, r.stdout + r.stderr
    assert f"not remembered: the daemon on {memd.path} keeps no memory" in r.stderr, r.stderr
    assert '"remembered": null' in r.stdout
