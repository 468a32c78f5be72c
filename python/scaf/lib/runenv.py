"""The environment `scaf run` gives a program: its layer (and the TCM provider) preloaded, the runtime's waiting settings, process pools' counts, the socket, the user's word, and the start team the daemon's memory offers; `scaf run` and `scaf bench` both start programs with it."""

import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import NamedTuple

from scaf.lib import frameworks, paths, progkey, replay, runtimes, startteam
from scaf.lib.launch import append_preload


def preloads(choice: runtimes.Choice) -> tuple[Path | None, Path | None]:
    """(the layer, the TCM provider) that CHOICE preloads; the provider only forwards to the layer: never
    without one."""
    layer = paths.layer(choice.layer) if choice.layer else None
    provider = paths.tcm_provider() if choice.tcm and layer is not None else None
    return layer, provider


class Recall(NamedTuple):
    """What the daemon's memory made of a program at its start: the start team (0: its own count), why, and
    whether the daemon was asked at all (no when the user's OMP_NUM_THREADS stands, SCAF_MEMORY=0, ...)."""

    team: int
    why: str
    asked: bool

    def as_json(self) -> dict:
        return {"team": self.team, "why": self.why, "asked": self.asked}


def _share_env(start: startteam.Start, count: int, env: dict[str, str], user_env: Mapping[str, str], name: str,
               say: Callable[[str], None]) -> None:
    """Every runtime's own variable at the program's share (startteam.start_env) into ENV, and one line on it."""
    share_env = startteam.start_env(start.share, count, user_env, env.get("SCAF_RUNTIMES", ""))
    for var, value in share_env:
        env[var] = value
    said = ", ".join(f"{n}={v}" for n, v in share_env if n != "SCAF_START_SHARE")
    if said:
        say(f"{name}'s runtimes start with its share, {start.share} of {count}: {said}")


def start_team(sock: str, path: str, argv: list[str], env: dict[str, str], user_env: Mapping[str, str],
               flag: str | None = None, count: int | None = None,
               say: Callable[[str], None] | None = None, record: replay.Record | None = None) -> Recall:
    """Asks the daemon on SOCK for the program's share now, and exports what the start rules make of it into
    ENV (docs/memory.md, "The start team"; docs/runtimes.md):

    - OMP_NUM_THREADS=T and SCAF_START_TEAM=T when the program keeps its team (remembered fixed, or the user's
      word) and its share T is below COUNT (default: the CPUs we may run on, which the program inherits);
    - the start environment of every other runtime (polars, onnxruntime, the JVM, ...): each one's own variable
      at the share, and SCAF_START_SHARE, whatever the program is.

    USER_ENV is the user's environment: a count there stands (ENV may hold scaf's own pool counts, which are no
    one's word). FLAG is --fixed/--malleable ("no"/"yes"). SAY gets one line on what was decided and why
    (`scaf run --verbose`). RECORD gets what a replay of this decision needs (the question to the daemon, and
    every file read for it). Never raises for the daemon's sake."""
    say = say or (lambda _msg: None)
    count = startteam.program_count() if count is None else count
    if env.get("SCAF_MEMORY", "").strip() == "0":
        # The share is no memory's: asked under key 0, which names no program.
        if record is not None:
            record.ask = True
        start = startteam.decide(sock, progkey.ProgKey(0, "", os.path.basename(path)), count, None)
        _share_env(start, count, env, user_env, os.path.basename(path), say)
        say("SCAF_MEMORY=0: nothing recalled")
        return Recall(0, "SCAF_MEMORY=0: nothing recalled", False)
    seen = record.seen if record is not None else None
    try:
        exe, words = progkey.command(path, argv, seen)
        key = progkey.key_of(exe, words)
    except (OSError, progkey.KeyLibraryMissing) as e:
        say(f"no start team: the program cannot be named ({e})")
        if record is not None:
            record.replayable = False
        return Recall(0, f"the program cannot be named ({e})", False)
    word, where = startteam.user_word(flag, env, os.path.realpath(exe), seen)
    user_count = "OMP_NUM_THREADS" in user_env
    if record is not None:
        record.ask, record.fixed, record.key_exe, record.key_words = True, word == "fixed", exe, list(words)
        record.malleable, record.user_count = word == "malleable", user_count
        record.steered = [var for var in frameworks.STEERED_VARS if var in env and var not in user_env]
    start = startteam.decide(sock, key, count, f"fixed by {where}" if word == "fixed" else None,
                             user_malleable=word == "malleable", user_count=user_count)
    _share_env(start, count, env, user_env, key.name, say)
    if user_count:
        say(f"OMP_NUM_THREADS={user_env['OMP_NUM_THREADS']} is yours: no start team for its OpenMP")
        return Recall(0, f"OMP_NUM_THREADS={user_env['OMP_NUM_THREADS']} is the user's", True)
    if word == "malleable":
        say(f"{key.name} starts with its own count: malleable by {where}")
        return Recall(0, f"malleable by {where}", True)
    if not start.team:
        say(f"{key.name} starts with its own count ({count}): {start.why}")
        return Recall(0, start.why, True)
    env["OMP_NUM_THREADS"] = env["SCAF_START_TEAM"] = str(start.team)
    # The program is our child (posix_spawn, Popen): through its execs (Rscript execs R) its parent stays us,
    # and the layer takes the count as scaf's only there, not in a process the program starts.
    env["SCAF_START_PARENT"] = str(os.getpid())
    # The pool counts scaf itself set for a Python program's workers (frameworks.pool_env) would otherwise
    # give this process's OpenBLAS the whole machine where a static split's OMP_NUM_THREADS reaches it: its
    # spare threads then spin beside the fixed team (0.4 CPU-s in a 2.5 s XGBoost run).
    for var in frameworks.STEERED_VARS:
        if var in env and var not in user_env:
            env[var] = str(start.team)
    say(f"{key.name} starts with {start.team} of {count} threads (OMP_NUM_THREADS={start.team}): {start.why}; "
        "it keeps them")
    return Recall(start.team, start.why, True)


