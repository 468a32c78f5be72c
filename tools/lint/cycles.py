#!/usr/bin/env python3
"""cycles.py — fails when modules depend on each other in a circle: C by #include or linked symbol, Python by import.

Three graphs, one node per module:

- includes: over the C sources (foo.c and foo.h are one module, named by
  their path without the extension), an edge A -> B when A.c or A.h has
  ``#include "B.h"``;
- symbols: an edge A -> B when A's object file uses a global symbol that B's
  defines (``nm`` over the objects a build left), which sees the calls a shared
  header hides;
- imports: over the Python packages given with --python (a module is its
  dotted name), an edge A -> B when A imports B anywhere in the file: at the
  top, inside a function, or under ``if TYPE_CHECKING`` (a deferred import is
  still a dependency). A package's ``__init__`` is its own module; importing a
  name from a package counts as importing the submodule of that name when
  there is one.

Each graph must be acyclic. Exit status 0 when all are, 1 when any has a
cycle (each printed as ``a -> b -> a``), 2 on a usage error.
"""

from __future__ import annotations

import argparse
import ast
import itertools
import re
import subprocess
import sys
from collections.abc import Iterable
from graphlib import CycleError, TopologicalSorter
from pathlib import Path

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.MULTILINE)


def module_of(path: Path, root: Path) -> str:
    return str(path.relative_to(root).with_suffix(""))


def include_graph(root: Path, dirs: Iterable[str], include_dirs: Iterable[str]) -> dict[str, set[str]]:
    """Module -> modules it includes, for every .c/.h under dirs (paths relative to root)."""
    graph: dict[str, set[str]] = {}
    search = [root / d for d in include_dirs]
    for d in dirs:
        for f in sorted((root / d).rglob("*")):
            if f.suffix not in (".c", ".h") or not f.is_file():
                continue
            mod = module_of(f, root)
            deps = graph.setdefault(mod, set())
            for name in INCLUDE.findall(f.read_text(errors="replace")):
                for base in [f.parent, *search]:
                    target = (base / name).resolve()
                    if target.is_file():
                        try:
                            dep = module_of(target, root.resolve())
                        except ValueError:
                            break  # outside the tree
                        if dep != mod:
                            deps.add(dep)
                        break
    return graph


def nm_symbols(obj: Path) -> tuple[set[str], set[str]]:
    """(defined globals, undefined) of one object file."""
    out = subprocess.run(["nm", "-P", str(obj)], capture_output=True, text=True, check=True).stdout
    defined, used = set(), set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) < 2:
            continue
        name, kind = parts[0], parts[1]
        if kind == "U":
            used.add(name)
        elif kind.isupper():
            defined.add(name)
    return defined, used


def source_of(obj: Path, root: Path) -> str | None:
    """CMake names objects DIR/CMakeFiles/T.dir/<source path>.c.o; map back to the module."""
    s = obj.as_posix()
    m = re.search(r"\.dir/(.+)\.c\.o$", s)
    if not m or not (root / (m.group(1) + ".c")).is_file():
        return None
    return m.group(1)


def symbol_graph(root: Path, objects: Iterable[Path], dirs: Iterable[str]) -> dict[str, set[str]]:
    """Module -> modules whose globals it uses, over the objects of sources under dirs."""
    prefixes = tuple(d.rstrip("/") + "/" for d in dirs)
    defs: dict[str, str] = {}
    uses: dict[str, set[str]] = {}
    for obj in objects:
        mod = source_of(obj, root)
        if mod is None or not mod.startswith(prefixes) or mod in uses:
            continue
        defined, used = nm_symbols(obj)
        uses[mod] = used
        for sym in defined:
            defs.setdefault(sym, mod)
    graph: dict[str, set[str]] = {}
    for mod, used in uses.items():
        graph[mod] = {defs[s] for s in used if s in defs and defs[s] != mod}
    return graph


