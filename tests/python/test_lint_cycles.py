"""tools/lint/cycles.py finds include and symbol circles in a real (small) C tree, and passes a clean one."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from conftest import ROOT

TOOL = ROOT / "tools" / "lint" / "cycles.py"


def write_tree(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        f = root / name
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text(text)


def compile_like_cmake(root: Path, sources: list[str]) -> Path:
    """Objects where CMake puts them (T.dir/<source>.c.o), so the tool maps them back."""
    build = root / "build"
    for src in sources:
        obj = build / "CMakeFiles" / "t.dir" / (src + ".o")
        obj.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run(["gcc", "-c", "-I", str(root / "src"), "-o", str(obj), str(root / src)], check=True)
    return build


def run(root: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(TOOL), "--root", str(root), *extra],
                          check=False, capture_output=True, text=True, timeout=60)


def test_include_cycle_is_named(tmp_path: Path) -> None:
    write_tree(tmp_path, {
        "src/a.h": '#include "b.h"\n', "src/a.c": '#include "a.h"\n',
        "src/b.h": "\n", "src/b.c": '#include "b.h"\n#include "a.h"\n',
        "src/c.c": '#include "a.h"\n',
    })
    r = run(tmp_path)
    assert r.returncode == 1, r.stdout + r.stderr
    assert r.stdout.strip() == "include cycle: src/a -> src/b -> src/a"
    assert "1 cycle(s)" in r.stderr


def test_symbol_cycle_behind_a_shared_header(tmp_path: Path) -> None:
    # One header declares both functions, so the include graph is clean; the calls still go round.
    write_tree(tmp_path, {
        "src/all.h": "int a_fn(int);\nint b_fn(int);\n",
        "src/a.c": '#include "all.h"\nint a_fn(int x) { return x ? b_fn(x - 1) : 0; }\n',
        "src/b.c": '#include "all.h"\nint b_fn(int x) { return x ? a_fn(x - 1) : 1; }\n',
    })
    build = compile_like_cmake(tmp_path, ["src/a.c", "src/b.c"])
    assert run(tmp_path).returncode == 0
    r = run(tmp_path, "--objects", str(build))
    assert r.returncode == 1, r.stdout + r.stderr
    assert r.stdout.strip() == "symbol cycle: src/a -> src/b -> src/a"


def test_clean_layered_tree_passes(tmp_path: Path) -> None:
    write_tree(tmp_path, {
        "src/low.h": "int low(int);\n", "src/low.c": '#include "low.h"\nint low(int x) { return x + 1; }\n',
        "src/high.h": "int high(int);\n",
        "src/high.c": '#include "high.h"\n#include "low.h"\nint high(int x) { return low(x) * 2; }\n',
    })
    build = compile_like_cmake(tmp_path, ["src/low.c", "src/high.c"])
    r = run(tmp_path, "--objects", str(build))
    assert (r.returncode, r.stdout, r.stderr) == (0, "", "")


def test_missing_folder_is_a_usage_error(tmp_path: Path) -> None:
    r = run(tmp_path, "--dirs", "nowhere")
    assert r.returncode == 2 and "no folder" in r.stderr
    (tmp_path / "src").mkdir()
    r = run(tmp_path, "--objects", str(tmp_path / "nobuild"))
    assert r.returncode == 2 and "build first" in r.stderr


def test_python_import_cycle_is_named(tmp_path: Path) -> None:
    """Two modules of a package that import each other (one of them only inside a function, which
    is still a dependency) fail; the same package without the circle passes."""
    write_tree(tmp_path, {
        "src/x.c": "\n",
        "pkg/__init__.py": "",
        "pkg/a.py": "from pkg import b\n",
        "pkg/b.py": "def f():\n    from . import a\n    return a\n",
        "pkg/c.py": "import pkg.a\n",
    })
    r = run(tmp_path, "--python", "pkg")
    assert r.returncode == 1, r.stdout + r.stderr
    assert r.stdout.strip() == "import cycle: pkg.a -> pkg.b -> pkg.a"
    assert "1 cycle(s)" in r.stderr
    (tmp_path / "pkg" / "b.py").write_text("def f():\n    return 1\n")
    r = run(tmp_path, "--python", "pkg")
    assert r.returncode == 0, r.stdout + r.stderr


def test_scaf_python_has_no_import_cycle() -> None:
    r = subprocess.run([sys.executable, str(TOOL), "--python", "python/scaf"],
                       check=False, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