def environment(path: str, argv: list[str], user_env: Mapping[str, str], sock: str, choice: runtimes.Choice, *,
                malleable: str | None = None, no_memory: bool = False, count: int | None = None,
                say: Callable[[str], None] | None = None,
                record: replay.Record | None = None) -> tuple[dict[str, str], Recall | None]:
    """The environment PATH (ARGV) runs with under scaf, from the user's USER_ENV, and the start team's recall
    (None when it has no layer, or --no-memory): what `scaf run` execs it with (docs/cli.md, docs/memory.md).
    MALLEABLE is --malleable/--fixed ("yes"/"no"); COUNT the CPUs the program will run on (default ours);
    the daemon on SOCK is asked now, so call it when the program is about to start. RECORD, when given, gets
    what a replay needs: the variables added before the start team, and the start team's question."""
    env = dict(user_env)
    layer, provider = preloads(choice)
    if provider is not None:
        # Before the layer, which stays last (its place is what users and tools look for); the
        # provider finds the layer by name when oneTBB first calls it, whatever the order.
        env["LD_PRELOAD"] = append_preload(env.get("LD_PRELOAD"), str(provider))
    if layer is not None:
        env["LD_PRELOAD"] = append_preload(env.get("LD_PRELOAD"), str(layer))
        env.update(paths.wait_defaults(env, choice.layer or "gomp"))
        # Process pools (joblib's loky, Dask's nannies) leave their workers' counts to scaf (docs/cli.md).
        env.update(frameworks.pool_env(env, path, runtimes.runs_python(path), count,
                                       record.seen if record is not None else None))
    if layer is not None and choice.runtimes:
        # The layer makes the process a client from its start (core/runtimes.h), as for a BLAS pool it finds.
        env["SCAF_RUNTIMES"] = choice.runtimes
    env["SCAF_SOCKET"] = sock
    if malleable:
        env["SCAF_MALLEABLE"] = malleable
    recall = None
    if no_memory:
        env["SCAF_MEMORY"] = "0"
    if record is not None:
        for lib in (layer, provider):
            if lib is not None:
                record.seen.saw(str(lib))
        record.sets = {k: v for k, v in env.items() if user_env.get(k) != v}
    if layer is not None:
        recall = start_team(sock, path, argv, env, user_env, malleable, count, say, record)
        if no_memory:
            recall = None  # only the share was asked, under key 0
    return env, recall
