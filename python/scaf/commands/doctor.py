"""`scaf doctor`: describe this machine, run a short calibration, and say which policy to use."""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

from scaf.lib.advice import (
    CONFIGS,
    HELPS,
    PREFER_EQUI,
    advise,
    choose_pairs,
    fmt_factor,
)

EPILOG = f"""\
what it does:
  1. reports the topology (from /sys), the cgroup CPU limits, whether hardware
     performance counters exist, what is built, and whether a daemon answers;
  2. runs a few pairs of workloads (size W; --quick: one pair at size S) under
     unmodified, equipartition and speedup, each with a private daemon;
  3. recommends a policy from the geometric mean, over the pairs, of
     F(policy) = Σspeedup(policy) / Σspeedup(unmodified):
       max(F) < {HELPS}                      -> "scaf does not help here"
       F(equipartition) > {PREFER_EQUI} x F(speedup)    -> equipartition
       otherwise                          -> speedup (the default)
  It stops adding pairs when the next one would overrun --budget.

exit status: 0 advice given, 1 a calibration run failed (listed), 2 usage error

examples:
  scaf doctor                   about 2-3 minutes on a 2-core machine
  scaf doctor --quick           a 15-second smoke check (size S: timings are noisy)
  scaf doctor --out /tmp/doc    keep the raw runs; `scaf bench report /tmp/doc` redraws them
"""


def environment_report(console) -> tuple[dict, list[str]]:
    """Prints machine, limits, counters, build and daemon state; returns the description and warnings."""
    from scaf.lib import autostart, paths, proto
    from scaf.lib.bench import common, machine

    m = machine.describe()
    t = m["topology"]
    cg = m["cgroup"]
    warnings: list[str] = []
    console.rule("machine")
    console.print(f"CPU model:           {m['cpu_model']} ({m['arch']})", highlight=False)
    console.print(f"CPUs online:         {t['online']} ({t['logical_cpus']} logical)", highlight=False)
    console.print(f"sockets x cores:     {t['sockets']} x {t['cores'] // max(t['sockets'], 1)}, "
                  f"{t['smt']} thread(s) per core, {t['numa_nodes']} NUMA node(s)", highlight=False)
    console.print(f"our affinity:        {t['affinity']}", highlight=False)
    console.print(f"kernel:              {m['kernel']}", highlight=False)
    console.print(f"memory:              {m['memory_gib']} GiB", highlight=False)
    console.print(f"load average:        {m['loadavg']}", highlight=False)
    console.rule("limits and counters")
    quota = cg.get("cpu_quota_cpus")
    console.print(f"cgroup:              v{cg.get('version') or '?'} {cg.get('path') or ''}", highlight=False)
    console.print(f"cpu quota:           {'none' if quota is None else f'{quota:g} CPUs'}"
                  f" (cpu.max {cg.get('cpu_max', '?')})", highlight=False)
    console.print(f"cpuset:              {cg.get('cpuset') or '-'}", highlight=False)
    hc = m["hardware_counters"]
    console.print(f"hardware counters:   {'yes' if hc['available'] else 'no'} ({hc['detail']}; "
                  f"perf_event_paranoid {hc['perf_event_paranoid']})", highlight=False)
    if not hc["available"]:
        console.print("                     the layer estimates efficiency from timing "
                      "(serial experiments)", highlight=False)
    if quota is not None and quota < len(os.sched_getaffinity(0)):
        warnings.append(f"the cgroup allows {quota:g} CPUs of the {len(os.sched_getaffinity(0))} "
                        "in our affinity: scafd counts the quota")
    try:
        load1 = float(str(m["loadavg"]).split()[0])
    except (ValueError, IndexError):
        load1 = 0.0
    if load1 > 0.5:
        warnings.append(f"the machine is not idle (load {load1:.2f}): calibration numbers are noisy")
    console.rule("scaf")
    for what, path in (("scafd", paths.scafd()), ("layer", paths.layer())):
        console.print(f"{what + ':':<21}{path} {'ok' if path.exists() else 'MISSING (run make)'}",
                      highlight=False)
    wl = common.available_workloads()
    console.print(f"{'workloads:':<21}{', '.join(wl) or 'none (run make)'}", highlight=False)
    sock = paths.default_socket()
    try:
        st = autostart.answers(sock, timeout=1.0)
    except (proto.UntrustedDaemon, proto.BadStatus) as e:
        warnings.append(f"the daemon on {sock} is not usable: {e}")
        st = None
    if st:
        console.print(f"{'daemon:':<21}pid {st.get('daemon_pid')} on {sock}, policy {st.get('policy')}, "
                      f"{st.get('cpus')} CPUs, {len(st.get('clients', []))} client(s)", highlight=False)
    else:
        console.print(f"{'daemon:':<21}none answers on {sock} (scaf run starts one per user)",
                      highlight=False)
    for w in warnings:
        console.print(f"[yellow]warning:[/] {w}")
    return m, warnings


