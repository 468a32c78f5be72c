"""`scaf allocate`: a dry run of the daemon's real policy code on clients given on the command line."""

from __future__ import annotations

import argparse
import math
import sys
from dataclasses import dataclass

DESCRIPTION = """\
Run one allocation decision of a scaf policy, exactly as the daemon would,
without a daemon: the same C code (build/lib/libscaf_policy.so) decides.

Each client is given as ALLOC:EFF, ALLOC:EFF+ALLOC2:EFF2 or
ALLOC:EFF+ALLOC2:EFF2+ALLOC3:EFF3, in the order the output follows:

  ALLOC  p', the number of threads the client ran with when its efficiency
         was measured (0 if it never ran)
  EFF    E, its parallel efficiency at ALLOC threads: speedup / ALLOC, so
         0.9 at 8 threads means a speedup of 7.2; `?` when not known yet
  +ALLOC2:EFF2
         a second point of the same program's curve, measured earlier at
         another team size (the daemon keeps the last E at each team size)
  +ALLOC3:EFF3
         a third point: the curve is fitted through the first two and
         passes through this one too (the daemon hands over the point
         furthest from ALLOC as the second, the nearest of the others as
         the third)

The output is one integer per client, space-separated, in input order: the
number of threads each client may use on N contexts.

The speedup policy (the default) fits each client a curve that can flatten
and fall, S(p) = p / (1 + sigma (p - 1) + kappa p (p - 1)) (the Universal
Scalability Law): Amdahl's law (kappa = 0) through its one point, or a curve
through both points when it has two that are far apart (x1.5) or show a
larger team no faster than a smaller one. It then hands out contexts one
chunk at a time to the client whose curve rises most per context. Contexts
no curve gains from go to clients with an unknown E, then equally to those
with a one-point curve; they stay idle only past a peak that was measured.
With --chunk C above 1 (SMT siblings), a curve past the N / C cores, where
it was not measured, rises at a quarter of its slope: a core's second
hardware thread adds far less than its first, which a curve through points
below the cores cannot show.
A client with an unknown E, or measured at p' = 1 with no earlier curve,
gets an equal share; E above 1 is read as 1. With --prev, the previous
allocation is kept unless the new one is better even when each client that
gains threads is read at E - 2 sd and each that loses them at E + 2 sd
(sd = 0.05 here, the daemon's measured noise where it has one), by more
than 1% (damping). docs/policy.md in scaf's source tree explains every rule.

The consumption policy reads the same curves and stops adding contexts to a
client when one more chunk would add less than --min-gain (default 0.5)
speedup per context; the rest stay idle.

Every client gets at least one thread (one chunk when N allows); with more
clients than contexts everyone gets 1; under equipartition the allocations
sum to N (less only if every client is at its bound, --cap).
"""

EPILOG = """\
exit status:
  0  printed the allocation
  1  the policy library is not built (run make)
  2  bad arguments: a malformed ALLOC:EFF, N < 1, an unknown policy, ...

examples:
  scaf allocate --cpus 16 8:0.9 8:0.5
      14 2          the better-scaling client gets more
  scaf allocate --cpus 16 --chunk 2 8:0.9 8:0.8
      8 8           whole SMT pairs; past the 8 cores an unmeasured curve
                    grows at a quarter of its slope (11 5 with --chunk 1)
  scaf allocate --cpus 16 8:0.9 8:0.5 '0:?'
      10 1 5        a newcomer gets an equal share until it is measured
  scaf allocate --cpus 8 4:0.1 4:0.9
      1 7           slower than serial at 4 threads: one thread
  scaf allocate --cpus 32 16:0.304+32:0.119
      13            slower at 32 than at 16: stops at the peak, 19 idle
  scaf allocate --cpus 16 --prev 10,6 8:0.9 8:0.5
      10 6          damped: 14 2 is not better once noise is allowed for
  scaf allocate --cpus 16 --policy equipartition 8:0.9 8:0.5 '0:?'
      6 5 5         equal shares, the remainder to the first
  scaf allocate --cpus 16 --cap 3,0 8:0.9 8:0.5
      3 13          a client never gets more than its bound (--cap; 0 = none)
  scaf allocate --cpus 16 --verbose 8:0.9 8:0.5
                    the allocation, then each client's curve (sigma,
                    kappa), its speedup at the threads it got and what one
                    more chunk would add
"""


class UsageError(Exception):
    """Bad command-line input: reported on stderr with exit status 2."""


@dataclass
class Spec:
    text: str
    eff_team: int  # ALLOC: p', the share E was measured at
    eff: float | None
    alt_team: int = 0  # a second point (0 = none)
    alt_eff: float = 0.0
    side_team: int = 0  # a third, on the other side of eff_team from the second (0 = none)
    side_eff: float = 0.0