def python_modules(pkg: Path) -> dict[str, Path]:
    """Dotted name -> file for every .py under the package folder pkg (named from pkg's own name)."""
    mods: dict[str, Path] = {}
    for f in sorted(pkg.rglob("*.py")):
        parts = list(f.relative_to(pkg.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        mods[".".join(parts)] = f
    return mods


def import_graph(pkgs: Iterable[Path]) -> dict[str, set[str]]:
    """Module -> modules of the same packages it imports (absolute and relative imports)."""
    mods: dict[str, Path] = {}
    for pkg in pkgs:
        mods.update(python_modules(pkg))
    graph: dict[str, set[str]] = {}
    for mod, f in mods.items():
        is_pkg = f.name == "__init__.py"
        deps = graph.setdefault(mod, set())
        for node in ast.walk(ast.parse(f.read_text(errors="replace"), filename=str(f))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    here = mod.split(".") if is_pkg else mod.split(".")[:-1]
                    here = here[: len(here) - (node.level - 1)]
                    base = ".".join([*here, base] if base else here)
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in mods else base for a in node.names]
            for t in targets:
                # `import a.b.c` depends on a.b.c; fall back to the longest known prefix.
                while t and t not in mods:
                    t = t.rpartition(".")[0]
                if t and t != mod:
                    deps.add(t)
    return graph


def find_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every cycle graphlib reports, removing one edge of each until none is left."""
    g = {k: set(v) for k, v in graph.items()}
    cycles = []
    while True:
        try:
            tuple(TopologicalSorter(g).static_order())
            return cycles
        except CycleError as e:
            cyc = list(e.args[1])
            cycles.append(cyc)
            # graphlib lists the cycle as [n0, n1, ..., n0] along edges n(i+1) -> n(i) or the reverse;
            # drop whichever edge of it exists so the next search finds another cycle.
            for a, b in itertools.pairwise(cyc):
                if b in g.get(a, set()):
                    g[a].discard(b)
                    break
                if a in g.get(b, set()):
                    g[b].discard(a)
                    break
            else:
                return cycles


def oriented(cyc: list[str], graph: dict[str, set[str]]) -> list[str]:
    """The cycle written in the direction its edges point."""
    forward = all(b in graph.get(a, set()) for a, b in itertools.pairwise(cyc))
    return cyc if forward else list(reversed(cyc))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description="Fail when C modules depend on each other in a circle (by #include, and by linked "
        "symbol when --objects is given; a module is foo.c with foo.h), or Python modules by import "
        "(with --python).",
    )
    ap.add_argument("--root", type=Path, default=Path(__file__).resolve().parents[2],
                    help="source tree (default: this checkout)")
    ap.add_argument("--dirs", default="src", help="comma-separated folders to check (default: src)")
    ap.add_argument("--include", default="include", help="comma-separated include folders (default: include)")
    ap.add_argument("--objects", type=Path, help="build folder to scan for *.c.o (symbol graph)")
    ap.add_argument("--python", default="",
                    help="comma-separated Python package folders (relative to --root) whose imports to check")
    args = ap.parse_args(argv)
    root = args.root.resolve()
    dirs = [d for d in args.dirs.split(",") if d]
    pkgs = [d for d in args.python.split(",") if d]
    for d in [*dirs, *pkgs]:
        if not (root / d).is_dir():
            print(f"cycles: no folder {root / d}", file=sys.stderr)
            return 2

    bad = 0
    graphs = [("include", include_graph(root, dirs, args.include.split(",")))]
    if args.objects:
        if not args.objects.is_dir():
            print(f"cycles: no build folder {args.objects} (build first)", file=sys.stderr)
            return 2
        graphs.append(("symbol", symbol_graph(root, sorted(args.objects.rglob("*.c.o")), dirs)))
    if pkgs:
        graphs.append(("import", import_graph(root / p for p in pkgs)))
    for kind, graph in graphs:
        seen = set()
        for cyc in find_cycles(graph):
            cyc = oriented(cyc, graph)
            ring = cyc[:-1]
            start = ring.index(min(ring))
            key = tuple(ring[start:] + ring[:start])
            if key in seen:
                continue
            seen.add(key)
            print(f"{kind} cycle: {' -> '.join([*key, key[0]])}")
            bad += 1
    if bad:
        print(f"cycles: {bad} cycle(s); a file may only depend on files that do not depend on it",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
