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
    how_to_apply,
    spread,
)
from scaf.lib.bench import userprog

EPILOG = f"""\
what it does:
  1. reports the topology (from /sys), the cgroup CPU limits, whether hardware
     performance counters exist, what is built, and whether a daemon answers;
  2. runs a few pairs of workloads (size W; --quick: one pair at size S), or of
     your --program commands, under unmodified, equipartition and speedup, each
     with a private daemon;
  3. recommends a policy from the geometric mean, over the pairs, of
     F(policy) = Σspeedup(policy) / Σspeedup(unmodified):
       max(F) < {HELPS}                      -> "scaf does not help here"
       F(equipartition) > {PREFER_EQUI} x F(speedup)    -> equipartition
       otherwise                          -> speedup (the default)
  It stops adding pairs when the next one would overrun --budget.

exit status: 0 advice given, 1 a calibration run failed (listed), 2 usage error

results: the raw runs go to --out, by default $XDG_STATE_HOME/scaf/doctor-YYYYmmdd-HHMMSS
(~/.local/state/scaf/... when XDG_STATE_HOME is unset); `scaf bench report DIR` redraws them.

examples:
  scaf doctor                   about 2-3 minutes on a 2-core machine
  scaf doctor --quick           a 15-second smoke check (size S: timings are noisy)
  scaf doctor --repeat 3        each pair 3 times: medians, and a steadier advice
  scaf doctor --out /tmp/doc    keep the raw runs there; `scaf bench report /tmp/doc` redraws them
  scaf doctor --program gm="gm convert -size 512x4096 gradient: -blur 0x20 out.ppm" \\
              --program im="convert -size 256x4096 gradient: -blur 0x6 out.ppm" --output gm=out.ppm
                                advice from your own programs (here GraphicsMagick and
                                ImageMagick) instead of the built workloads
"""


def scafd_capacity() -> str | None:
    """What scafd itself finds (cgroup version, the quota of the cgroup and its ancestors, the bound that
    applies), from a private daemon started for a moment; None when it cannot start."""
    from scaf.lib import daemon, paths
    from scaf.lib.capacity import capacity_line

    if not paths.scafd().exists():
        return None
    d = daemon.PrivateDaemon(["--no-lookout"], timeout=5.0)
    try:
        st = d.start()
    except (OSError, RuntimeError, daemon.DaemonExited, daemon.DaemonTimeout):
        return None
    finally:
        d.cleanup()
    return capacity_line(st)


