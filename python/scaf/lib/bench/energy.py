"""Energy from the RAPL counters in /sys/class/powercap, where the kernel exposes and lets us read them."""

from __future__ import annotations

from pathlib import Path

POWERCAP = Path("/sys/class/powercap")


def _zones(root: Path) -> list[Path]:
    """Top-level RAPL zones (intel-rapl:0, intel-rapl:1, ...: one per package). Their subzones (core,
    uncore, dram as intel-rapl:0:0 ...) are parts of them, so adding those would count twice."""
    try:
        return sorted(p for p in root.glob("intel-rapl:*") if p.name.count(":") == 1)
    except OSError:
        return []


def read_uj(root: Path = POWERCAP) -> dict[str, tuple[int, int]] | None:
    """{zone: (energy_uj, max_energy_range_uj)} for every readable top-level zone; None when none is
    (no RAPL, as in most VMs, or energy_uj readable by root only, as on kernels since 5.10)."""
    out: dict[str, tuple[int, int]] = {}
    for z in _zones(root):
        try:
            e = int((z / "energy_uj").read_text().strip())
            try:
                rng = int((z / "max_energy_range_uj").read_text().strip())
            except (OSError, ValueError):
                rng = 0
        except (OSError, ValueError):
            continue
        out[z.name] = (e, rng)
    return out or None


def joules_between(before: dict[str, tuple[int, int]] | None, after: dict[str, tuple[int, int]] | None) -> float | None:
    """Energy used between two read_uj() readings, summed over the zones both saw; a counter that
    wrapped once is unwrapped with its range. None when either reading is missing."""
    if not before or not after:
        return None
    total = 0
    common = set(before) & set(after)
    if not common:
        return None
    for z in common:
        e0, rng = before[z]
        e1 = after[z][0]
        d = e1 - e0
        if d < 0:
            if rng <= 0:
                return None
            d += rng
        total += d
    return total / 1e6
