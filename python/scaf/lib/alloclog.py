"""Read a daemon's allocation log (`scafd --log`, one status JSON line per change), each line validated like a status.

Every line is the status the daemon would answer (statusschema) plus a numeric
"time" on the daemon's clock. A malformed line is an error that names the file
and the line, with one exception: a last line without its newline is a line
still being written (or torn when the daemon was killed), and is left out.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from scaf.lib import statusschema

NUMBER = (int, float)


class BadAllocLog(ValueError):
    """The log cannot be read, or a line of it is not a status line; the message names the file and line."""


def _typed(where: str, v: Any, kinds: tuple[type, ...], nullable: bool) -> str | None:
    """Why V does not have one of KINDS, or None when it does."""
    if v is None and nullable:
        return None
    # bool is an int in Python; a count given as true is still malformed.
    if (isinstance(v, bool) and bool not in kinds) or not isinstance(v, kinds):
        shown = json.dumps(v)
        shown = shown if len(shown) <= 40 else shown[:37] + "..."
        return f"{where} is {shown}, expected {' or '.join(k.__name__ for k in kinds)}"
    return None


def parse_line(line: str | bytes) -> dict:
    """One log line as a dict; BadAllocLog saying what is wrong with it (without the line's place)."""
    body = line.encode() if isinstance(line, str) else line
    try:
        rec = statusschema.json_object(body, ("time", "clients"))
    except statusschema.BadStatus as e:
        raise BadAllocLog(str(e)) from None
    checks = [_typed("time", rec["time"], NUMBER, False)]
    checks += [_typed(k, rec[k], kinds, k in statusschema.TOP_NULLABLE)
               for k, kinds in statusschema.TOP.items() if k in rec]
    for why in checks:
        if why is not None:
            raise BadAllocLog(why)
    for i, c in enumerate(rec["clients"]):
        if not isinstance(c, dict):
            checks.append(f"clients[{i}] is {json.dumps(c)[:40]}, expected an object")
            continue
        checks += [_typed(f"clients[{i}].{k}", c[k], kinds, k in statusschema.NULLABLE)
                   for k, kinds in statusschema.CLIENT.items() if k in c]
    for why in checks:
        if why is not None:
            raise BadAllocLog(why)
    return rec


def read(path: str | Path, missing_ok: bool = False) -> list[dict]:
    """Every status line of the log at PATH, in the order written.

    Raises BadAllocLog naming the line for a malformed one, and for an
    unreadable file unless MISSING_OK (then the log is taken as empty: the
    daemon has not written it yet). Blank lines are skipped.
    """
    try:
        text = Path(path).read_bytes()
    except OSError as e:
        if missing_ok:
            return []
        raise BadAllocLog(f"cannot read {path}: {e.strerror or e}") from e
    lines = text.split(b"\n")
    complete = len(lines) - 1  # the piece after the last newline is unfinished
    records: list[dict] = []
    for n, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            records.append(parse_line(line))
        except BadAllocLog as e:
            if n > complete:
                break
            raise BadAllocLog(f"{path} line {n}: {e} (is it a scafd --log?)") from None
    return records


def client_pids(records: list[dict]) -> set[int]:
    """Pids that appear as clients in any record (so they really ran under scaf)."""
    return {c["pid"] for rec in records for c in rec["clients"] if isinstance(c.get("pid"), int)}
