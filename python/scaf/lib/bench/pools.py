"""The measurements of `scaf bench pools`: N tasks of unequal length over a process pool of K workers, under the framework's default, its guard off, a static split and scaf."""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import scaf
from scaf.lib import frameworks
from scaf.lib.bench import runner
from scaf.lib.bench.errors import BenchError
from scaf.lib.daemon import PrivateDaemon

POOLPROG = Path(__file__).with_name("poolprog.py")
SCAF_PATH = str(Path(scaf.__file__).resolve().parents[1])
FRAMEWORKS = ("loky", "dask", "mp", "cf")
CONFIGS = ("default", "guard-off", "static", "scaf", "scaf-warm", "solo")
# What `--configs` runs unless told: scaf-warm runs each round twice.
DEFAULT_CONFIGS = ("default", "guard-off", "static", "scaf", "solo")
# What each configuration means (docs/bench.md, "scaf bench pools").
CONFIG_HELP = {
    "default": "plain, the framework as it comes: loky's cpu_count() // n_jobs, Dask's 1 thread per worker, "
               "multiprocessing's and concurrent.futures' no rule (every worker sees the machine)",
    "guard-off": "plain, the framework's guard off: loky's inner_max_num_threads = the CPUs, Dask's "
                 "pre-spawn-environ counts unset (multiprocessing and concurrent.futures have none: skipped)",
    "static": "plain, OMP_NUM_THREADS and OPENBLAS_NUM_THREADS = CPUs // workers for every worker",
    "scaf": "scaf run on a private scafd (its default policy and --idle-after): the frameworks' counts left to scaf",
    "scaf-warm": "scaf with the daemon's memory warm: the same run once first (not timed), then the measured run on "
                 "a fresh daemon that recalls it, as a user's second run does (not in the default list)",
    "solo": "each task alone, once per round: one worker running the tasks in turn, with 1 thread and with all the "
            "CPUs; from these times, the shortest task span any scheduler could reach (the bound), against which "
            "scaf's saving is measured",
}
# The pool program's own variables: a configuration sets what it means to.
STRIPPED = (*frameworks.LOKY_VARS, "ENABLE_IPC")


def _env(tag: str) -> dict[str, str]:
    env = runner.base_env(tag)
    for k in list(env):
        if k in STRIPPED or k.startswith("DASK_"):
            del env[k]
    return env


def parse_sizes(text: str) -> list[float]:
    try:
        sizes = [float(s) for s in text.split(",") if s.strip()]
    except ValueError:
        raise BenchError(f"--sizes {text!r}: expected numbers separated by commas") from None
    if not sizes or any(s <= 0 for s in sizes):
        raise BenchError(f"--sizes {text!r}: expected positive task sizes")
    return sizes


def applies(framework: str, config: str) -> bool:
    """guard-off only where the framework has a guard to turn off."""
    return not (config == "guard-off" and framework in ("mp", "cf"))


def _scaf_run(socket: str, argv: list[str]) -> list[str]:
    """`scaf run` itself, as a user types it: this very package, run by this interpreter."""
    return [sys.executable, "-m", "scaf", "run", "--no-start", "--socket", socket, "--", *argv]


