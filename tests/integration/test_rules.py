"""Rules files: the one reader (src/common/rules.c) as Python reaches it through libscaf_launch.so
(python/scaf/lib/rules.py), the layer's pick beside it, `scaf rules` as a user meets it, and the atomic
writer behind `scaf check --save`."""

from __future__ import annotations

import json
import os
import stat
import subprocess
from pathlib import Path

import pytest
from conftest import SCAF, Daemon, layer_env
from scaf.lib import paths, rules

EP = str(paths.workload("ep"))


def scaf(*args: str, env: dict[str, str] | None = None, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(SCAF), *args], capture_output=True, text=True, env=env, timeout=timeout,
                          check=False)


def clean_env(**kw: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("LD_PRELOAD", "SCAF_RULES", "SCAF_MALLEABLE", "XDG_CONFIG_HOME", "SCAF_SOCKET")}
    env.update(kw)
    return env


# ---- one line ---------------------------------------------------------------------------------

LINES = [
    (b"", None),
    (b"   \t ", None),
    (b"# a comment", None),
    (b"   # indented comment", None),
    (b"malleable ep", ("malleable", "ep")),
    (b"fixed /usr/bin/*", ("fixed", "/usr/bin/*")),
    (b"  fixed\t\tconvert*   ", ("fixed", "convert*")),
    (b"fixed ep # why: it sums per thread", ("fixed", "ep")),
    (b"fixed ep#no space before the comment", ("fixed", "ep")),
    (b"fixed ep\r", ("fixed", "ep")),  # a file with CRLF line ends
    (b"fixed", "without a pattern"),
    (b"malleable   # pattern commented out", "without a pattern"),
    (b"fixed a b", "more than one pattern"),
    (b"Fixed ep", "must be lowercase"),
    (b"MALLEABLE ep", "must be lowercase"),
    (b"steer ep", "is not 'malleable' or 'fixed'"),
    (b"fixed=ep", "is not 'malleable' or 'fixed'"),
    (b"fixed " + b"x" * 1100, "longer than 1022 bytes"),
]


@pytest.mark.parametrize(("raw", "want"), LINES, ids=[repr(r[:30]) for r, _ in LINES])
def test_parse_line(raw: bytes, want: object) -> None:
    got = rules.parse_line(raw)
    if isinstance(want, str):
        assert isinstance(got, str) and want in got, got
    else:
        assert got == want


def test_parse_file_keeps_line_numbers_and_reports_each_problem(tmp_path: Path) -> None:
    f = tmp_path / "rules"
    f.write_bytes(b"# header\n\nfixed ep\nbogus line here\nmalleable cg\nfixed\n")
    rf = rules.read_file(str(f))
    assert [(r.line, r.verdict, r.pattern) for r in rf.rules] == [(3, "fixed", "ep"), (5, "malleable", "cg")]
    assert [p.line for p in rf.problems] == [4, 6]
    assert str(rf.problems[0]).startswith(f"{f}:4: ")


def test_missing_file_is_no_rules() -> None:
    rf = rules.read_file("/nonexistent/scaf/rules")
    assert not rf.exists and rf.rules == [] and rf.problems == []


# ---- matching ----------------------------------------------------------------------------------

MATCHES = [
    # pattern, exe, matches?
    ("ep", "/opt/w/ep", True),
    ("e?", "/opt/w/ep", True),
    ("e*", "/opt/w/ep", True),
    ("ep*", "/opt/w/epsilon", True),
    ("cg", "/opt/w/ep", False),
    ("p", "/opt/w/ep", False),  # the whole basename, not a part
    ("/opt/w/ep", "/opt/w/ep", True),
    ("/opt/*", "/opt/w/ep", True),  # flags 0: * crosses '/'
    ("*/w/ep", "/opt/w/ep", True),
    ("w/ep", "/opt/w/ep", False),  # a '/' pattern must match the whole absolute path
    ("/opt/w", "/opt/w/ep", False),
    ("[[:lower:]]p", "/opt/w/ep", True),  # POSIX classes: libc, not Python's fnmatch
    ("[!a]p", "/opt/w/ep", True),
    ("[^a]p", "/opt/w/ep", True),
    ("[^e]p", "/opt/w/ep", False),
    ("e\\p", "/opt/w/ep", True),  # backslash escapes
    ("\\*", "/opt/w/*", True),
    ("\\*", "/opt/w/ep", False),
    ("EP", "/opt/w/ep", False),  # case matters
    (".bin", "/opt/w/.bin", True),
    ("*", "/opt/w/.hidden", True),  # no FNM_PERIOD
]


