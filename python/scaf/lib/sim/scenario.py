"""Scenario files: TOML loading and validation, with errors that name the field and its line."""

from __future__ import annotations

import math
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from scaf.lib.sim.model import (
    CONFIGS,
    CURVE_KINDS,
    DEFAULT_OVERSUB_SLOWDOWN,
    DEFAULT_TAU_S,
    FIXED_BY,
    MEMORY_KINDS,
    POOL_RULES,
    TEAM_KINDS,
    Curve,
    Feedback,
    Machine,
    Phase,
    Program,
    Scenario,
)

SCENARIO_DIR = Path(__file__).resolve().parents[4] / "scenarios"
NAME_RE = re.compile(r"^[A-Za-z0-9_.+-]{1,64}$")
MAX_CONTEXTS = 4096
MAX_PROGRAMS = 1024
MAX_WORKERS = 256
MAX_TASKS = 100000


class ScenarioError(ValueError):
    """A scenario that cannot be used: names the file, the line and the field."""

    def __init__(self, file: str, line: int | None, field: str, message: str):
        self.file, self.line, self.field, self.message = file, line, field, message
        where = f"{file}:{line}" if line else file
        super().__init__(f"{where}: {field}: {message}" if field else f"{where}: {message}")


# --- where keys are in the source ------------------------------------------

_HEADER = re.compile(r"^\s*(\[\[?)\s*([^\]]+?)\s*\]\]?\s*(#.*)?$")
_KEY = re.compile(r"""^\s*((?:[A-Za-z0-9_-]+|"[^"]*"|'[^']*')(?:\s*\.\s*(?:[A-Za-z0-9_-]+|"[^"]*"|'[^']*'))*)\s*=""")
_INLINE_KEY = re.compile(r"""[{,]\s*([A-Za-z0-9_-]+|"[^"]*")\s*=""")


def _split_key(text: str) -> list[str]:
    parts = re.findall(r"""[A-Za-z0-9_-]+|"[^"]*"|'[^']*'""", text)
    return [p[1:-1] if p[:1] in "\"'" else p for p in parts]


def key_lines(source: str) -> dict[tuple, int]:
    """Map each key path (array tables indexed: ("program", 1, "work_s")) to its 1-based line.

    tomllib reports lines only for syntax errors; semantic errors find their
    line here. A light scanner, not a parser: it follows table headers, dotted
    keys and one level of inline tables, which is all the scenario format uses.
    """
    lines: dict[tuple, int] = {}
    counts: dict[tuple, int] = {}
    current: tuple = ()
    in_multiline = False
    for no, raw in enumerate(source.splitlines(), start=1):
        if in_multiline:
            if raw.count('"""') % 2 or raw.count("'''") % 2:
                in_multiline = False
            continue
        m = _HEADER.match(raw)
        if m and not _KEY.match(raw):
            parts = _split_key(m.group(2))
            path: list[Any] = []
            for i, part in enumerate(parts):
                path.append(part)
                prefix = tuple(path)
                if prefix in counts and (m.group(1) == "[" or i < len(parts) - 1):
                    path.append(counts[prefix] - 1)
            if m.group(1) == "[[":
                key = tuple(path)
                counts[key] = counts.get(key, 0) + 1
                path.append(counts[key] - 1)
            current = tuple(path)
            lines.setdefault(current, no)
            continue
        m = _KEY.match(raw)
        if m:
            path = (*current, *_split_key(m.group(1)))
            lines.setdefault(path, no)
            rest = raw[m.end():]
            if rest.lstrip().startswith("{"):
                for sub in _INLINE_KEY.finditer(rest):
                    lines.setdefault((*path, *_split_key(sub.group(1))), no)
            if rest.count('"""') % 2 or rest.count("'''") % 2:
                in_multiline = True
    return lines


# --- validation ---------------------------------------------------------------


@dataclass
class _Ctx:
    file: str
    lines: dict[tuple, int]

    def line(self, path: tuple) -> int | None:
        for n in range(len(path), 0, -1):
            if path[:n] in self.lines:
                return self.lines[path[:n]]
        return None

    def fail(self, path: tuple, message: str) -> ScenarioError:
        return ScenarioError(self.file, self.line(path), _fmt(path), message)


def _fmt(path: tuple) -> str:
    out = ""
    for p in path:
        out += f"[{p + 1}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out


