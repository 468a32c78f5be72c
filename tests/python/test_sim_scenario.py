"""Scenario files: the shipped ones load; each kind of invalid one names its field and line."""

from __future__ import annotations

import pytest
from scaf.lib.sim import scenario
from scaf.lib.sim.scenario import ScenarioError, key_lines, parse

BASE = """\
[scenario]
name = "t"
description = "two programs"

[machine]
contexts = 36
smt = 1

[[program]]
name = "cg"
work_s = 600.0
region_s = 0.02
curve = { kind = "amdahl", parallel_fraction = 0.993 }

[[program]]
name = "lu"
work_s = 450.0
arrival_s = 5
curve = { kind = "usl", sigma = 0.02, kappa = 0.0001 }

[expect.speedup]
sum_speedup = 31.2
cg = 23.2
"""


def line_of(text: str, needle: str, nth: int = 1) -> int:
    seen = 0
    for no, line in enumerate(text.splitlines(), start=1):
        if needle in line:
            seen += 1
            if seen == nth:
                return no
    raise AssertionError(f"{needle!r} not in text")


def error(text: str) -> ScenarioError:
    with pytest.raises(ScenarioError) as ei:
        parse(text, "bad.toml")
    return ei.value


def test_base_is_valid() -> None:
    sc = parse(BASE, "t.toml")
    assert [p.name for p in sc.programs] == ["cg", "lu"]
    assert sc.programs[0].threads == 36 and sc.programs[1].arrival_s == 5.0
    assert sc.machine.effective_chunk == 1
    assert sc.expect == {"speedup": {"sum_speedup": 31.2, "cg": 23.2}}


@pytest.mark.parametrize("path", scenario.shipped(), ids=lambda p: p.stem)
def test_shipped_scenarios_load_and_say_where_numbers_come_from(path) -> None:  # type: ignore[no-untyped-def]
    sc = scenario.load(path.stem)
    assert sc.name == path.stem
    assert sc.description and len(sc.source) > 80
    assert sc.programs and all(p.work_s > 0 for p in sc.programs)
    if sc.expect:
        assert sc.expect_source


def test_the_four_issue_scenarios_ship() -> None:
    assert {p.stem for p in scenario.shipped()} >= {"cg-lu-36", "three-way-64", "smt-pair-16", "arrivals"}
    assert scenario.load("smt-pair-16").machine.effective_chunk == 2
    assert scenario.load("cg-lu-36").expect["speedup"] == {"sum_speedup": 31.2, "cg": 23.2, "lu": 8.0}


def test_missing_field_names_field_and_table_line() -> None:
    text = BASE.replace('work_s = 450.0\n', "")
    e = error(text)
    assert e.field == "program[2].work_s"
    assert e.line == line_of(text, "[[program]]", 2)
    assert "missing" in str(e) and str(e).startswith(f"bad.toml:{e.line}: program[2].work_s")


def test_wrong_type_names_field_and_line() -> None:
    text = BASE.replace("contexts = 36", 'contexts = "36"')
    e = error(text)
    assert (e.field, e.line) == ("machine.contexts", line_of(text, "contexts ="))
    assert "integer" in e.message


def test_bool_is_not_a_number() -> None:
    text = BASE.replace("arrival_s = 5", "arrival_s = true")
    e = error(text)
    assert (e.field, e.line) == ("program[2].arrival_s", line_of(text, "arrival_s"))


def test_negative_work_names_field_and_line() -> None:
    text = BASE.replace("work_s = 600.0", "work_s = -5")
    e = error(text)
    assert (e.field, e.line) == ("program[1].work_s", line_of(text, "work_s = -5"))
    assert "> 0" in e.message


def test_unknown_curve_kind_inline_table() -> None:
    text = BASE.replace('kind = "usl"', 'kind = "cubic"')
    e = error(text)
    assert (e.field, e.line) == ("program[2].curve.kind", line_of(text, "cubic"))
    assert "amdahl" in e.message


