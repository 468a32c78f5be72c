"""Prints the docs/corpus.md tables from the records a corpus run left in build/corpus/.

    build/venv/bin/python -m tests.corpus.report [DIR]      (from the repository root)

DIR: another folder of records (a copy of build/corpus/ kept from an earlier run).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "python"))

from scaf.lib import paths

from .programs import PROGRAMS


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _package(key: str, version: str) -> str:
    """'numpy 2.4.6 (pip)' for a pip package, recorded as 'numpy (pip)' (harness.package_versions)."""
    if key.endswith(" (pip)"):
        return f"{key.removesuffix(' (pip)')} {version} (pip)"
    return f"{key} {version}"


def _verdict(clients: list[dict]) -> str:
    """One line per distinct verdict among the program's clients (megahit runs several)."""
    seen: list[str] = []
    for c in clients:
        if c.get("verdict") is not None:
            v = f"**{c['verdict']}** ({c.get('verdict_source')}): {c.get('reason') or '(no reason yet)'}"
        else:
            v = f"malleable={c.get('malleable')} (no verdict field)"
        if v not in seen:
            seen.append(v)
    return "<br>".join(_cell(v) for v in seen) or "never a client"


def _teams(clients: list[dict]) -> str:
    alloc = sorted({a for c in clients for a in c.get("allocations", []) if a is not None})
    teams = sorted({t for c in clients for t in c.get("last_team", [])})
    regions = sum(c.get("regions", 0) for c in clients)
    return f"{regions:,}; {alloc}; {teams}"


def main() -> int:
    records = Path(sys.argv[1]) if len(sys.argv) > 1 else paths.build_dir() / "corpus"
    programs = ["| program | package (version) | what it does in the test | OpenMP pattern seen |",
                "| --- | --- | --- | --- |"]
    results = [("| program | verdict (source): reason, as scaf reported it | regions; threads given; teams seen "
               "| identical | plain s | scaf s |"),
               "| --- | --- | --- | --- | --- | --- |"]
    for prog in PROGRAMS:
        f = records / f"{prog.name}.json"
        r = json.loads(f.read_text()) if f.exists() else None
        pkgs = ", ".join(_package(p, v) for p, v in r["packages"].items()) if r else \
            ", ".join([*prog.packages, *(f"{p} (pip)" for p in prog.pip)])
        programs.append(f"| {prog.name} | {_cell(pkgs)} | {_cell(prog.does)} | {_cell(prog.pattern)} |")
        if r is None:
            results.append(f"| {prog.name} | not run | | | | |")
            continue
        results.append(f"| {prog.name} | {_verdict(r['clients'])} | {_teams(r['clients'])} | "
                       f"{'yes' if r['identical'] else '**NO**'} | {r['plain_s']} | {r['scaf_s']} |")
    print("\n".join(programs) + "\n\n" + "\n".join(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
