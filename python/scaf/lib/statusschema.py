"""What a daemon's status answer must look like before any command uses it: a bounded depth and typed fields.

A hand-written check rather than a JSON Schema library: the shape is small and
flat, the depth must be bounded before parsing (json.loads recurses, and a
deep enough answer ends in RecursionError), and the message must name the
offending field in one line.
"""

from __future__ import annotations

import json
from typing import Any

# The status JSON nests objects in a list in an object, with lists of numbers inside: depth 4.
MAX_DEPTH = 8

NUMBER = (int, float)

# Field -> accepted types; None is also accepted where listed. Unknown fields are allowed (newer daemons).
TOP: dict[str, tuple[type, ...]] = {
    "version": (int,), "daemon_pid": (int,), "policy": (str,), "job": (str,), "cpus": (int,), "available": (int,),
    "foreign": NUMBER, "rate_hz": NUMBER, "chunk": (int,), "clients": (list,),
}
TOP_REQUIRED = ("policy", "cpus", "clients")
TOP_NULLABLE = {"job"}
CLIENT: dict[str, tuple[type, ...]] = {
    "id": (int,), "pid": (int,), "program": (int,), "name": (str,), "threads": (int,), "share": (int,), "malleable": (bool,),
    "cpuset": (list,), "nlwp": (int,), "max_threads": (int,), "last_team": (int,), "regions": (int,),
    "coef": NUMBER, "estimate": (str,), "verdict": (str,), "verdict_source": (str,), "reason": (str,),
    "efficiency": NUMBER, "control": (str,), "rigid_team": (int,), "wanted": (int,),
    "memory": (dict,), "start_team": (int,), "started_with": (int,), "idle": (bool,),
    "runtimes": (list,), "runtime_team": (int,),
}
# A client's "memory" object (docs/memory.md): what the daemon remembered of its program at its arrival.
MEMORY: dict[str, tuple[type, ...]] = {"runs": (int,), "verdict": (str,), "source": (str,), "run_s": (int, float)}
CLIENT_REQUIRED: tuple[str, ...] = ()  # a daemon may show other users' clients with fewer fields
NULLABLE = {"efficiency", "reason", "verdict_source", "memory"}


class BadStatus(ValueError):
    """The daemon's answer is not a status this scaf understands; the message says where, in one line."""


def depth(body: bytes) -> int:
    """The deepest nesting of arrays and objects in a JSON text, without parsing it (strings skipped)."""
    deepest = level = 0
    in_str = escaped = False
    for b in body:
        if in_str:
            if escaped:
                escaped = False
            elif b == 0x5C:  # backslash
                escaped = True
            elif b == 0x22:
                in_str = False
        elif b == 0x22:
            in_str = True
        elif b in (0x5B, 0x7B):
            level += 1
            deepest = max(deepest, level)
        elif b in (0x5D, 0x7D):
            level -= 1
    return deepest


def _typed(where: str, v: Any, kinds: tuple[type, ...], nullable: bool) -> None:
    if v is None and nullable:
        return
    # bool is an int in Python; a count given as true is still malformed.
    if isinstance(v, bool) and bool not in kinds:
        raise BadStatus(f"{where} is {json.dumps(v)}, expected {' or '.join(k.__name__ for k in kinds)}")
    if not isinstance(v, kinds):
        shown = json.dumps(v)
        shown = shown if len(shown) <= 40 else shown[:37] + "..."
        raise BadStatus(f"{where} is {shown}, expected {' or '.join(k.__name__ for k in kinds)}")


def json_object(body: bytes, required: tuple[str, ...] | list[str]) -> dict:
    """BODY as a JSON object that has the REQUIRED keys, or BadStatus saying what is wrong with it.

    The nesting is measured before parsing, so a hostile document cannot make json recurse deeply.
    """
    d = depth(body)
    if d > MAX_DEPTH:
        raise BadStatus(f"nested {d} levels deep (a status has at most {MAX_DEPTH})")
    try:
        st = json.loads(body)
    except (ValueError, UnicodeDecodeError, RecursionError) as e:
        raise BadStatus(f"not JSON ({e})") from None
    if not isinstance(st, dict):
        raise BadStatus(f"a JSON {type(st).__name__}, expected an object")
    for k in required:
        if k not in st:
            raise BadStatus(f'no "{k}" field')
    return st


def parse(body: bytes) -> dict:
    """The status as a dict, or BadStatus saying what is wrong with it."""
    st = json_object(body, TOP_REQUIRED)
    for k, kinds in TOP.items():
        if k in st:
            _typed(k, st[k], kinds, k in TOP_NULLABLE)
    for i, c in enumerate(st["clients"]):
        if not isinstance(c, dict):
            raise BadStatus(f"clients[{i}] is {json.dumps(c)[:40]}, expected an object")
        for k in CLIENT_REQUIRED:
            if k not in c:
                raise BadStatus(f'clients[{i}] has no "{k}" field')
        for k, kinds in CLIENT.items():
            if k in c:
                _typed(f"clients[{i}].{k}", c[k], kinds, k in NULLABLE)
        for j, cpu in enumerate(c.get("cpuset") or []):
            _typed(f"clients[{i}].cpuset[{j}]", cpu, (int,), False)
        for k, kinds in MEMORY.items():
            if isinstance(c.get("memory"), dict) and k in c["memory"]:
                _typed(f"clients[{i}].memory.{k}", c["memory"][k], kinds, False)
    return st