@pytest.mark.parametrize(("pattern", "exe", "want"), MATCHES)
def test_matches(pattern: str, exe: str, want: bool) -> None:
    assert rules.matches(rules.Rule("f", 1, "fixed", pattern), exe) is want


def test_first_match_in_file_order_then_file_order(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    a.write_text("malleable cg\nfixed e*\nmalleable ep\n")
    b.write_text("malleable ep\n")
    r = rules.find("/x/ep", {"SCAF_RULES": f"{a}:{b}"})
    assert r is not None and (r.file, r.line, r.verdict, r.pattern) == (str(a), 2, "fixed", "e*")
    r = rules.find("/x/ep", {"SCAF_RULES": f"{b}:{a}"})
    assert r is not None and (r.file, r.line, r.verdict) == (str(b), 1, "malleable")
    assert rules.find("/x/lu", {"SCAF_RULES": f"{a}:{b}"}) is None
    # The default locations, from the environment given (not this process's).
    (tmp_path / ".config" / "scaf").mkdir(parents=True)
    (tmp_path / ".config" / "scaf" / "rules").write_text("fixed lu\n")
    r = rules.find("/x/lu", {"HOME": str(tmp_path)})
    assert r is not None and r.where() == f"{tmp_path}/.config/scaf/rules:1"


# ---- bad input through the C reader ----------------------------------------------------------


def test_bad_files_through_the_c_reader(tmp_path: Path) -> None:
    """What the C reader says of files that are not rules files, as Python reads it: each a problem at line 0,
    never an exception; a dangling link is a missing file; a FIFO does not block."""
    d = tmp_path / "d"
    d.mkdir()
    rf = rules.read_file(str(d))
    assert rf.exists and not rf.rules and [str(p) for p in rf.problems] == [f"{d}: is a directory, not a rules file"]
    link = tmp_path / "dangling"
    link.symlink_to(tmp_path / "nowhere")
    rf = rules.read_file(str(link))
    assert not rf.exists and not rf.problems
    good = tmp_path / "good"
    good.write_text("fixed ep\n")
    (tmp_path / "link").symlink_to(good)
    assert [r.text() for r in rules.read_file(str(tmp_path / "link")).rules] == ["fixed ep"]
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    rf = rules.read_file(str(fifo))
    assert rf.exists and len(rf.problems) == 1 and "not a regular file" in rf.problems[0].message
    # A file with a syntax error on every line but one: each line its problem, the rule still read.
    bad = tmp_path / "bad"
    bad.write_bytes(b"fixed\nFIXED ep\nfixed ep\nfixed a b\n\xff\xfe ep\n")
    rf = rules.read_file(str(bad))
    assert [(r.line, r.pattern) for r in rf.rules] == [(3, "ep")]
    assert [p.line for p in rf.problems] == [1, 2, 4, 5]
    assert "is not 'malleable' or 'fixed'" in rf.problems[3].message
    # find() goes past the problems to the rule; the layer's search stops at the first file that speaks.
    r = rules.find("/bin/ep", {"SCAF_RULES": f"{d}:{fifo}:{link}:{bad}"})
    assert r is not None and r.where() == f"{bad}:3"


def test_non_ascii_and_odd_bytes_round_trip(tmp_path: Path) -> None:
    """A pattern of any bytes but white space and '#' reads back as written (surrogate escapes included)."""
    f = tmp_path / "rules"
    pattern = "/opt/caf\u00e9/" + os.fsdecode(b"\xff") + "*"
    assert rules.set_rule(str(f), "fixed", pattern) == 1
    rf = rules.read_file(str(f))
    assert not rf.problems and rf.rules[0].pattern == pattern
    assert rules.matches(rf.rules[0], os.fsdecode(b"/opt/caf\xc3\xa9/\xffprog"))


@pytest.mark.parametrize(("verdict", "pattern", "why"), [
    ("steer", "/opt/x", "is not 'malleable' or 'fixed'"),
    ("Fixed", "/opt/x", "must be lowercase"),
    ("fixed", "/opt/x y", "more than one pattern"),
    ("fixed", "/opt/x#y", "would not read back"),
    ("fixed", "x" * 1100, "longer than 1022 bytes"),
])
def test_set_rule_refuses_what_would_not_read_back(tmp_path: Path, verdict: str, pattern: str, why: str) -> None:
    f = tmp_path / "rules"
    f.write_text("malleable cg\n")
    with pytest.raises(ValueError, match=why):
        rules.set_rule(str(f), verdict, pattern)
    assert f.read_text() == "malleable cg\n", "a refused rule changed the file"


def test_search_path(tmp_path: Path) -> None:
    home = str(tmp_path / "home")
    assert rules.search_path({"HOME": home}) == [f"{home}/.config/scaf/rules", "/etc/scaf/rules"]
    assert rules.search_path({"HOME": home, "XDG_CONFIG_HOME": "/x/cfg"}) == ["/x/cfg/scaf/rules",
                                                                            "/etc/scaf/rules"]
    # A relative XDG_CONFIG_HOME is invalid (XDG spec) and ignored, as the layer does.
    assert rules.search_path({"HOME": home, "XDG_CONFIG_HOME": "cfg"}) == [f"{home}/.config/scaf/rules",
                                                                         "/etc/scaf/rules"]
    assert rules.search_path({}) == ["/etc/scaf/rules"]
    # SCAF_RULES replaces both; empty items are skipped; set but empty means no file.
    assert rules.search_path({"HOME": home, "SCAF_RULES": "/a::/b"}) == ["/a", "/b"]
    assert rules.search_path({"HOME": home, "SCAF_RULES": ""}) == []
    nine = [f"/r{i}" for i in range(9)]
    assert rules.search_path({"SCAF_RULES": ":".join(nine)}) == nine[:8]
    assert rules.unread_files({"SCAF_RULES": ":".join(nine)}) == nine[8:]
    assert rules.save_target({"HOME": home, "SCAF_RULES": "/a:/b"}) == "/a"
    assert rules.save_target({"HOME": home}) == f"{home}/.config/scaf/rules"


# ---- the same answers as the layer -------------------------------------------------------------


def layer_decides(daemon: Daemon, tmp_path: Path, env: dict[str, str], prog: str = EP) -> dict:
    """Run PROG under the layer and return its SCAF_REPORT line (its verdict, source and reason)."""
    report = tmp_path / f"report-{len(list(tmp_path.iterdir()))}.jsonl"
    base = layer_env(daemon.socket, {"SCAF_REPORT": str(report)})
    for k in ("SCAF_RULES", "SCAF_MALLEABLE", "XDG_CONFIG_HOME", "SCAF_CHECK_SEED"):
        base.pop(k, None)
    base.update(env)
    r = subprocess.run([prog, "--size", "S"], env=base, capture_output=True, text=True, timeout=60, check=False)
    assert r.returncode == 0, r.stdout + r.stderr
    lines = report.read_text().splitlines()
    assert len(lines) == 1, lines
    return json.loads(lines[0])


PARITY = [
    # rules files' contents (joined into SCAF_RULES), then the expected (file index, line) or None
    (["malleable e?\n"], (0, 1)),
    (["fixed */workloads/ep\n"], (0, 1)),
    (["fixed workloads/ep\nmalleable ep\n"], (0, 2)),
    (["fixed cg\n", "# nothing\nfixed ep # reason\n"], (1, 2)),
    (["fixed\nFixed ep\nfixed ep extra\nsteer ep\nmalleable ep\n"], (0, 5)),
    (["fixed [[:lower:]]p\n"], (0, 1)),
    (["malleable [^a]p\nfixed ep\n"], (0, 1)),
    (["fixed e\\p\n"], (0, 1)),
    (["fixed EP\nfixed p\nfixed /ep\n"], None),
    (["fixed cg\n", "fixed lu\n", "fixed is\n", "fixed ep\n"], (3, 1)),
    (["fixed cg\n"] * 8 + ["fixed ep\n"], None),  # a 9th file is not read
]


@pytest.mark.parametrize(("contents", "want"), PARITY, ids=[str(i) for i in range(len(PARITY))])
def test_which_rule_agrees_with_the_layer(scafd: Daemon, tmp_path: Path, contents: list[str],
                                          want: tuple[int, int] | None) -> None:
    files = []
    for i, text in enumerate(contents):
        f = tmp_path / f"rules{i}"
        f.write_text(text)
        files.append(str(f))
    env = {"SCAF_RULES": ":".join(files)}
    ours = rules.find(os.path.realpath(EP), env)
    rep = layer_decides(scafd, tmp_path, env)
    if want is None:
        assert ours is None
        assert rep["source"] != "rules", rep
        return
    assert ours is not None and (ours.file, ours.line) == (files[want[0]], want[1])
    assert rep["source"] == "rules", rep
    assert rep["reason"] == f"rule {ours.file}:{ours.line}: {ours.verdict} {ours.pattern}", rep
    assert rep["verdict"] == ours.verdict
    # And the command says the same.
    r = scaf("rules", "--which", EP, env=clean_env(SCAF_RULES=env["SCAF_RULES"]))
    assert f"{ours.verdict}, by {ours.file}:{ours.line}: {ours.verdict} {ours.pattern}" in r.stdout, r.stdout


def test_user_and_system_locations_agree_with_the_layer(scafd: Daemon, tmp_path: Path) -> None:
    xdg, home = tmp_path / "xdg", tmp_path / "home"
    (xdg / "scaf").mkdir(parents=True)
    (home / ".config" / "scaf").mkdir(parents=True)
    (xdg / "scaf" / "rules").write_text("fixed ep\n")
    (home / ".config" / "scaf" / "rules").write_text("# home\nmalleable ep\n")
    rep = layer_decides(scafd, tmp_path, {"XDG_CONFIG_HOME": str(xdg), "HOME": str(home)})
    assert rep["reason"] == f"rule {xdg}/scaf/rules:1: fixed ep", rep
    rep = layer_decides(scafd, tmp_path, {"XDG_CONFIG_HOME": "relative/cfg", "HOME": str(home)})
    assert rep["reason"] == f"rule {home}/.config/scaf/rules:2: malleable ep", rep
    r = scaf("rules", "--which", EP, env=clean_env(XDG_CONFIG_HOME="relative/cfg", HOME=str(home)))
    assert f"by {home}/.config/scaf/rules:2: malleable ep" in r.stdout, r.stdout


def test_user_word_beats_rules(scafd: Daemon, tmp_path: Path) -> None:
    f = tmp_path / "rules"
    f.write_text("fixed ep\n")
    rep = layer_decides(scafd, tmp_path, {"SCAF_RULES": str(f), "SCAF_MALLEABLE": "yes"})
    assert (rep["verdict"], rep["source"]) == ("malleable", "user"), rep
    r = scaf("rules", "--which", EP, env=clean_env(SCAF_RULES=str(f), SCAF_MALLEABLE="yes"))
    assert "SCAF_MALLEABLE=yes in this environment beats any rule" in r.stdout


# ---- scaf rules --------------------------------------------------------------------------------


def test_rules_lists_file_line_verdict_pattern(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "missing"
    a.write_text("# mine\nfixed /opt/sim/*\n\nmalleable convert*\n")
    r = scaf("rules", env=clean_env(SCAF_RULES=f"{a}:{b}"))
    assert r.returncode == 0, r.stderr
    assert r.stderr == ""
    out = r.stdout.splitlines()
    assert out[0] == f"# {a}"
    assert out[1].split() == [f"{a}:2", "fixed", "/opt/sim/*"]
    assert out[2].split() == [f"{a}:4", "malleable", "convert*"]
    assert out[3] == f"# {b}  (absent)"


def test_rules_default_locations(tmp_path: Path) -> None:
    r = scaf("rules", env=clean_env(HOME=str(tmp_path)))
    assert r.returncode == 0, r.stderr
    assert f"# {tmp_path}/.config/scaf/rules  (absent)" in r.stdout
    assert "# /etc/scaf/rules" in r.stdout


def test_rules_malformed_lines_exit_1(tmp_path: Path) -> None:
    a = tmp_path / "a"
    a.write_text("fixed ep\nFixed cg\nmalleable\nmalleable a b\n")
    for args in (["rules"], ["rules", "--which", EP]):
        r = scaf(*args, env=clean_env(SCAF_RULES=str(a)))
        assert r.returncode == 1, r
        assert f"{a}:2: 'Fixed' must be lowercase" in r.stderr
        assert f"{a}:3: 'malleable' without a pattern" in r.stderr
        assert f"{a}:4: more than one pattern" in r.stderr
        assert "3 malformed lines: the layer ignores them" in r.stderr
    # The good rule is still listed and still applies.
    assert f"{a}:1" in scaf("rules", env=clean_env(SCAF_RULES=str(a))).stdout


def test_rules_unreadable_file_exit_1(tmp_path: Path) -> None:
    r = scaf("rules", env=clean_env(SCAF_RULES=str(tmp_path)))
    assert r.returncode == 1
    assert f"{tmp_path}: is a directory" in r.stderr


def test_rules_which_resolves_through_path_and_links(tmp_path: Path) -> None:
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "myep").symlink_to(EP)
    f = tmp_path / "rules"
    f.write_text("malleable myep\nfixed ep\n")  # the layer sees the link's target: ep
    env = clean_env(SCAF_RULES=str(f), PATH=f"{bindir}:{os.environ['PATH']}")
    r = scaf("rules", "--which", "myep", env=env)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith(f"{os.path.realpath(EP)}: fixed, by {f}:2: fixed ep"), r.stdout


def test_rules_which_no_rule(tmp_path: Path) -> None:
    f = tmp_path / "rules"
    f.write_text("fixed cg\n")
    r = scaf("rules", "--which", EP, env=clean_env(SCAF_RULES=str(f)))
    assert r.returncode == 0
    assert f"{os.path.realpath(EP)}: no rule; the layer decides from evidence (searched: {f})" in r.stdout


def test_rules_which_not_found_exit_2(tmp_path: Path) -> None:
    r = scaf("rules", "--which", "no-such-program-xyz", env=clean_env(HOME=str(tmp_path)))
    assert r.returncode == 2
    assert "no-such-program-xyz: command not found" in r.stderr
    r = scaf("rules", "--which", str(tmp_path / "nope"), env=clean_env(HOME=str(tmp_path)))
    assert r.returncode == 2
    assert "No such file or directory" in r.stderr


def test_rules_too_many_files_in_scaf_rules(tmp_path: Path) -> None:
    names = [str(tmp_path / f"r{i}") for i in range(9)]
    r = scaf("rules", env=clean_env(SCAF_RULES=":".join(names)))
    assert r.returncode == 1
    assert f"{names[8]}: not read: the layer reads only the first 8 files" in r.stderr


def test_rules_help() -> None:
    r = scaf("rules", "--help")
    assert r.returncode == 0
    assert r.stdout.startswith("usage: scaf rules")
    for want in ("exit status:", "examples:", "/etc/scaf/rules", "XDG_CONFIG_HOME", "SCAF_RULES",
                 "malleable PATTERN"):
        assert want in r.stdout, want


# ---- writing -----------------------------------------------------------------------------------


def test_set_rule_creates_directories(tmp_path: Path) -> None:
    f = tmp_path / "cfg" / "scaf" / "rules"
    assert rules.set_rule(str(f), "fixed", "/opt/x") == 1
    assert f.read_text() == "fixed /opt/x\n"


def test_set_rule_keeps_other_lines_and_replaces_same_pattern(tmp_path: Path) -> None:
    f = tmp_path / "rules"
    original = "# my rules\nmalleable cg   # checked\nbogus line\nfixed /opt/x\n\n# end"
    f.write_text(original)
    os.chmod(f, 0o600)
    assert rules.set_rule(str(f), "malleable", "/opt/x") == 4
    assert f.read_text() == "# my rules\nmalleable cg   # checked\nbogus line\nmalleable /opt/x\n\n# end\n"
    assert stat.S_IMODE(f.stat().st_mode) == 0o600
    assert rules.set_rule(str(f), "fixed", "/opt/y") == 7
    assert f.read_text().endswith("# end\nfixed /opt/y\n")
    assert not [p for p in tmp_path.iterdir() if p.name != "rules"], "temporary file left behind"


def test_set_rule_goes_before_an_earlier_match(tmp_path: Path) -> None:
    f = tmp_path / "rules"
    f.write_text("malleable cg\nmalleable *\nfixed /opt/x\n")
    # `malleable *` would win over a rule appended (or left) after it: the new rule goes before it.
    assert rules.set_rule(str(f), "fixed", "/opt/x", exe="/opt/x") == 2
    assert f.read_text() == "malleable cg\nfixed /opt/x\nmalleable *\n"
    rule = rules.find("/opt/x", {"SCAF_RULES": str(f)})
    assert rule is not None and (rule.line, rule.verdict) == (2, "fixed")


@pytest.mark.parametrize("path", ["/opt/a[1]/prog", "/opt/star*/p?", "/opt/back\\slash", "/opt/with space/p",
                                  "/opt/hash#/p"])
def test_pattern_for_path_matches_that_path(tmp_path: Path, path: str) -> None:
    pat = rules.pattern_for_path(path)
    f = tmp_path / "rules"
    rules.set_rule(str(f), "fixed", pat)
    rf = rules.read_file(str(f))
    assert not rf.problems and len(rf.rules) == 1 and rf.rules[0].pattern == pat
    assert rules.matches(rf.rules[0], path)
    assert not rules.matches(rf.rules[0], "/opt/other")