def run_one(framework: str, config: str, task: str, workers: int, sizes: list[float], cpus: int, python: str,
            tag: str, timeout: float, logdir: Path, rnd: int) -> dict:
    """One pool program run under one configuration; its pool-result, or an error."""
    env = _env(tag)
    argv = [python, str(POOLPROG), "--framework", framework, "--task", task, "--workers", str(workers),
            "--sizes", ",".join(f"{s:g}" for s in sizes)]
    settings: dict[str, str] = {}
    d: PrivateDaemon | None = None
    if config == "guard-off":
        if framework == "loky":
            argv += ["--inner", str(cpus)]
            settings["inner_max_num_threads"] = str(cpus)
        else:
            settings[frameworks.DASK_VAR] = frameworks.DASK_UNSET
    elif config == "static":
        n = str(max(1, cpus // workers))
        settings.update({"OMP_NUM_THREADS": n, "OPENBLAS_NUM_THREADS": n})
    env.update({k: v for k, v in settings.items() if k.isupper()})
    rec: dict = {"kind": "pool", "framework": framework, "config": config, "task": task, "workers": workers,
                 "sizes": sizes, "round": rnd, "settings": settings, "error": None}
    state: tempfile.TemporaryDirectory | None = None
    try:
        if config in ("scaf", "scaf-warm"):
            log = logdir / f"{framework}.{task}.{config}.r{rnd}.alloc.jsonl"
            env["PYTHONPATH"] = os.pathsep.join(p for p in (SCAF_PATH, env.get("PYTHONPATH")) if p)
            if config == "scaf-warm":
                state = tempfile.TemporaryDirectory(prefix="scaf-pools-state-")
                prime = PrivateDaemon([], state_dir=state.name)
                prime.start_or_discard()
                try:
                    subprocess.run(_scaf_run(prime.socket, argv), capture_output=True, text=True, timeout=timeout,
                                   env=env, check=False)
                finally:
                    prime.stop()
                    prime.cleanup()
            d = PrivateDaemon([], log=log, state_dir=state.name if state else None)
            d.start_or_discard()
            argv = _scaf_run(d.socket, argv)
            rec["alloc_log"] = str(log)
        t = time.monotonic()
        r = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=env, check=False)
        rec["wall_s"] = round(time.monotonic() - t, 4)
        lines = [ln for ln in r.stdout.splitlines() if ln.startswith("pool-result ")]
        if r.returncode != 0 or not lines:
            rec["error"] = f"exit {r.returncode}: {(r.stderr or r.stdout)[-400:]}"
        else:
            rec["result"] = json.loads(lines[-1].split(" ", 1)[1])
    except subprocess.TimeoutExpired:
        rec["error"] = f"timed out after {timeout:g} s"
    finally:
        if d is not None:
            d.stop()
            d.cleanup()
        if state is not None:
            state.cleanup()
    return rec


def run_solo(threads: int, task: str, sizes: list[float], python: str, tag: str, timeout: float, rnd: int) -> dict:
    """The tasks one after another in a single worker, each with THREADS threads: every task's own time."""
    env = _env(tag)
    n = str(threads)
    env.update({"OMP_NUM_THREADS": n, "OPENBLAS_NUM_THREADS": n})
    argv = [python, str(POOLPROG), "--framework", "mp", "--task", task, "--workers", "1",
            "--sizes", ",".join(f"{s:g}" for s in sizes)]
    rec: dict = {"kind": "solo", "threads": threads, "task": task, "sizes": sizes, "round": rnd, "error": None}
    try:
        r = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=env, check=False)
        lines = [ln for ln in r.stdout.splitlines() if ln.startswith("pool-result ")]
        if r.returncode != 0 or not lines:
            rec["error"] = f"exit {r.returncode}: {(r.stderr or r.stdout)[-400:]}"
        else:
            rec["task_s"] = [round(t["end"] - t["start"], 4) for t in json.loads(lines[-1].split(" ", 1)[1])["tasks"]]
    except subprocess.TimeoutExpired:
        rec["error"] = f"timed out after {timeout:g} s"
    return rec


def bound_span(one: list[float], full: list[float], cpus: int) -> float:
    """The shortest task span any scheduler could reach for tasks that take one[i] s on one thread and full[i] s
    on all CPUs: no task ends before its time on the whole machine, and a task costs at least its one-thread
    time in CPU-seconds (a thread more adds cost, never removes it), of which the machine gives `cpus` a second.
    A lower bound: scaf's share of the saving it allows is never flattered."""
    return max(max(full), sum(one) / cpus)


def solo_bound(runs: list[dict], cpus: int) -> float | None:
    """bound_span from the solo runs: each task's median time over the rounds, at 1 thread and at all CPUs."""
    def med(threads: int) -> list[float] | None:
        got = [r["task_s"] for r in runs if r.get("kind") == "solo" and r["threads"] == threads and not r["error"]]
        return [statistics.median(col) for col in zip(*got)] if got else None

    one, full = med(1), med(cpus)
    return bound_span(one, full, cpus) if one and full else None