_TYPES = {int: "an integer", float: "a number", str: "a string", bool: "true or false", list: "an array", dict: "a table"}


def _get(ctx: _Ctx, table: dict, path: tuple, key: str, typ: type, default: Any = ..., *,
         lo: float | None = None, hi: float | None = None, lo_open: bool = False) -> Any:
    fpath = (*path, key)
    if key not in table:
        if default is ...:
            raise ctx.fail(fpath, f"missing (required, {_TYPES[typ]})")
        return default
    v = table[key]
    ok = isinstance(v, typ) and not (typ in (int, float) and isinstance(v, bool))
    if typ is float and isinstance(v, int) and not isinstance(v, bool):
        v, ok = float(v), True
    if not ok:
        raise ctx.fail(fpath, f"must be {_TYPES[typ]}, got {type(v).__name__} {v!r}")
    if typ is float and math.isnan(v):
        raise ctx.fail(fpath, "must be a number, got nan")
    if lo is not None and (v <= lo if lo_open else v < lo):
        raise ctx.fail(fpath, f"must be {'>' if lo_open else '>='} {lo:g}, got {v!r}")
    if hi is not None and v > hi:
        raise ctx.fail(fpath, f"must be <= {hi:g}, got {v!r}")
    return v


def _table(ctx: _Ctx, doc: dict, path: tuple, key: str, required: bool) -> dict:
    if key not in doc:
        if required:
            raise ctx.fail((*path, key), "missing table (required)")
        return {}
    v = doc[key]
    if not isinstance(v, dict):
        raise ctx.fail((*path, key), f"must be a table, got {type(v).__name__}")
    return v


def _no_unknown(ctx: _Ctx, table: dict, path: tuple, allowed: set[str]) -> None:
    for k in table:
        if k not in allowed:
            raise ctx.fail((*path, k), f"unknown key (expected one of: {', '.join(sorted(allowed))})")


def _curve(ctx: _Ctx, prog: dict, path: tuple) -> Curve:
    cpath = (*path, "curve")
    c = _table(ctx, prog, path, "curve", required=True)
    kind = _get(ctx, c, cpath, "kind", str)
    if kind not in CURVE_KINDS:
        raise ctx.fail((*cpath, "kind"), f"unknown curve kind {kind!r} (expected {', '.join(CURVE_KINDS)})")
    if kind == "amdahl":
        _no_unknown(ctx, c, cpath, {"kind", "parallel_fraction"})
        return Curve(kind, parallel_fraction=_get(ctx, c, cpath, "parallel_fraction", float, lo=0.0, hi=1.0))
    if kind == "usl":
        _no_unknown(ctx, c, cpath, {"kind", "sigma", "kappa"})
        return Curve(kind, sigma=_get(ctx, c, cpath, "sigma", float, lo=0.0, hi=1.0),
                     kappa=_get(ctx, c, cpath, "kappa", float, 0.0, lo=0.0, hi=1.0))
    _no_unknown(ctx, c, cpath, {"kind", "points"})
    pts = _get(ctx, c, cpath, "points", list)
    ppath = (*cpath, "points")
    if not pts:
        raise ctx.fail(ppath, "needs at least one [threads, speedup] pair")
    out: list[tuple[float, float]] = []
    for i, pt in enumerate(pts):
        if (not isinstance(pt, list) or len(pt) != 2
                or any(isinstance(x, bool) or not isinstance(x, int | float) for x in pt)):
            raise ctx.fail(ppath, f"entry {i + 1} must be [threads, speedup] (two numbers), got {pt!r}")
        x, y = float(pt[0]), float(pt[1])
        if not (x >= 1 and y > 0) or math.isnan(x) or math.isnan(y):
            raise ctx.fail(ppath, f"entry {i + 1}: threads must be >= 1 and speedup > 0, got {pt!r}")
        if out and x <= out[-1][0]:
            raise ctx.fail(ppath, f"entry {i + 1}: threads must increase, got {x:g} after {out[-1][0]:g}")
        out.append((x, y))
    return Curve(kind, points=tuple(out))


