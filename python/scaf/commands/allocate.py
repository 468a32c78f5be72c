"""`scaf allocate`: a dry run of the daemon's real policy code on clients given on the command line."""

from __future__ import annotations

import argparse
import math
import sys
from dataclasses import dataclass

DESCRIPTION = """\
Run one allocation decision of a scaf policy, exactly as the daemon would,
without a daemon: the same C code (build/lib/libscaf_policy.so) decides.

Each client is given as ALLOC:EFF, in the order the output follows:

  ALLOC  p', the number of threads the client ran with when its efficiency
         was measured (0 if it never ran)
  EFF    E, its parallel efficiency at ALLOC threads: speedup / ALLOC, so
         0.9 at 8 threads means a speedup of 7.2; `?` when not known yet

The output is one integer per client, space-separated, in input order: the
number of threads each client may use on N contexts.

The speedup policy (the default) fits S(p) = 1 + C ln p through (1, 1) and
(p', E p'), so C = (E p' - 1) / ln p', gives each client the exact share
N C / sum(C), and rounds the shares to whole chunks, largest error first.
A client with an unknown E, or measured at p' = 1, is assumed average (the
mean C of the others); a client slower than serial (E p' < 1) gets one chunk;
E above 1 is read as 1. With --prev, a client keeps its previous allocation
while its share is within max(one chunk, 10%) of it (damping). docs/policy.md
in scaf's source tree explains every rule.

The consumption policy fits Amdahl's law through each client's point
(sigma = (1/E - 1) / (p' - 1)) and gives contexts one chunk at a time to the
client whose modelled speedup rises most, until the best rise per context is
below --min-gain (default 0.5); the rest stay idle. A client with an unknown
E gets an equal share.

Every client gets at least one thread (one chunk when N allows); with more
clients than contexts everyone gets 1; otherwise the allocations sum to N
(less only if every client is at its --cap, or under consumption).
"""

EPILOG = """\
exit status:
  0  printed the allocation
  1  the policy library is not built (run make)
  2  bad arguments: a malformed ALLOC:EFF, N < 1, an unknown policy, ...

examples:
  scaf allocate --cpus 16 8:0.9 8:0.5
      11 5          the better-scaling client gets more
  scaf allocate --cpus 16 --chunk 2 8:0.9 8:0.5
      10 6          whole SMT pairs only
  scaf allocate --cpus 16 8:0.9 8:0.5 '0:?'
      7 4 5         a newcomer is assumed average (the mean C of the others)
  scaf allocate --cpus 8 4:0.1 4:0.9
      1 7           slower than serial at 4 threads: one thread
  scaf allocate --cpus 16 --prev 10,6 8:0.9 8:0.5
      10 6          damped: 10.78 and 5.22 are within one context of 10 and 6
  scaf allocate --cpus 16 --policy equipartition 8:0.9 8:0.5 '0:?'
      6 5 5         equal shares, the remainder to the first
  scaf allocate --cpus 16 --cap 3,0 8:0.9 8:0.5
      3 13          a client never gets more than its cap (0 = none)
  scaf allocate --cpus 16 --verbose 8:0.9 8:0.5
                    the allocation, then C, the exact share and the target
                    (after caps and the one-chunk minimum) of each client
"""


class UsageError(Exception):
    """Bad command-line input: reported on stderr with exit status 2."""


@dataclass
class Spec:
    text: str
    report_threads: int  # ALLOC: p', the share E was measured at
    eff: float | None


def parse_client(text: str) -> Spec:
    """ALLOC:EFF -> Spec; raises UsageError with the reason."""
    alloc_s, sep, eff_s = text.partition(":")
    if not sep:
        raise UsageError(f"client {text!r}: expected ALLOC:EFF, e.g. 8:0.9 or '4:?'")
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
    p.add_argument("--cap", metavar="a,b,...", help="most threads each client may get (0 = no cap)")
    p.add_argument("-v", "--verbose", action="store_true",
                   help="also print C, the exact share and the target of each client")
    p.add_argument("clients", metavar="ALLOC:EFF", nargs="+", help="one per client, e.g. 8:0.9 or '4:?'")
    p.set_defaults(func=main)


def _note(spec: Spec, coef: float, cap: int, shares: int, undamped: int, cpus: int) -> str:
    notes = []
    assumed = "assumed average C" if coef > 0 else "no C known: weight 1"
    if spec.eff is None:
        notes.append(f"E unknown: {assumed}")
    elif spec.report_threads < 2:
        notes.append(f"p' < 2 says nothing about scaling: {assumed}")
    else:
        if spec.eff > 1:
            notes.append("E read as 1")
        if coef <= 0:
            notes.append("E p' <= 1: no gain, weight 0")
    if cap and shares == cap and cap < cpus:
        notes.append("at cap")
    if shares != undamped:
        notes.append(f"damped (undamped: {undamped})")
    return "; ".join(notes) or "measured"


