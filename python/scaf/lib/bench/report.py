"""What a bench folder's runs say: serial times, failures, each pair's Σspeedup, improvements and every table's rows."""

from __future__ import annotations

import math
import statistics
from collections import Counter
from dataclasses import dataclass, field

from scaf.lib.bench import configs, store

WIN = 1.05   # improvement factor at or above: a win
LOSS = 0.95  # below: a loss; in between: even

# The pseudo-baseline of the summary: per pair, whichever of configs.BASELINES did best.
BEST = "best"


def geomean(xs: list[float]) -> float | None:
    xs = [x for x in xs if x > 0]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


@dataclass
class Serial:
    time: float | None
    checksum: str | None
    ok: int


def serial_times(runs: list[dict]) -> dict[str, Serial]:
    """Per workload: median 1-thread solo time of verified runs, and the reference checksum."""
    times: dict[str, list[float]] = {}
    sums: dict[str, Counter[str]] = {}
    for run in runs:
        if run["kind"] != "solo" or run["threads"] != 1:
            continue
        for p in run["programs"]:
            if p.get("error") is None and p.get("time_s") is not None:
                times.setdefault(p["workload"], []).append(p["time_s"])
                if p.get("checksum"):
                    sums.setdefault(p["workload"], Counter())[p["checksum"]] += 1
            else:
                times.setdefault(p["workload"], [])
    out = {}
    for w, ts in times.items():
        common = sums.get(w, Counter()).most_common(1)
        out[w] = Serial(statistics.median(ts) if ts else None, common[0][0] if common else None, len(ts))
    return out


def program_failure(p: dict, serial: dict[str, Serial]) -> str | None:
    """Why a program's result cannot be used, or None. A checksum that differs from the
    1-thread run is a failure too: under scaf a program must compute the same result."""
    if p.get("error"):
        return str(p["error"])
    ref = serial.get(p["workload"])
    if ref and ref.checksum and p.get("checksum") and p["checksum"] != ref.checksum:
        if p.get("command") is not None:
            return (f"output (stdout less --ignore lines, and --output files) differs from the 1-thread "
                    f"run's: digest {p['checksum']}, not {ref.checksum}")
        return f"checksum {p['checksum']} differs from the 1-thread run's {ref.checksum}"
    return None


@dataclass
class Failure:
    what: str
    workload: str
    reason: str


def collect_failures(runs: list[dict], serial: dict[str, Serial]) -> list[Failure]:
    out = []
    for run in runs:
        key = store.run_key(run)
        what = " ".join(str(k) for k in key)
        if run.get("error"):
            out.append(Failure(what, "-", str(run["error"])))
        for p in run.get("programs", []):
            why = program_failure(p, serial)
            if why:
                out.append(Failure(what, p["workload"], why))
    return out


@dataclass
class PairEntry:
    """One pair under one configuration, over its repeats."""

    times: list[float | None] = field(default_factory=lambda: [None, None])
    speedups: list[float | None] = field(default_factory=lambda: [None, None])
    ok_runs: int = 0
    failed_runs: int = 0

    @property
    def total(self) -> float | None:
        if any(s is None for s in self.speedups):
            return None
        return sum(self.speedups)  # type: ignore[arg-type]


def pair_entries(runs: list[dict], serial: dict[str, Serial]) -> dict[tuple[str, str], dict[str, PairEntry]]:
    """(a, b) -> config -> entry; per slot the median time over the runs where both programs
    are usable (a run with a failed program is not half-counted)."""
    grouped: dict[tuple[str, str], dict[str, list[dict]]] = {}
    for run in runs:
        if run["kind"] == "pair":
            grouped.setdefault(tuple(run["pair"]), {}).setdefault(run["config"], []).append(run)
    out: dict[tuple[str, str], dict[str, PairEntry]] = {}
    for pair, by_config in grouped.items():
        for config, rs in by_config.items():
            e = PairEntry()
            slot_times: list[list[float]] = [[], []]
            for run in rs:
                progs = run.get("programs", [])
                good = (not run.get("error") and len(progs) == 2
                        and all(program_failure(p, serial) is None for p in progs))
                if not good:
                    e.failed_runs += 1
                    continue
                e.ok_runs += 1
                for p in progs:
                    slot_times[p["slot"]].append(p["time_s"])
            for slot in (0, 1):
                if slot_times[slot]:
                    t = statistics.median(slot_times[slot])
                    e.times[slot] = t
                    ser = serial.get(pair[slot])
                    if ser and ser.time and t > 0:
                        e.speedups[slot] = ser.time / t
            out.setdefault(pair, {})[config] = e  # type: ignore[index]
    return out