def calibrate(console, out: Path, pairs: list[tuple[str, str]], size: str, stagger: float,
              budget: float, started: float) -> tuple[dict | None, int]:
    """Runs serial times and the pairs under CONFIGS within the budget; returns (analysis, failures)."""
    from scaf.lib.bench import common, machine, report, store
    from scaf.lib.bench import pairs as bench_pairs

    cpus = sorted(os.sched_getaffinity(0))
    params = {"size": size, "stagger_s": stagger, "cpus": machine.format_cpulist(cpus)}
    results = store.Results(out, params, machine.describe())
    tag = common.new_tag()
    done_pairs: list[tuple[str, str]] = []
    for i, (a, b) in enumerate(pairs):
        serial = report.serial_times(results.runs())
        known = [s.time for s in serial.values() if s.time]
        guess = sum(known) / len(known) if known else 10.0
        ta = serial[a].time if a in serial and serial[a].time else None
        tb = serial[b].time if b in serial and serial[b].time else None
        # Serial runs still to do, then two programs on min(2, N) CPUs: about their summed
        # serial time spread over those, per configuration.
        est = sum(guess for t in (ta, tb) if t is None)
        est += len(CONFIGS) * (1.3 * ((ta or guess) + (tb or guess)) / min(2, len(cpus)) + stagger + 0.5)
        left = budget - (time.monotonic() - started)
        if i > 0 and est > left:
            console.print(f"skipping {a}+{b} and later pairs: about {est:.0f} s needed, "
                          f"{max(left, 0):.0f} s of the {budget:g} s budget left", highlight=False)
            break
        units = [common.solo_unit(w, 1, 0, size, cpus, tag, 600) for w in dict.fromkeys((a, b))]
        units += [bench_pairs.pair_unit(a, b, c, 0, size, stagger, cpus, False, results.dir, tag, 600, [])
                  for c in CONFIGS]
        common.execute(results, units)
        done_pairs.append((a, b))
    runs = results.runs()
    serial = report.serial_times(runs)
    failures = report.collect_failures(runs, serial)
    entries = report.pair_entries(runs, serial)
    return {"entries": entries, "pairs": done_pairs}, len(failures)


def cmd_doctor(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.table import Table

    from scaf.lib.bench import common, report
    from scaf.lib.bench.runner import BenchError
    from scaf.lib.bench.store import ResultsError

    console = Console()
    if not console.is_terminal:
        console.width = 120
    started = time.monotonic()
    if args.budget <= 0:
        print("scaf doctor: --budget must be positive", file=sys.stderr)
        return 2
    _, _warnings = environment_report(console)
    cpus = len(os.sched_getaffinity(0))
    size = args.size or ("S" if args.quick else "W")
    # Size S programs end within a second: any stagger would keep them from overlapping.
    stagger = args.stagger if args.stagger is not None else (0.0 if size == "S" else 0.5)
    pairs = choose_pairs(common.available_workloads(), args.quick)
    console.rule("calibration")
    if cpus < 2:
        adv = advise({}, cpus)
        console.print(f"[bold]advice:[/] {adv.text}")
        return 0
    if not pairs:
        console.print("[red]no workloads are built (run make): cannot calibrate[/]")
        return 1
    try:
        common.check_built(True)
    except BenchError as e:
        console.print(f"[red]{e}[/]")
        return 1
    out = args.out or common.default_out("doctor")
    console.print(f"{len(pairs)} pair(s) at size {size} under {', '.join(CONFIGS)}, budget {args.budget:g} s; "
                  f"raw runs in {out}", highlight=False)
    try:
        analysis, nfail = calibrate(console, out, pairs, size, stagger, args.budget, started)
    except KeyboardInterrupt:
        console.print(f"\ninterrupted; the runs so far are in {out}")
        return 130
    except (ResultsError, BenchError) as e:
        console.print(f"[red]{e}[/]")
        return 1
    assert analysis is not None
    entries = analysis["entries"]
    table = Table(title="Σspeedup per pair (serial time / time in the pair, summed)")
    table.add_column("pair")
    for c in CONFIGS:
        table.add_column(c, justify="right")
    table.add_column("equi / unmod", justify="right")
    table.add_column("speedup / unmod", justify="right")
    for pair in analysis["pairs"]:
        row = entries.get(pair, {})
        totals = [row[c].total if c in row else None for c in CONFIGS]
        ratios = [t / totals[0] if t and totals[0] else None for t in totals[1:]]
        table.add_row(f"{pair[0]}+{pair[1]}", *[fmt_factor(t) if t else "FAILED" for t in totals],
                      *[fmt_factor(r) for r in ratios])
    console.print(table)
    factors = {c: report.geomean(list(report.improvement(entries, c, "unmodified").values()))
               for c in ("equipartition", "speedup")}
    adv = advise(factors, cpus)
    console.print(f"mean improvement over unmodified (geometric): equipartition {fmt_factor(factors['equipartition'])}X, "
                  f"speedup {fmt_factor(factors['speedup'])}X; thresholds: helps >= {HELPS}X, "
                  f"equipartition preferred when > {PREFER_EQUI} x speedup", highlight=False)
    if size == "S":
        console.print("[yellow]size S programs run well under a second: treat these numbers as a "
                      "smoke check; run `scaf doctor` without --quick for advice[/]")
    if nfail:
        console.print(f"[red]{nfail} calibration run(s) failed; `scaf bench report {out}` lists them[/]")
    console.print(f"[bold]advice:[/] {adv.text}")
    console.print(f"took {time.monotonic() - started:.0f} s", highlight=False)
    return 1 if nfail else 0


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "doctor",
        help="describe this machine, calibrate briefly, and recommend a policy",
        description=("Report the topology, cgroup CPU limits and hardware counters, run a few pairs "
                     "of workloads under unmodified, equipartition and speedup, and recommend "
                     "speedup, equipartition, or not using scaf, with the numbers behind it."),
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--quick", action="store_true", help="one pair at size S (a smoke check, noisy)")
    p.add_argument("--size", choices=("S", "W", "A"), help="workload size (default W; S with --quick)")
    p.add_argument("--budget", type=float, default=150, metavar="S",
                   help="stop adding pairs past S seconds in all (default 150)")
    p.add_argument("--stagger", type=float, metavar="S",
                   help="seconds between the two programs' starts (default 0.5; 0 at size S)")
    p.add_argument("--out", type=Path, metavar="DIR",
                   help="where the raw runs go (default results/doctor-YYYYmmdd-HHMMSS)")
    p.set_defaults(func=cmd_doctor)