def parse_client(text: str) -> Spec:
    """ALLOC:EFF[+ALLOC2:EFF2[+ALLOC3:EFF3]] -> Spec; raises UsageError with the reason."""
    parts = text.split("+")
    if len(parts) > 3:
        raise UsageError(f"client {text!r}: at most three points, ALLOC:EFF+ALLOC2:EFF2+ALLOC3:EFF3")
    spec = _parse_point(text, parts[0])
    others = [_parse_point(text, q) for q in parts[1:]]
    for n, pt in enumerate(others, start=2):
        if pt.eff is None or pt.eff_team < 2 or pt.eff_team == spec.eff_team:
            raise UsageError(f"client {text!r}: point {n} needs ALLOC{n} >= 2, another team size than ALLOC, "
                             f"and a known EFF{n}")
    if others:
        spec.alt_team, spec.alt_eff = others[0].eff_team, others[0].eff or 0.0
    if len(others) == 2:
        if others[1].eff_team == spec.alt_team:
            raise UsageError(f"client {text!r}: points 2 and 3 are both at {spec.alt_team} threads")
        spec.side_team, spec.side_eff = others[1].eff_team, others[1].eff or 0.0
    return spec


def _parse_point(text: str, point: str) -> Spec:
    alloc_s, sep, eff_s = point.partition(":")
    if not sep:
        raise UsageError(f"client {text!r}: expected ALLOC:EFF, e.g. 8:0.9, '4:?' or 16:0.3+32:0.12")
    try:
        alloc = int(alloc_s)
    except ValueError:
        raise UsageError(f"client {text!r}: ALLOC {alloc_s!r} is not a whole number of threads") from None
    if not 0 <= alloc <= 0xFFFFFFFF:
        raise UsageError(f"client {text!r}: ALLOC must be 0 or more")
    if eff_s.strip() == "?":
        return Spec(text, alloc, None)
    try:
        eff = float(eff_s)
    except ValueError:
        raise UsageError(f"client {text!r}: EFF {eff_s!r} is not a number (or ? for unknown)") from None
    if not math.isfinite(eff) or eff < 0:
        raise UsageError(f"client {text!r}: EFF must be a finite number >= 0 (or ? for unknown)")
    return Spec(text, alloc, eff)


def parse_list(text: str | None, what: str, count: int) -> list[int] | None:
    if text is None:
        return None
    items = [s.strip() for s in text.split(",")]
    if len(items) != count:
        raise UsageError(f"{what} has {len(items)} entries for {count} client(s)")
    out = []
    for s in items:
        try:
            v = int(s)
        except ValueError:
            raise UsageError(f"{what}: {s!r} is not a whole number") from None
        if not 0 <= v <= 0xFFFFFFFF:
            raise UsageError(f"{what}: {v} must be 0 or more")
        out.append(v)
    return out


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "allocate",
        help="dry run of a policy: threads per client from ALLOC:EFF",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--cpus", metavar="N", type=int, required=True, help="contexts to allocate (N >= 1)")
    p.add_argument("--policy", metavar="P",
                   help="speedup, equipartition or consumption (default: the daemon's default, speedup)")
    p.add_argument("--min-gain", metavar="G", type=float, default=0.5,
                   help="consumption: the least speedup one more context must add (0.001 to 1, default 0.5)")
    p.add_argument("--chunk", metavar="C", type=int, default=1,
                   help="allocation granularity, e.g. the SMT width (default 1)")
    p.add_argument("--prev", metavar="a,b,...",
                   help="previous allocations, one per client (0 = new), for damping")
    p.add_argument("--cap", metavar="a,b,...", help="each client's bound: the most threads it may get (0 = none)")
    p.add_argument("-v", "--verbose", action="store_true",
                   help="also print each client's curve, its speedup at its threads and its next gain")
    p.add_argument("clients", metavar="ALLOC:EFF", nargs="+",
                   help="one per client, e.g. 8:0.9, '4:?', 16:0.3+32:0.12 (a second point) or 10:0.78+14:0.6+8:0.93 (a third)")
    p.set_defaults(func=main)


