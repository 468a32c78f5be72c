"""The measurements of `scaf bench solo`: each workload alone at each thread count (speedup curves)."""

from __future__ import annotations

from scaf.lib.bench.errors import BenchError


def default_threads(n: int) -> list[int]:
    """1, 2, 4, ... up to n, and n itself."""
    out = []
    t = 1
    while t < n:
        out.append(t)
        t *= 2
    out.append(n)
    return out


def parse_threads(text: str) -> list[int]:
    try:
        vals = [int(t) for t in text.split(",") if t.strip()]
    except ValueError:
        raise BenchError(f"--threads wants a list of positive integers like 1,2,4, not {text!r}") from None
    if not vals or any(v < 1 or v > 4096 for v in vals):
        raise BenchError(f"--threads wants positive integers (at most 4096), not {text!r}")
    return sorted(set(vals))
