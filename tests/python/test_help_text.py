"""What the scaf command prints for users: --help examples that work from any folder, and no citation of
files a user does not have or of the project's internal work items."""

from __future__ import annotations

import io
import re
import subprocess
import tokenize
from pathlib import Path

import pytest
from conftest import ROOT, SCAF

COMMANDS = [[], ["run"], ["status"], ["bench"], ["bench", "pairs"], ["bench", "solo"], ["bench", "overhead"],
            ["bench", "report"], ["doctor"], ["demo"], ["trace"], ["check"], ["forget"], ["rules"], ["plot"],
            ["plot", "trace"], ["plot", "alloc"], ["sim"], ["sim", "run"], ["allocate"], ["daemon"]]
# Internal references: design notes, result write-ups, work items.
INTERNAL = re.compile(r"DESIGN\.md|docs/results|\bissues?\b|\bwork item", re.IGNORECASE)


@pytest.mark.parametrize("path", COMMANDS, ids=lambda p: " ".join(p) or "scaf")
def test_help_examples_do_not_depend_on_the_checkout(path: list[str], tmp_path: Path) -> None:
    r = subprocess.run([str(SCAF), *path, "--help"], check=False, capture_output=True, text=True, timeout=60,
                       cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    text = r.stdout
    examples = text.split("examples:", 1)[1] if "examples:" in text else ""
    # The build tree is not where a user stands: no build/... paths in examples.
    assert not re.search(r"(^|[\s=])(\./)?build/", examples), examples
    flat = " ".join(text.split())
    for m in re.finditer(r"docs/[\w.-]+\.md", flat):
        assert "source tree" in flat[m.end():m.end() + 40], f"{m.group(0)} cited as if installed: {flat[m.start():m.end() + 40]}"
    assert not INTERNAL.search(text), INTERNAL.search(text)


def python_strings() -> list[tuple[str, int, str]]:
    out = []
    for f in sorted((ROOT / "python" / "scaf").rglob("*.py")):
        for tok in tokenize.generate_tokens(io.StringIO(f.read_text()).readline):
            if tok.type == tokenize.STRING or tok.type == getattr(tokenize, "FSTRING_MIDDLE", -1):
                out.append((str(f.relative_to(ROOT)), tok.start[0], tok.string))
    return out


def c_strings() -> list[tuple[str, int, str]]:
    out = []
    for f in sorted((ROOT / "src").rglob("*.c")):
        for no, line in enumerate(f.read_text().splitlines(), start=1):
            code = line.split("//", 1)[0]
            if code.lstrip().startswith(("*", "/*")):
                continue
            out.extend((str(f.relative_to(ROOT)), no, s) for s in re.findall(r'"((?:[^"\\]|\\.)*)"', code))
    return out


def test_no_internal_citations_in_program_text() -> None:
    found = [(f, n, s) for f, n, s in python_strings() + c_strings() if INTERNAL.search(s)]
    assert not found, found


def test_the_scan_sees_strings() -> None:
    """The scan above must be able to fail: it finds known strings in both languages."""
    assert any("unrecognized arguments" in s for _, _, s in python_strings())
    assert any("serving %s" in s for _, _, s in c_strings())