def _verbose(policy: str, cpus: int, chunk: int, specs: list[Spec], clients: list, shares: list[int],
             min_gain: float) -> None:
    """Each client's curve as the policy read it, its speedup at the share it got, and what one more
    chunk would add per context."""
    from scaf.lib import policy as pol

    k = len(specs)
    step = chunk if k * chunk <= cpus else 1  # the chunk the policy hands out
    undamped = [int(x) for x in pol.speedup_model(cpus, clients, chunk)[1]] if policy == "speedup" else shares
    extra = f", min_gain={min_gain:g}" if policy == "consumption" else ""
    print(f"policy {policy}, N={cpus}, chunk={chunk}{extra}, {k} client(s), sum={sum(shares)}, "
          f"idle={max(cpus - sum(shares), 0)}")
    header = ("client", "p'", "E", "point 2", "point 3", "sigma", "kappa", "prev", "share", "S(share)", "next gain", "note")
    rows = []
    for i, sp in enumerate(specs):
        kind, sigma, kappa = pol.curve(clients[i])
        t = shares[i]
        notes = []
        if kind:
            here = pol.curve_at(clients[i], t, cpus, chunk)
            gain = (pol.curve_at(clients[i], t + step, cpus, chunk) - here) / step
            s_t, g_t = f"{here:.2f}", f"{gain:+.3f}"
            # One point slower than serial, or below E 0.05, is read with the coherency-only curve (sigma 0).
            notes.append("curve through both points" if kind == 2 else
                         "coherency-only curve through one point" if kappa > 0 else "Amdahl through one point")
        else:
            s_t = g_t = "-"
            notes.append("no curve (E unknown or p' < 2): equal share")
        if kind and policy == "consumption" and gain < min_gain:
            notes.append("below min_gain: stops here")
        elif kind and gain <= 0 and t < min(cpus, clients[i].max_threads or cpus):
            # One point past its peak is a team measured slower than the program's own serial run, or below E 0.05.
            slower = sp.eff is not None and sp.eff * sp.eff_team < 1
            notes.append("past its peak: stops here" if kind == 2 else
                         "slower than serial: stops here" if slower else "past the peak its point allows: stops here")
        if kind and pol.curve_at(clients[i], t + step, cpus, chunk) != pol.curve_at(clients[i], t + step):
            notes.append(f"past the {cpus // chunk} cores: a quarter of the slope")
        if sp.eff is not None and sp.eff > 1:
            notes.append("E read as 1")
        if clients[i].max_threads and t == clients[i].max_threads and t < cpus:
            notes.append("at its bound")
        if t != undamped[i]:
            notes.append(f"damped (undamped: {undamped[i]})")
        rows.append((str(i), str(sp.eff_team), "?" if sp.eff is None else f"{sp.eff:.3f}",
                     f"{sp.alt_team}:{sp.alt_eff:.3f}" if sp.alt_team else "-",
                     f"{sp.side_team}:{sp.side_eff:.3f}" if sp.side_team else "-",
                     f"{sigma:.4f}" if kind else "-", f"{kappa:.5f}" if kind else "-",
                     str(clients[i].prev) if clients[i].prev else "-", str(t), s_t, g_t, "; ".join(notes)))
    widths = [max(len(r[j]) for r in [header, *rows]) for j in range(len(header))]
    last = len(header) - 1
    for r in [header, *rows]:
        print("  ".join(v.ljust(widths[j]) if j in (0, last) else v.rjust(widths[j]) for j, v in enumerate(r)).rstrip())


def main(args: argparse.Namespace) -> int:
    try:
        if args.cpus < 1:
            raise UsageError(f"--cpus must be 1 or more, got {args.cpus}")
        if args.chunk < 1:
            raise UsageError(f"--chunk must be 1 or more, got {args.chunk}")
        if not (0.001 <= args.min_gain <= 1):  # NaN fails too
            raise UsageError(f"--min-gain must be a number from 0.001 to 1, got {args.min_gain}")
        specs = [parse_client(t) for t in args.clients]
        prev = parse_list(args.prev, "--prev", len(specs))
        bounds = parse_list(args.cap, "--cap", len(specs))
    except UsageError as e:
        print(f"scaf allocate: error: {e}", file=sys.stderr)
        return 2

    from scaf.lib import policy as pol

    try:
        names = pol.policy_names()
    except pol.PolicyLibraryMissing as e:
        print(f"scaf allocate: {e}", file=sys.stderr)
        return 1
    policy = args.policy or names[0]
    if policy not in names:
        print(f"scaf allocate: error: unknown policy {policy!r}; known: {', '.join(names)}", file=sys.stderr)
        return 2
    clients = [
        pol.Client(
            eff_team=s.eff_team,
            efficiency=s.eff,
            prev=prev[i] if prev else 0,
            max_threads=bounds[i] if bounds else 0,
            alt_team=s.alt_team,
            alt_efficiency=s.alt_eff,
            side_team=s.side_team,
            side_efficiency=s.side_eff,
        )
        for i, s in enumerate(specs)
    ]
    try:
        shares, _ = pol.allocate(policy, args.cpus, clients, args.chunk, min_gain=args.min_gain)
    except ValueError as e:
        print(f"scaf allocate: error: {e}", file=sys.stderr)
        return 2
    print(" ".join(str(t) for t in shares))
    if args.verbose and policy != "equipartition":
        _verbose(policy, args.cpus, args.chunk, specs, clients, shares, args.min_gain)
    return 0