def task_span(result: dict) -> float | None:
    """From the first task's start to the last one's end: the makespan less the pool's start (spawning the
    workers, their imports), which is the same work under every configuration and which scaf cannot shorten."""
    tasks = result.get("tasks") or []
    if not tasks:
        return None
    return max(t["end"] for t in tasks) - min(t["start"] for t in tasks)


def _paired(runs: list[dict], fw: str, cfg: str, key) -> float | None:
    """The median over rounds of scaf's figure divided by cfg's in the same round (the configurations of a
    round run back to back, so a machine's drift over minutes hits both alike)."""
    by_round: dict[int, dict[str, float]] = {}
    for r in runs:
        if r["framework"] == fw and not r["error"] and r["config"] in (cfg, "scaf"):
            v = key(r["result"])
            if v:
                by_round.setdefault(r.get("round", 0), {})[r["config"]] = v
    ratios = [x["scaf"] / x[cfg] for x in by_round.values() if "scaf" in x and cfg in x]
    return statistics.median(ratios) if ratios else None


def summarize(runs: list[dict], cpus: int = 0) -> list[dict]:
    """Per framework and configuration: the median makespan and task span, the digests, scaf's ratios to
    them (of the medians, and round by round), and with solo runs (CPUS given) the bound on the task span and
    the share of the saving over this configuration that scaf captured: (this - scaf) / (this - bound)."""
    bound = solo_bound(runs, cpus) if cpus else None
    runs = [r for r in runs if r.get("kind", "pool") == "pool"]
    rows: list[dict] = []
    keys = sorted({(r["framework"], r["config"]) for r in runs}, key=lambda k: (k[0], CONFIGS.index(k[1])))
    med: dict[tuple[str, str], float] = {}
    span: dict[tuple[str, str], float] = {}
    digests: dict[tuple[str, str], set[str]] = {}
    for k in keys:
        ok = [r for r in runs if (r["framework"], r["config"]) == k and not r["error"]]
        if ok:
            med[k] = statistics.median(r["result"]["makespan_s"] for r in ok)
            spans = [x for x in (task_span(r["result"]) for r in ok) if x]
            if spans:
                span[k] = statistics.median(spans)
        digests[k] = {r["result"]["digest"] for r in ok}
    for fw, cfg in keys:
        ref = digests.get((fw, "default")) or set()
        ok = med.get((fw, cfg))
        s = med.get((fw, "scaf"))
        sp, ssp = span.get((fw, cfg)), span.get((fw, "scaf"))
        rows.append({
            "framework": fw, "config": cfg,
            "runs": sum(1 for r in runs if (r["framework"], r["config"]) == (fw, cfg)),
            "failed": sum(1 for r in runs if (r["framework"], r["config"]) == (fw, cfg) and r["error"]),
            "makespan_s": ok,
            "scaf_ratio": (s / ok) if ok and s else None,
            "scaf_ratio_paired": _paired(runs, fw, cfg, lambda res: res["makespan_s"]),
            "span_s": sp,
            "scaf_span_ratio": (ssp / sp) if sp and ssp else None,
            "bound_s": bound,
            "scaf_captured": ((sp - ssp) / (sp - bound))
            if cfg != "scaf" and sp and ssp and bound and sp > bound * 1.001 else None,
            "same_result": (digests[(fw, cfg)] == ref and len(ref) == 1) if ref and digests[(fw, cfg)] else None,
        })
    return rows


