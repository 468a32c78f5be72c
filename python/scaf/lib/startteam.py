"""Whether `scaf run` starts a program with its share: the user's word and the daemon's recall, decided as the layer's core/start.c decides (docs/memory.md, "The start team")."""

import os
from collections.abc import Mapping
from typing import NamedTuple

from scaf.lib import choicecache, proto, rules
from scaf.lib.progkey import ProgKey

# SCAF_MALLEABLE's words, as the layer's core/settings.c reads them (case-insensitive).
MALLEABLE_WORDS = ("yes", "1", "true", "on", "malleable")
FIXED_WORDS = ("no", "0", "false", "off", "fixed")


def user_word(flag: str | None, env: Mapping[str, str], exe: str,
              seen: choicecache.Witness | None = None) -> tuple[str | None, str]:
    """The user's word on malleability for EXE, "fixed", "malleable" or None, and where it comes from:
    --fixed/--malleable (FLAG "no"/"yes"), else SCAF_MALLEABLE, else the first rule that matches EXE (the
    real path of what runs, as the layer matches /proc/self/exe). SEEN gets the rules files read."""
    if flag == "no":
        return "fixed", "--fixed"
    if flag == "yes":
        return "malleable", "--malleable"
    v = env.get("SCAF_MALLEABLE", "").strip().lower()
    if v in FIXED_WORDS:
        return "fixed", f"SCAF_MALLEABLE={env['SCAF_MALLEABLE']}"
    if v in MALLEABLE_WORDS:
        return "malleable", f"SCAF_MALLEABLE={env['SCAF_MALLEABLE']}"
    if seen is not None:
        for p in rules.search_path(dict(env)):
            seen.saw(p)
    rule = rules.first_match(rules.load(dict(env)), exe)
    if rule is not None:
        return rule.verdict, f"rule {rule.where()}: {rule.text()}"
    return None, ""


def program_count() -> int:
    """The count the program reads when OMP_NUM_THREADS is not set: the CPUs it may run on."""
    return len(os.sched_getaffinity(0))


class Start(NamedTuple):
    """What scaf run does: start with `team` threads (0: with the program's own count), and why, in words."""

    team: int
    why: str


def _runs(n: int) -> str:
    return f"{n} run{'' if n == 1 else 's'}"


def decide(sock: str, key: ProgKey, count: int, fixed_by: str | None, timeout: float = 2.0) -> Start:
    """Ask the daemon on SOCK what it remembers of KEY (RECALL, with COUNT as the program's bound) and decide.
    FIXED_BY: the user's word that the program keeps its team ("--fixed", a rule), None when there is none.
    Never raises for the daemon's sake: a daemon that is absent, keeps no memory or speaks an older protocol
    gives no start team, and the reason says so."""
    if key.key == 0:
        return Start(0, f"{key.name} cannot be named (its code comes from stdin or a terminal): no memory of it")
    try:
        r = proto.memory(sock, proto.MEMORY_RECALL, key=key.key, max_threads=min(max(count, 1), 1024),
                         timeout=timeout)
    except (proto.DaemonUnavailable, proto.UntrustedDaemon) as e:
        return Start(0, f"no memory asked: {e}")
    if r.status == proto.MEMORY_OFF:
        return Start(0, f"the daemon on {sock} keeps no memory")
    if r.status not in (proto.MEMORY_OK, proto.MEMORY_UNKNOWN):
        return Start(0, f"the daemon on {sock} could not recall it (status {r.status})")
    known = r.status == proto.MEMORY_OK and r.runs > 0
    if fixed_by:
        why = fixed_by
    elif known and r.verdict == proto.VERDICT_FIXED and r.source == proto.SOURCE_EVIDENCE:
        why = f"remembered fixed from {_runs(r.runs)}"
    elif known and r.verdict == proto.VERDICT_FIXED and r.source == proto.SOURCE_CHECK:
        why = "remembered fixed by scaf check"
    elif known and r.verdict == proto.VERDICT_MALLEABLE and r.source == proto.SOURCE_CHECK:
        # The layer steers it as a `malleable` rule would (docs/memory.md): the whole machine, then steered.
        return Start(0, "remembered malleable by scaf check: steered from its first region")
    elif known:
        word = {proto.VERDICT_MALLEABLE: "malleable", proto.VERDICT_FIXED: "fixed by the user"}.get(
            r.verdict, "undecided")
        return Start(0, f"remembered {word} from {_runs(r.runs)}")
    else:
        return Start(0, "nothing is remembered of it")
    if r.start_team == 0:
        return Start(0, f"{why}, but the daemon offers no start team")
    if r.start_team >= count:
        return Start(0, f"{why}, but its share ({r.start_team}) is not below its count ({count})")
    return Start(r.start_team, why)