def environment_report(console) -> tuple[dict, list[str]]:
    """Prints machine, limits, counters, build and daemon state; returns the description and warnings."""
    from scaf.lib import autostart, paths, proto, sockpath
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
    files = "cpu.cfs_quota_us cpu.cfs_period_us" if cg.get("version") == 1 else "cpu.max"
    console.print(f"cpu quota:           {'none' if quota is None else f'{quota:g} CPUs'}"
                  f" ({files}: {cg.get('cpu_max', '?')})", highlight=False)
    view = scafd_capacity()
    if view:
        console.print(f"scafd hands out:     {view}", highlight=False)
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
    sock = sockpath.default_socket()
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
              budget: float, started: float, repeat: int = 1,
              programs: dict | None = None) -> tuple[dict | None, int]:
    """Runs serial times and the pairs under CONFIGS within the budget; returns (analysis, failures)."""
    from scaf.lib.bench import common, machine, report, store
    from scaf.lib.bench import pairs as bench_pairs

    cpus = sorted(os.sched_getaffinity(0))
    params = {"size": size, "stagger_s": stagger, "cpus": machine.format_cpulist(cpus),
              "programs": {n: p.text for n, p in (programs or {}).items()} or None}
    results = store.Results(out, params, machine.describe())
    if results.runs():
        console.print(f"resuming {out}: {len(results.runs())} runs are already there", highlight=False)
    tag = common.new_tag()
    done_pairs: list[tuple[str, str]] = []
    for i, (a, b) in enumerate(pairs):
        serial = report.serial_times(results.runs())
        known = [s.time for s in serial.values() if s.time]
        guess = sum(known) / len(known) if known else 10.0
        ta = serial[a].time if a in serial and serial[a].time else None
        tb = serial[b].time if b in serial and serial[b].time else None
        # Serial runs still to do, then two programs on min(2, N) CPUs: about their summed
        # serial time spread over those, per configuration and repetition.
        est = repeat * sum(guess for t in (ta, tb) if t is None)
        est += repeat * len(CONFIGS) * (1.3 * ((ta or guess) + (tb or guess)) / min(2, len(cpus)) + stagger + 0.5)
        left = budget - (time.monotonic() - started)
        if i > 0 and est > left:
            console.print(f"stopped after {i} pair(s): the next one needs about {est:.0f} s, "
                          f"{max(left, 0):.0f} s of the {budget:g} s budget are left (--budget)", highlight=False)
            break
        console.print(f"pair {i + 1}: {a}+{b}", highlight=False)
        units = [common.solo_unit(w, 1, r, size, cpus, tag, 600, programs)
                 for r in range(repeat) for w in dict.fromkeys((a, b))]
        units += [bench_pairs.pair_unit(a, b, c, r, size, stagger, cpus, False, results.dir, tag, 600, [],
                                        programs)
                  for r in range(repeat) for c in CONFIGS]
        # A program's serial runs serve every pair it is in: what is done is not announced as resumed.
        common.execute(results, [u for u in units if not results.done(u.key)])
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
    from scaf.lib.bench.errors import BenchError
    from scaf.lib.bench.store import ResultsError

    console = Console()
    if not console.is_terminal:
        console.width = 120
    started = time.monotonic()
    if args.budget <= 0:
        print("scaf doctor: --budget must be positive", file=sys.stderr)
        return 2
    if args.repeat < 1:
        print("scaf doctor: --repeat must be at least 1", file=sys.stderr)
        return 2
    try:
        programs = userprog.from_args(args, common.available_workloads)
    except BenchError as e:
        print(f"scaf doctor: {e}", file=sys.stderr)
        return 2
    _, _warnings = environment_report(console)
    cpus = len(os.sched_getaffinity(0))
    size = args.size or ("S" if args.quick else "W")
    # Size S programs end within a second: any stagger would keep them from overlapping.
    stagger = args.stagger if args.stagger is not None else (0.0 if size == "S" else 0.5)
    pairs = choose_pairs(common.available_workloads(), args.quick, list(programs))
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
    out = args.out or common.results_home() / common.stamped("doctor")
    what = "your programs" if programs else f"workloads at size {size}"
    console.print(f"pairs of {what} under {', '.join(CONFIGS)}, {args.repeat} run(s) each, as many "
                  f"pairs as fit in the {args.budget:g} s budget; raw runs in {out}", highlight=False)
    try:
        analysis, nfail = calibrate(console, out, pairs, size, stagger, args.budget, started, args.repeat,
                                    programs)
    except KeyboardInterrupt:
        console.print(f"\ninterrupted; the runs so far are in {out}")
        return 130
    except (ResultsError, BenchError) as e:
        console.print(f"[red]{e}[/]")
        return 1
    assert analysis is not None
    entries = analysis["entries"]
    table = Table(title="Σspeedup per pair (serial time / time in the pair, summed; median of the runs)")
    table.add_column("pair")
    table.add_column("runs", justify="right")
    for c in CONFIGS:
        table.add_column(c, justify="right")
    table.add_column("equi / unmod", justify="right")
    table.add_column("speedup / unmod", justify="right")
    for pair in analysis["pairs"]:
        row = entries.get(pair, {})
        totals = [row[c].total if c in row else None for c in CONFIGS]
        ratios = [t / totals[0] if t and totals[0] else None for t in totals[1:]]
        runs = min((row[c].ok_runs for c in CONFIGS if c in row), default=0)
        table.add_row(f"{pair[0]}+{pair[1]}", str(runs), *[fmt_factor(t) if t else "FAILED" for t in totals],
                      *[fmt_factor(r) for r in ratios])
    console.print(table)
    per_pair = {c: list(report.improvement(entries, c, "unmodified").values()) for c in ("equipartition", "speedup")}
    factors = {c: report.geomean(v) for c, v in per_pair.items()}
    adv = advise(factors, cpus)
    console.print(f"mean improvement over unmodified (geometric, {args.repeat} run(s) per pair and configuration): "
                  f"equipartition {fmt_factor(factors['equipartition'])}X ({spread(per_pair['equipartition'])}), "
                  f"speedup {fmt_factor(factors['speedup'])}X ({spread(per_pair['speedup'])}); thresholds: "
                  f"helps >= {HELPS}X, equipartition preferred when > {PREFER_EQUI} x speedup", highlight=False)
    if size == "S" and not programs:
        console.print("[yellow]size S programs run well under a second: treat these numbers as a "
                      "smoke check; run `scaf doctor` without --quick for advice[/]")
    if nfail:
        console.print(f"[red]{nfail} calibration run(s) failed; `scaf bench report {out}` lists them[/]")
    console.print(f"[bold]advice:[/] {adv.text}")
    console.print(f"[bold]to apply it:[/] {how_to_apply(adv.verdict)}", highlight=False)
    console.print(f"took {time.monotonic() - started:.0f} s; raw runs in {out} (`scaf bench report {out}` "
                  "redraws them)", highlight=False)
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
    p.add_argument("--repeat", type=int, default=1, metavar="R",
                   help="runs of each pair under each configuration (default 1); the table shows "
                        "medians, the advice the spread over pairs")
    p.add_argument("--out", type=Path, metavar="DIR",
                   help="where the raw runs go (default $XDG_STATE_HOME/scaf/doctor-YYYYmmdd-HHMMSS, "
                        "that is ~/.local/state/scaf/... when XDG_STATE_HOME is unset)")
    userprog.add_arguments(p)
    p.set_defaults(func=cmd_doctor)
