"""The policy advice of `scaf doctor`: which policy to recommend from the improvement factors of calibration pairs."""

from __future__ import annotations

from dataclasses import dataclass

# A policy must beat unmodified sharing by this factor (geometric mean of Σspeedup ratios
# over the calibration pairs) to be worth recommending; the same threshold as a bench "win".
HELPS = 1.05
# speedup is the default policy; equipartition is recommended only when it beats it by more.
PREFER_EQUI = 1.02
CONFIGS = ("unmodified", "equipartition", "speedup")
# Pairs that show the behaviours scaf is about: a program that collapses when threads outnumber
# cores next to one that scales; memory-bound next to sparse; barrier-heavy next to lock-bound.
PAIRS = (("ep", "spin"), ("cg", "stream"), ("crit", "stencil"), ("ep", "crit"), ("ep", "ep"))


@dataclass
class Advice:
    verdict: str  # "speedup" | "equipartition" | "none"
    text: str
    factors: dict[str, float | None]


def advise(factors: dict[str, float | None], cpus: int) -> Advice:
    """The recommendation from the mean improvement factors over unmodified (thresholds above)."""
    fe, fs = factors.get("equipartition"), factors.get("speedup")
    if cpus < 2:
        return Advice("none", "scaf does not help here: there is only one CPU to share", factors)
    known = [f for f in (fe, fs) if f is not None]
    if not known:
        return Advice("none", "no usable calibration runs: cannot tell (see the failures above)", factors)
    best = max(known)
    if best < HELPS:
        return Advice("none", f"scaf does not help here: the best policy gives {best:.3f}X the "
                              f"unmodified Σspeedup, under the {HELPS}X threshold", factors)
    if fe is not None and (fs is None or fe > PREFER_EQUI * fs):
        return Advice("equipartition", f"use --policy equipartition: {fe:.3f}X over unmodified, "
                                       f"against {fmt_factor(fs)}X for speedup", factors)
    return Advice("speedup", f"use --policy speedup (the default): {fmt_factor(fs)}X over unmodified, "
                             f"against {fmt_factor(fe)}X for equipartition", factors)


def how_to_apply(verdict: str) -> str:
    """The command that puts the advice to use."""
    if verdict == "equipartition":
        return ("start your daemon with it before running programs: `scaf daemon --policy equipartition` "
                "(or add --policy equipartition to a system-wide scafd's command line); `scaf run -- PROGRAM` "
                "then uses it")
    if verdict == "speedup":
        return "nothing to change: speedup is scafd's default policy; run programs with `scaf run -- PROGRAM`"
    return "run your programs as they are, without `scaf run`"


def spread(values: list[float]) -> str:
    """'n pairs, range lo-hi': how far the pairs behind a mean are apart."""
    if not values:
        return "no pairs"
    lo, hi = min(values), max(values)
    return f"{len(values)} pair{'s' if len(values) != 1 else ''}, range {lo:.3f}-{hi:.3f}X"


def fmt_factor(x: float | None) -> str:
    """A factor with 3 decimals, "-" when unknown."""
    return "-" if x is None else f"{x:.3f}"


def choose_pairs(available: list[str], quick: bool, programs: list[str] | None = None) -> list[tuple[str, str]]:
    """The calibration pairs: the user's programs (each with each other first, then each with itself),
    else the chosen pairs of workloads that are built."""
    if programs:
        mixed = [(a, b) for i, a in enumerate(programs) for b in programs[i + 1:]]
        pairs = mixed + [(a, a) for a in programs]
        return pairs[:1] if quick else pairs
    have = set(available)
    pairs = [p for p in PAIRS if set(p) <= have]
    if not pairs and available:
        pairs = [(available[0], available[-1])]
    return pairs[:1] if quick else pairs