def config_order(runs: list[dict]) -> list[str]:
    seen = {r["config"] for r in runs if r["kind"] == "pair"}
    known = [c for c in configs.CONFIGS if c in seen]
    return known + sorted(seen - set(known))


@dataclass
class ClassRow:
    baseline: str
    cls: str
    pairs: int
    percent: float
    mean_factor: float | None


def improvement(entries: dict, candidate: str, baseline: str) -> dict[tuple[str, str], float]:
    out = {}
    for pair, by_config in entries.items():
        c, b = by_config.get(candidate), by_config.get(baseline)
        if c and b and c.total and b.total:
            out[pair] = c.total / b.total
    return out


@dataclass
class VsBest:
    """The candidate (and its warm twin, when it ran) against the best a user could do without scaf, in one
    pair."""

    candidate_total: float | None
    best: str | None  # the baseline with the largest Σspeedup in this pair (the first listed on a tie)
    best_total: float | None
    factor_best: float | None  # candidate / best
    unmodified_total: float | None
    factor_unmodified: float | None
    warm_total: float | None = None  # the warm twin's Σspeedup (None: it did not run, or failed)
    warm_factor_best: float | None = None
    warm_factor_unmodified: float | None = None

    @property
    def below(self) -> bool:
        """More than 5% below the best baseline: the promise 'never slower than without scaf' broken."""
        return self.factor_best is not None and self.factor_best < LOSS

    @property
    def warm_below(self) -> bool:
        """The warm run more than 5% below the best baseline: with a memory that knows both programs, scaf
        should do at least as well as a user's best guess."""
        return self.warm_factor_best is not None and self.warm_factor_best < LOSS

    @property
    def below_unmodified(self) -> bool:
        """The cold run below plain (unmodified): a first run, with nothing remembered, must not lose to it."""
        return self.factor_unmodified is not None and self.factor_unmodified < 1.0


def best_of(order: list[str], candidate: str) -> list[str]:
    """The baselines present that a user could have picked instead of scaf."""
    return [c for c in configs.BASELINES if c in order and c != candidate]


def _ratio(x: float | None, y: float | None) -> float | None:
    return x / y if x and y else None


def vs_best(entries: dict, candidate: str, baselines: list[str], warm: str | None = None) -> dict[tuple[str, str], VsBest]:
    """Per pair that ran the candidate (or its warm twin WARM): its Σspeedup against the best of `baselines`
    that worked there, and against unmodified. A baseline that failed in a pair cannot be its best."""
    out = {}
    for pair, by_config in entries.items():
        cand = by_config.get(candidate)
        hot = by_config.get(warm) if warm else None
        if cand is None and hot is None:
            continue
        present = [(b, by_config[b].total) for b in baselines if b in by_config and by_config[b].total]
        best, best_total = max(present, key=lambda x: x[1]) if present else (None, None)
        unmod = by_config.get("unmodified")
        unmod_total = unmod.total if unmod and unmod.total and candidate != "unmodified" else None
        c = (cand.total or None) if cand else None
        w = (hot.total or None) if hot else None
        out[pair] = VsBest(c, best, best_total, _ratio(c, best_total), unmod_total, _ratio(c, unmod_total),
                           w, _ratio(w, best_total), _ratio(w, unmod_total))
    return out


def paired_factors(runs: list[dict], serial: dict[str, Serial], candidates: list[str],
                   baselines: list[str]) -> dict[tuple[str, str], dict[str, list[float]]]:
    """(a, b) -> candidate -> its factor against the best baseline, one per repeat, each measured within that
    repeat alone: the configurations of one repeat run one after another, so a machine whose speed drifts
    over minutes (a shared VM) moves the candidate and its baselines together. A repeat where the candidate
    or every baseline failed gives no factor."""
    totals: dict[tuple[tuple[str, str], int], dict[str, float]] = {}
    for run in runs:
        if run["kind"] != "pair" or run["config"] not in (*candidates, *baselines):
            continue
        progs = run.get("programs", [])
        if run.get("error") or len(progs) != 2 or any(program_failure(p, serial) is not None for p in progs):
            continue
        speedups = []
        for p in progs:
            ser = serial.get(p["workload"])
            if not (ser and ser.time and p.get("time_s")):
                break
            speedups.append(ser.time / p["time_s"])
        else:
            totals.setdefault((tuple(run["pair"]), run.get("repeat", 0)), {})[run["config"]] = sum(speedups)
    out: dict[tuple[str, str], dict[str, list[float]]] = {}
    for (pair, _), by_config in sorted(totals.items()):
        best = max((by_config[b] for b in baselines if b in by_config), default=None)
        for c in candidates:
            if best and c in by_config:
                out.setdefault(pair, {}).setdefault(c, []).append(by_config[c] / best)  # type: ignore[index]
    return out