def test_unknown_curve_kind_in_a_subtable() -> None:
    text = BASE.replace('curve = { kind = "usl", sigma = 0.02, kappa = 0.0001 }\n', "") + (
        '\n[program.curve]\nkind = "spline"\n'
    )
    # a [program.curve] table belongs to the last [[program]] above it
    text = text.replace("[expect.speedup]\nsum_speedup = 31.2\ncg = 23.2\n", "")
    e = error(text)
    assert (e.field, e.line) == ("program[2].curve.kind", line_of(text, "spline"))


def test_bad_toml_syntax_names_line_and_key() -> None:
    text = BASE.replace("region_s = 0.02", "region_s = 0.02.5")
    e = error(text)
    assert e.line == line_of(text, "0.02.5")
    assert e.field == "region_s" and "syntax" in e.message


def test_unknown_key_is_a_typo_not_ignored() -> None:
    text = BASE.replace("arrival_s = 5", "arival_s = 5")
    e = error(text)
    assert (e.field, e.line) == ("program[2].arival_s", line_of(text, "arival_s"))
    assert "arrival_s" in e.message


def test_duplicate_names() -> None:
    text = BASE.replace('name = "lu"', 'name = "cg"')
    e = error(text)
    assert (e.field, e.line) == ("program[2].name", line_of(text, 'name = "cg"', 2))


def test_points_must_increase() -> None:
    text = BASE.replace('{ kind = "usl", sigma = 0.02, kappa = 0.0001 }', '{ kind = "points", points = [[4, 3], [2, 2]] }')
    e = error(text)
    assert e.field == "program[2].curve.points" and e.line == line_of(text, "points =")
    assert "increase" in e.message


def test_fraction_out_of_range() -> None:
    e = error(BASE.replace("parallel_fraction = 0.993", "parallel_fraction = 1.5"))
    assert e.field == "program[1].curve.parallel_fraction" and "<= 1" in e.message


def test_threads_beyond_machine() -> None:
    text = BASE.replace("region_s = 0.02", "region_s = 0.02\nthreads = 64")
    e = error(text)
    assert (e.field, e.line) == ("program[1].threads", line_of(text, "threads = 64"))


def test_expect_unknown_config_and_program() -> None:
    e = error(BASE.replace("[expect.speedup]", "[expect.fastest]"))
    assert e.field == "expect.fastest" and e.line == line_of(BASE, "[expect.speedup]")
    text = BASE.replace("cg = 23.2", "ft = 23.2")
    e = error(text)
    assert (e.field, e.line) == ("expect.speedup.ft", line_of(text, "ft = 23.2"))


def test_missing_tables() -> None:
    e = error(BASE.replace("[machine]\ncontexts = 36\nsmt = 1\n", ""))
    assert e.field == "machine" and "missing" in e.message
    e = error(BASE.split("[[program]]")[0])
    assert e.field == "program" and "at least one" in e.message


def test_smt_must_divide_contexts() -> None:
    e = error(BASE.replace("smt = 1", "smt = 5"))
    assert e.field == "machine.smt" and e.line == 7


def test_key_lines_scanner() -> None:
    lines = key_lines(BASE)
    assert lines[("program", 0, "curve", "kind")] == line_of(BASE, 'kind = "amdahl"')
    assert lines[("program", 1, "arrival_s")] == line_of(BASE, "arrival_s")
    assert lines[("expect", "speedup", "cg")] == line_of(BASE, "cg = 23.2")
    assert lines[("machine",)] == 5


def test_unknown_name_and_missing_file() -> None:
    with pytest.raises(ScenarioError, match="no shipped scenario"):
        scenario.load("no-such-scenario")
    with pytest.raises(ScenarioError, match="no such file"):
        scenario.load("/nonexistent/x.toml")