def render(rows: list[dict], meta: dict) -> str:
    out = [(f"# scaf bench pools: {meta['task']} tasks {meta['sizes']} over {meta['workers']} workers, "
            f"{meta['cpus']} CPUs, {meta['rounds']} rounds"), "",
           f"load average at start: {meta['load']}", "",
           ("| framework | configuration | makespan (median s) | scaf / this | scaf / this, round by round "
           "(median) | task span (median s) | scaf / this (span) | scaf's share of the achievable saving | "
           "same predictions as default | runs (failed) |"),
           "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]

    def f3(x: float | None) -> str:
        return f"{x:.3f}" if x is not None else "-"

    for r in rows:
        ms = f"{r['makespan_s']:.3f}" if r["makespan_s"] is not None else "FAILED"
        same = {True: "yes", False: "NO", None: "-"}[r["same_result"]]
        out.append(f"| {r['framework']} | {r['config']} | {ms} | {f3(r['scaf_ratio'])} | "
                   f"{f3(r['scaf_ratio_paired'])} | {f3(r['span_s'])} | {f3(r['scaf_span_ratio'])} | "
                   f"{f3(r.get('scaf_captured'))} | {same} | {r['runs']} ({r['failed']}) |")
    bound = next((r["bound_s"] for r in rows if r.get("bound_s")), None)
    if bound:
        out += ["", (f"The bound: no scheduler could make the task span shorter than {bound:.3f} s (from the solo "
                     "runs: the longest task on all CPUs, or the tasks' one-thread seconds over the CPUs, whichever "
                     "is longer). scaf's share of the achievable saving over a configuration is (its span - scaf's) "
                     "/ (its span - the bound): 1 is the best any scheduler could do, 0 no better than it, below 0 "
                     "worse; '-' where it has no saving to capture.")]
    out += ["", ("The makespan runs from the first submission to the last result, so it includes the pool's start "
            "(spawning the workers, their imports); the task span runs from the first task's start to the last "
            "one's end. Round by round: the median of scaf's makespan over this configuration's in the same "
            "round, where the configurations ran back to back."), "", "Configurations:", ""]
    out += [f"- `{k}`: {v}" for k, v in CONFIG_HELP.items()]
    return "\n".join(out) + "\n"


def measure(frameworks_: list[str], configs: list[str], task: str, workers: int, sizes: list[float], rounds: int,
            out: Path, python: str, timeout: float, tag: str) -> int:
    cpus = len(os.sched_getaffinity(0))
    out.mkdir(parents=True, exist_ok=True)
    (out / "logs").mkdir(exist_ok=True)
    meta = {"format": "scaf-bench-pools", "version": 1, "task": task, "workers": workers, "sizes": sizes,
            "cpus": cpus, "rounds": rounds, "python": python, "load": " ".join(f"{x:.2f}" for x in os.getloadavg()),
            "argv": sys.argv}
    runs: list[dict] = []
    for rnd in range(rounds):
        for fw in frameworks_:
            # The configurations of one framework back to back, rotated each round: a drift of the machine
            # hits them alike.
            order = configs[rnd % len(configs):] + configs[:rnd % len(configs)]
            for cfg in order:
                if cfg == "solo" or not applies(fw, cfg):
                    continue
                rec = run_one(fw, cfg, task, workers, sizes, cpus, python, tag, timeout, out / "logs", rnd)
                runs.append(rec)
                what = rec["error"] or f"{rec['result']['makespan_s']:.3f} s, digest {rec['result']['digest']}"
                print(f"round {rnd + 1} {fw} {cfg}: {what}", file=sys.stderr, flush=True)
                (out / "results.json").write_text(json.dumps({**meta, "runs": runs}, indent=1))
        if "solo" in configs:
            # The tasks' own times do not depend on the framework: once a round.
            for threads in sorted({1, cpus}):
                rec = run_solo(threads, task, sizes, python, tag, timeout, rnd)
                runs.append(rec)
                what = rec["error"] or " ".join(f"{x:.3f}" for x in rec["task_s"])
                print(f"round {rnd + 1} solo, {threads} thread(s): {what}", file=sys.stderr, flush=True)
                (out / "results.json").write_text(json.dumps({**meta, "runs": runs}, indent=1))
    rows = summarize(runs, cpus)
    text = render(rows, meta)
    (out / "report.md").write_text(text)
    (out / "report.json").write_text(json.dumps({**meta, "rows": rows}, indent=1))
    print(text)
    return 1 if any(r["error"] for r in runs) or any(r["same_result"] is False for r in rows) else 0