def _phases(ctx: _Ctx, prog: dict, path: tuple, work_s: float) -> tuple[Phase, ...]:
    """`phases = [{ until_s = W, curve = {...} }, ..., { curve = {...} }]`: the curve changes when the
    program's serial work done reaches each until_s; the last phase runs to the end."""
    ppath = (*path, "phases")
    phases = prog["phases"]
    if not isinstance(phases, list) or not phases:
        raise ctx.fail(ppath, "must be a non-empty array of { until_s = ..., curve = {...} } tables")
    out: list[Phase] = []
    last = 0.0
    for i, ph in enumerate(phases):
        fpath = (*ppath, i)
        if not isinstance(ph, dict):
            raise ctx.fail(fpath, f"must be a table {{ until_s = ..., curve = {{...}} }}, got {type(ph).__name__}")
        _no_unknown(ctx, ph, fpath, {"until_s", "curve"})
        curve = _curve(ctx, ph, fpath)
        if i == len(phases) - 1:
            if "until_s" in ph:
                raise ctx.fail((*fpath, "until_s"), "the last phase runs to the end of the work: leave until_s out")
            out.append(Phase(None, curve))
            continue
        until = _get(ctx, ph, fpath, "until_s", float, lo=0.0, lo_open=True)
        if until <= last:
            raise ctx.fail((*fpath, "until_s"), f"must be more than the previous phase's until_s ({last:g}), "
                                                f"got {until:g}")
        if until >= work_s:
            raise ctx.fail((*fpath, "until_s"), f"must be less than the program's work_s ({work_s:g}), got {until:g}")
        last = until
        out.append(Phase(until, curve))
    return tuple(out)


def _choice(ctx: _Ctx, table: dict, path: tuple, key: str, choices: tuple[str, ...], default: str) -> str:
    v = _get(ctx, table, path, key, str, default)
    if v not in choices:
        raise ctx.fail((*path, key), f"must be one of {', '.join(repr(c) for c in choices)}, got {v!r}")
    return v


def _team_kind(ctx: _Ctx, prog: dict, path: tuple) -> str:
    """`team = "malleable" | "fixed" | "runtime"`; the older `malleable = false` says "fixed"."""
    if "malleable" in prog and "team" in prog:
        raise ctx.fail((*path, "malleable"), "give team (malleable, fixed or runtime) or malleable, not both")
    if "malleable" in prog:
        return "malleable" if _get(ctx, prog, path, "malleable", bool) else "fixed"
    return _choice(ctx, prog, path, "team", TEAM_KINDS, "malleable")


def _tasks(ctx: _Ctx, prog: Any, path: tuple) -> tuple[int, tuple[float, ...]]:
    """`tasks = N` (N equal tasks) or `tasks = [s, ...]` (one task per size, relative, in the order handed out)."""
    val = prog.get("tasks")
    if not isinstance(val, list):
        return _get(ctx, prog, path, "tasks", int, lo=1, hi=MAX_TASKS), ()
    if not 1 <= len(val) <= MAX_TASKS:
        raise ctx.fail((*path, "tasks"), f"a list of 1 to {MAX_TASKS} task sizes, got {len(val)}")
    for i, s in enumerate(val):
        if isinstance(s, bool) or not isinstance(s, (int, float)) or not math.isfinite(s) or s <= 0:
            raise ctx.fail((*path, "tasks", i), f"a task's size must be a number > 0, got {s!r}")
    return len(val), tuple(float(s) for s in val)