def summary_rows(factors_by_baseline: dict[str, list[float]]) -> list[ClassRow]:
    rows = []
    for base, factors in factors_by_baseline.items():
        n = len(factors)
        classes = (("wins", [f for f in factors if f >= WIN]),
                   ("even", [f for f in factors if LOSS <= f < WIN]),
                   ("losses", [f for f in factors if f < LOSS]),
                   ("all", factors))
        for name, fs in classes:
            rows.append(ClassRow(base, name, len(fs), 100.0 * len(fs) / n if n else 0.0, geomean(fs)))
    return rows


def solo_rows(runs: list[dict], serial: dict[str, Serial]) -> list[dict]:
    cells: dict[tuple[str, int], dict] = {}
    for run in runs:
        if run["kind"] != "solo":
            continue
        for p in run["programs"]:
            c = cells.setdefault((p["workload"], run["threads"]), {"times": [], "failed": 0})
            if program_failure(p, serial) is None:
                c["times"].append(p["time_s"])
            else:
                c["failed"] += 1
    rows = []
    for (w, t), c in sorted(cells.items()):
        time = statistics.median(c["times"]) if c["times"] else None
        ser = serial.get(w)
        sp = ser.time / time if (ser and ser.time and time) else None
        rows.append({"workload": w, "threads": t, "time_s": time, "speedup": sp,
                     "efficiency": sp / t if sp else None, "ok_runs": len(c["times"]),
                     "failed_runs": c["failed"]})
    return rows


def overhead_rows(runs: list[dict]) -> list[dict]:
    """Per variant: median time, and the median over rounds of time / plain time in that round."""
    by_round: dict[int, dict[str, float]] = {}
    failed: Counter[str] = Counter()
    times: dict[str, list[float]] = {}
    for run in runs:
        if run["kind"] != "overhead":
            continue
        p = run["programs"][0] if run.get("programs") else None
        if p is None or p.get("error") or run.get("error"):
            failed[run["variant"]] += 1
            continue
        by_round.setdefault(run["round"], {})[run["variant"]] = p["time_s"]
        times.setdefault(run["variant"], []).append(p["time_s"])
    rows = []
    for variant in sorted(times, key=lambda v: (v != "plain", v)):
        ratios = [r[variant] / r["plain"] for r in by_round.values()
                  if variant in r and r.get("plain")]
        rows.append({"variant": variant, "rounds": len(times[variant]),
                     "median_time_s": statistics.median(times[variant]),
                     "median_ratio": statistics.median(ratios) if ratios else None,
                     "failed": failed[variant]})
    for variant in failed:
        if variant not in times:
            rows.append({"variant": variant, "rounds": 0, "median_time_s": None,
                         "median_ratio": None, "failed": failed[variant]})
    return rows


# ---------------------------------------------------------------- plots


@dataclass
class ResourceRow:
    config: str
    runs: int  # pair runs whose programs all ran, verified, with their CPU time known
    cpu_s: float | None  # CPU-seconds of both programs, mean per pair run
    saved_s: float | None  # against equipartition, per pair run, over the pairs both ran
    saved_pct: float | None
    energy_j: float | None  # mean per pair run where RAPL was readable


def resource_rows(runs: list[dict], baseline: str = "equipartition") -> list[ResourceRow]:
    """CPU-seconds (and energy) per configuration from the pair runs that worked."""
    per: dict[str, dict[tuple[str, str], list[float]]] = {}
    energy: dict[str, list[float]] = {}
    for r in runs:
        progs = r.get("programs") or []
        if r.get("kind") != "pair" or r.get("error") or not progs:
            continue
        if any(p.get("error") is not None or p.get("cpu_s") is None for p in progs):
            continue
        pair = (r["pair"][0], r["pair"][1])
        per.setdefault(r["config"], {}).setdefault(pair, []).append(sum(p["cpu_s"] for p in progs))
        if r.get("energy_j") is not None:
            energy.setdefault(r["config"], []).append(r["energy_j"])
    rows = []
    base = per.get(baseline, {})
    for cfg in config_order(runs):
        if cfg not in per:
            continue
        cpu = [x for xs in per[cfg].values() for x in xs]
        saved_s = saved_pct = None
        both = [pr for pr in per[cfg] if pr in base]
        if cfg != baseline and both:
            b = sum(statistics.mean(base[pr]) for pr in both)
            c = sum(statistics.mean(per[cfg][pr]) for pr in both)
            saved_s = (b - c) / len(both)
            saved_pct = 100.0 * (b - c) / b if b > 0 else None
        en = energy.get(cfg)
        rows.append(ResourceRow(cfg, len(cpu), statistics.mean(cpu), saved_s, saved_pct,
                                statistics.mean(en) if en else None))
    return rows