def _verbose_consumption(cpus: int, chunk: int, specs: list[Spec], shares: list[int], coef: list[float],
                         min_gain: float) -> None:
    """Each client's fitted curve as the policy read it (coef = E(2) = 1 / (1 + sigma), 0 = none): its
    speedup at the threads it got, and what one more chunk would have added per context."""
    k = len(specs)
    unit = chunk if k * chunk <= cpus else 1
    print(f"policy consumption, N={cpus}, chunk={chunk}, min_gain={min_gain:g}, {k} client(s), "
          f"sum={sum(shares)}, idle={max(cpus - sum(shares), 0)}")
    header = ("client", "p'", "E", "sigma", "threads", "S(threads)", "next gain", "note")
    rows = []
    for i, sp in enumerate(specs):
        if coef[i] > 0:
            sigma = 1.0 / coef[i] - 1.0

            def speedup(p: float, sigma: float = sigma) -> float:
                return p / (1.0 + sigma * (p - 1.0))

            t = shares[i]
            gain = (speedup(t + unit) - speedup(t)) / unit
            note = "below min_gain: stops here" if gain < min_gain else "capped or out of contexts"
            rows.append((str(i), str(sp.report_threads), "?" if sp.eff is None else f"{sp.eff:.3f}",
                         f"{sigma:.4f}", str(t), f"{speedup(t):.2f}", f"{gain:.3f}", note))
        else:
            rows.append((str(i), str(sp.report_threads), "?" if sp.eff is None else f"{sp.eff:.3f}", "-",
                         str(shares[i]), "-", "-", "no curve (E unknown, p' < 2, or probed): equal share"))
    widths = [max(len(r[j]) for r in [header, *rows]) for j in range(len(header))]
    for r in [header, *rows]:
        print("  ".join(v.ljust(widths[j]) if j in (0, 7) else v.rjust(widths[j]) for j, v in enumerate(r)).rstrip())


def _verbose(policy: str, cpus: int, chunk: int, specs: list[Spec], clients: list, shares: list[int],
             coef: list[float], caps: list[int] | None) -> None:
    from scaf.lib import policy as pol

    k = len(specs)
    if policy == "speedup":
        model_coef, exact = pol.speedup_model(cpus, clients, chunk)
    else:
        model_coef, exact = coef, [cpus / k] * k
    capl = [c.max_threads for c in clients]
    tgt = pol.targets(exact, cpus, chunk, capl) if k <= cpus else [1.0] * k
    undamped = pol.intpart(exact, cpus, chunk, capl)
    print(f"policy {policy}, N={cpus}, chunk={chunk}, {k} client(s), sum={sum(shares)}")
    header = ("client", "p'", "E", "C", "exact", "target", "prev", "threads", "note")
    rows = []
    for i, s in enumerate(specs):
        c = clients[i]
        rows.append((
            str(i),
            str(s.report_threads),
            "?" if s.eff is None else f"{s.eff:.3f}",
            f"{model_coef[i]:.4f}" if policy == "speedup" else "-",
            f"{exact[i]:.3f}",
            f"{tgt[i]:.3f}",
            str(c.prev) if c.prev else "-",
            str(shares[i]),
            _note(s, model_coef[i], caps[i] if caps else 0, shares[i], undamped[i], cpus)
            if policy == "speedup" else ("at cap" if caps and caps[i] and shares[i] == caps[i] else ""),
        ))
    widths = [max(len(r[j]) for r in [header, *rows]) for j in range(len(header))]
    for r in [header, *rows]:
        print("  ".join(v.ljust(widths[j]) if j in (0, 8) else v.rjust(widths[j]) for j, v in enumerate(r)).rstrip())


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
        caps = parse_list(args.cap, "--cap", len(specs))
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
            report_threads=s.report_threads,
            efficiency=s.eff,
            prev=prev[i] if prev else 0,
            max_threads=caps[i] if caps else 0,
        )
        for i, s in enumerate(specs)
    ]
    try:
        shares, coef = pol.allocate(policy, args.cpus, clients, args.chunk, min_gain=args.min_gain)
    except ValueError as e:
        print(f"scaf allocate: error: {e}", file=sys.stderr)
        return 2
    print(" ".join(str(t) for t in shares))
    if args.verbose and policy == "consumption":
        _verbose_consumption(args.cpus, args.chunk, specs, shares, coef, args.min_gain)
    elif args.verbose:
        _verbose(policy, args.cpus, args.chunk, specs, clients, shares, coef, caps)
    return 0