def _program(ctx: _Ctx, prog: Any, idx: int, machine: Machine) -> Program:
    path = ("program", idx)
    if not isinstance(prog, dict):
        raise ctx.fail(path, "must be a table ([[program]])")
    _no_unknown(ctx, prog, path, {"name", "curve", "phases", "work_s", "arrival_s", "malleable", "threads",
                                  "region_s", "noise", "oversub_slowdown", "source", "team", "fixed_by", "memory",
                                  "workers", "tasks", "task_gap_s", "rule", "foreign"})
    name = _get(ctx, prog, path, "name", str)
    if not NAME_RE.match(name):
        raise ctx.fail((*path, "name"), f"must be 1-64 characters of letters, digits, _ . + -, got {name!r}")
    work_s = _get(ctx, prog, path, "work_s", float, lo=0.0, lo_open=True)
    phases: tuple[Phase, ...] = ()
    if "phases" in prog:
        if "curve" in prog:
            raise ctx.fail((*path, "phases"), "give either curve (one for the whole run) or phases, not both")
        phases = _phases(ctx, prog, path, work_s)
        curve = phases[0].curve
    else:
        curve = _curve(ctx, prog, path)
    kind = _team_kind(ctx, prog, path)
    fixed_by = _choice(ctx, prog, path, "fixed_by", FIXED_BY, "evidence")
    if "fixed_by" in prog and kind != "fixed":
        raise ctx.fail((*path, "fixed_by"), f"only a fixed team says who fixed it (team = \"fixed\"), "
                                            f"this one is {kind}")
    workers = _get(ctx, prog, path, "workers", int, 0, lo=0, hi=MAX_WORKERS)
    foreign = _get(ctx, prog, path, "foreign", bool, False)
    if foreign:
        # No client: nothing of scaf's applies to it (its team is its own count, `threads`).
        for key in ("team", "malleable", "fixed_by", "memory", "workers"):
            if key in prog:
                raise ctx.fail((*path, key), f"a foreign program (not under scaf) has no {key}: "
                                             f"it runs its own count (threads)")
    tasks = task_gap = 0
    sizes: tuple[float, ...] = ()
    if workers:
        if phases:
            raise ctx.fail((*path, "phases"), "a pool's tasks have one curve: give curve, not phases")
        tasks, sizes = _tasks(ctx, prog, path)
        task_gap = _get(ctx, prog, path, "task_gap_s", float, 0.0, lo=0.0)
    else:
        for key in ("tasks", "task_gap_s", "rule"):
            if key in prog:
                raise ctx.fail((*path, key), f"only a pool has {key}: set workers (its worker processes) too")
    return Program(
        name=name,
        team_kind=kind,
        fixed_by=fixed_by,
        memory=_choice(ctx, prog, path, "memory", MEMORY_KINDS, "cold"),
        workers=workers,
        tasks=tasks,
        task_sizes=sizes,
        rule=_choice(ctx, prog, path, "rule", POOL_RULES, "loky"),
        task_gap_s=task_gap,
        foreign=foreign,
        curve=curve,
        phases=phases if len(phases) > 1 else (),
        work_s=work_s,
        arrival_s=_get(ctx, prog, path, "arrival_s", float, 0.0, lo=0.0),
        threads=_get(ctx, prog, path, "threads", int, machine.contexts, lo=1, hi=machine.contexts),
        region_s=_get(ctx, prog, path, "region_s", float, 0.1, lo=0.0, lo_open=True),
        noise=_get(ctx, prog, path, "noise", float, 0.0, lo=0.0, hi=10.0),
        oversub_slowdown=_get(ctx, prog, path, "oversub_slowdown", float, None, lo=0.0),
        source=_get(ctx, prog, path, "source", str, ""),
    )


def _expect(ctx: _Ctx, doc: dict, names: set[str]) -> tuple[dict[str, dict[str, float]], str]:
    e = _table(ctx, doc, (), "expect", required=False)
    out: dict[str, dict[str, float]] = {}
    src = _get(ctx, e, ("expect",), "source", str, "")
    for cfg, vals in e.items():
        if cfg == "source":
            continue
        path = ("expect", cfg)
        if cfg not in CONFIGS:
            raise ctx.fail(path, f"unknown configuration (expected source or one of {', '.join(CONFIGS)})")
        if not isinstance(vals, dict):
            raise ctx.fail(path, "must be a table of sum_speedup and program names")
        _no_unknown(ctx, vals, path, {"sum_speedup", *names})
        out[cfg] = {k: _get(ctx, vals, path, k, float, lo=0.0, lo_open=True) for k in vals}
    return out, src