PHASED = """\
[machine]
contexts = 16

[[program]]
name = "p"
work_s = 100.0
phases = [
  { until_s = 20.0, curve = { kind = "amdahl", parallel_fraction = 0.5 } },
  { until_s = 60.0, curve = { kind = "usl", sigma = 0.1, kappa = 0.01 } },
  { curve = { kind = "amdahl", parallel_fraction = 0.99 } },
]
"""


def test_phases_parse_into_curves_and_bounds() -> None:
    p = parse(PHASED, "ph.toml").programs[0]
    assert [c.kind for c in p.curves()] == ["amdahl", "usl", "amdahl"]
    assert p.bounds() == [20.0, 60.0]
    assert p.curve == p.curves()[0]
    # The array-of-tables spelling is the same scenario.
    tables = PHASED.split("phases")[0] + """\
[[program.phases]]
until_s = 20.0
curve = { kind = "amdahl", parallel_fraction = 0.5 }
[[program.phases]]
until_s = 60.0
[program.phases.curve]
kind = "usl"
sigma = 0.1
kappa = 0.01
[[program.phases]]
curve = { kind = "amdahl", parallel_fraction = 0.99 }
"""
    assert parse(tables, "ph.toml").programs[0] == p
    # One phase is the same as a plain curve.
    one = PHASED.split("phases")[0] + 'phases = [{ curve = { kind = "amdahl", parallel_fraction = 0.99 } }]\n'
    q = parse(one, "one.toml").programs[0]
    assert q.phases == () and q.curve.parallel_fraction == 0.99


@pytest.mark.parametrize(("change", "field", "message"), [
    (("until_s = 60.0", "until_s = 10.0"), "program[1].phases[2].until_s",
     "must be more than the previous phase's until_s (20), got 10"),
    (("until_s = 60.0", "until_s = 100.0"), "program[1].phases[2].until_s",
     "must be less than the program's work_s (100), got 100"),
    (("until_s = 20.0", "until_s = -1.0"), "program[1].phases[1].until_s", "must be > 0, got -1.0"),
    (("{ until_s = 60.0, curve", "{ curve"), "program[1].phases[2].until_s", "missing (required, a number)"),
    (("{ curve = { kind = \"amdahl\", parallel_fraction = 0.99 } }",
      "{ until_s = 90.0, curve = { kind = \"amdahl\", parallel_fraction = 0.99 } }"),
     "program[1].phases[3].until_s", "the last phase runs to the end of the work: leave until_s out"),
    (("kind = \"usl\"", "kind = \"cubic\""), "program[1].phases[2].curve.kind", "unknown curve kind 'cubic'"),
    (("sigma = 0.1", "sigma = 2.0"), "program[1].phases[2].curve.sigma", "must be <= 1, got 2.0"),
    (("{ until_s = 60.0, curve", "{ until = 60.0, curve"), "program[1].phases[2].until", "unknown key"),
    (("{ until_s = 60.0, curve = { kind = \"usl\", sigma = 0.1, kappa = 0.01 } }", "{ until_s = 60.0 }"),
     "program[1].phases[2].curve", "missing table (required)"),
    (("{ until_s = 20.0, curve", "7, { until_s = 20.0, curve"), "program[1].phases[1]", "must be a table"),
    (("work_s = 100.0", "work_s = 100.0\ncurve = { kind = \"amdahl\", parallel_fraction = 0.9 }"),
     "program[1].phases", "give either curve (one for the whole run) or phases, not both"),
])
def test_bad_phases_name_the_field_and_line(change: tuple[str, str], field: str, message: str) -> None:
    text = PHASED.replace(*change)
    assert text != PHASED
    e = error(text)
    assert e.field == field and message in e.message, str(e)
    assert e.line == line_of(text, "phases =") and str(e).startswith(f"bad.toml:{e.line}: {field}: ")


def test_empty_phases() -> None:
    text = PHASED.split("phases")[0] + "phases = []\n"
    e = error(text)
    assert e.field == "program[1].phases" and "non-empty array" in e.message and e.line == line_of(text, "phases")
