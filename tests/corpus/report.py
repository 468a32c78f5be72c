"""Prints the docs/corpus.md table from the records the last corpus run left in build/corpus/.

    build/venv/bin/python -m tests.corpus.report      (from the repository root)
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "python"))

from scaf import paths

from .programs import PROGRAMS


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _verdict(clients: list[dict]) -> str:
    """One line per distinct verdict among the program's clients (megahit runs several)."""
    seen: list[str] = []
    for c in clients:
        if c.get("verdict") is not None:
            v = f"**{c['verdict']}** ({c.get('verdict_source')}): {c.get('reason')}"
        else:
            v = f"malleable={c.get('malleable')} (no verdict field)"
        if v not in seen:
            seen.append(v)
    return "<br>".join(_cell(v) for v in seen) or "never a client"


def _teams(clients: list[dict]) -> str:
    alloc = sorted({a for c in clients for a in c.get("allocations", []) if a is not None})
    teams = sorted({t for c in clients for t in c.get("last_team", [])})
    regions = sum(c.get("regions", 0) for c in clients)
    return f"{regions:,} regions; given {alloc}, teams seen {teams}"


def main() -> int:
    rows = [("| program | package (version) | what it does in the test | OpenMP pattern | verdict and reason (scaf) "
             "| regions, allocations, teams | identical | plain s | scaf s |"),
            "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for prog in PROGRAMS:
        f = paths.build_dir() / "corpus" / f"{prog.name}.json"
        if not f.exists():
            rows.append(f"| {prog.name} | {', '.join(prog.packages)} | not run | | | | | | |")
            continue
        r = json.loads(f.read_text())
        pkgs = ", ".join(f"{p} {v}" for p, v in r["packages"].items())
        rows.append(f"| {prog.name} | {_cell(pkgs)} | {_cell(prog.does)} | {_cell(prog.pattern)} | "
                    f"{_verdict(r['clients'])} | {_teams(r['clients'])} | {'yes' if r['identical'] else '**NO**'} | "
                    f"{r['plain_s']} | {r['scaf_s']} |")
    print("\n".join(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