def parse(text: str, file: str = "<scenario>") -> Scenario:
    """Validate scenario TOML text; raise ScenarioError naming the field and line."""
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        m = re.search(r"\(at line (\d+), column \d+\)", str(e))
        line = int(m.group(1)) if m else None
        field = ""
        if line:
            km = _KEY.match(text.splitlines()[line - 1]) if line <= len(text.splitlines()) else None
            field = ".".join(_split_key(km.group(1))) if km else ""
        msg = re.sub(r"\s*\(at line \d+, column \d+\)", "", str(e))
        raise ScenarioError(file, line, field, f"TOML syntax error: {msg}") from None
    ctx = _Ctx(file, key_lines(text))
    _no_unknown(ctx, doc, (), {"scenario", "machine", "feedback", "program", "expect"})

    meta = _table(ctx, doc, (), "scenario", required=False)
    _no_unknown(ctx, meta, ("scenario",), {"name", "description", "source", "seed", "max_time_s"})
    m = _table(ctx, doc, (), "machine", required=True)
    mp = ("machine",)
    _no_unknown(ctx, m, mp, {"contexts", "smt", "chunk", "rate_hz", "oversub_slowdown", "gangs"})
    contexts = _get(ctx, m, mp, "contexts", int, lo=1, hi=MAX_CONTEXTS)
    smt = _get(ctx, m, mp, "smt", int, 1, lo=1, hi=16)
    if contexts % smt:
        raise ctx.fail((*mp, "smt"), f"contexts ({contexts}) must be a multiple of smt ({smt})")
    machine = Machine(
        contexts=contexts,
        smt=smt,
        chunk=_get(ctx, m, mp, "chunk", int, 0, lo=1, hi=contexts) if "chunk" in m else 0,
        rate_hz=_get(ctx, m, mp, "rate_hz", float, 4.0, lo=0.01, hi=1000.0),
        oversub_slowdown=_get(ctx, m, mp, "oversub_slowdown", float, DEFAULT_OVERSUB_SLOWDOWN, lo=0.0),
        gangs=_get(ctx, m, mp, "gangs", bool, True),
    )
    fb = _table(ctx, doc, (), "feedback", required=False)
    _no_unknown(ctx, fb, ("feedback",), {"tau_s", "lazy"})
    feedback = Feedback(tau_s=_get(ctx, fb, ("feedback",), "tau_s", float, DEFAULT_TAU_S, lo=0.0),
                        lazy=_get(ctx, fb, ("feedback",), "lazy", bool, True))

    progs = doc.get("program")
    if progs is None:
        raise ctx.fail(("program",), "missing: at least one [[program]] table is required")
    if not isinstance(progs, list) or not progs:
        raise ctx.fail(("program",), "must be one or more [[program]] tables")
    if len(progs) > MAX_PROGRAMS:
        raise ctx.fail(("program",), f"at most {MAX_PROGRAMS} programs, got {len(progs)}")
    programs = [_program(ctx, p, i, machine) for i, p in enumerate(progs)]
    clients = sum(p.workers + 1 if p.workers else 1 for p in programs)
    if clients > MAX_PROGRAMS:
        raise ctx.fail(("program",), f"at most {MAX_PROGRAMS} clients (a pool is its workers and its parent), "
                                     f"got {clients}")
    seen: dict[str, int] = {}
    for i, p in enumerate(programs):
        if p.name in seen:
            raise ctx.fail(("program", i, "name"), f"duplicate name {p.name!r} (also program[{seen[p.name] + 1}])")
        seen[p.name] = i
    expect, expect_source = _expect(ctx, doc, set(seen))

    stem = Path(file).stem if file != "<scenario>" else "scenario"
    return Scenario(
        name=_get(ctx, meta, ("scenario",), "name", str, stem),
        machine=machine,
        programs=programs,
        feedback=feedback,
        description=_get(ctx, meta, ("scenario",), "description", str, ""),
        source=_get(ctx, meta, ("scenario",), "source", str, ""),
        seed=_get(ctx, meta, ("scenario",), "seed", int, 1, lo=0),
        max_time_s=_get(ctx, meta, ("scenario",), "max_time_s", float, 0.0, lo=0.0, lo_open=True)
        if "max_time_s" in meta else 0.0,
        expect=expect,
        expect_source=expect_source,
        path=file,
    )


def shipped() -> list[Path]:
    """The shipped scenarios' files, in the order of their names (a-b before a-b-c, as `scaf sim list` shows them)."""
    return sorted(SCENARIO_DIR.glob("*.toml"), key=lambda p: p.stem)


def resolve(name_or_file: str) -> Path:
    """A shipped scenario's name, or a path to a .toml file."""
    p = Path(name_or_file)
    if p.suffix == ".toml" or p.exists() or "/" in name_or_file:
        if not p.is_file():
            raise ScenarioError(name_or_file, None, "", "no such file")
        return p
    cand = SCENARIO_DIR / f"{name_or_file}.toml"
    if not cand.is_file():
        names = ", ".join(q.stem for q in shipped()) or "none"
        raise ScenarioError(name_or_file, None, "", f"no shipped scenario of that name (shipped: {names})")
    return cand


def load(name_or_file: str | Path) -> Scenario:
    path = resolve(str(name_or_file))
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise ScenarioError(str(path), None, "", f"cannot read: {e}") from None
    return parse(text, str(path))
