"""`scaf status`: what the daemon has allocated to whom, as a table or as its JSON."""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING

from scaf.lib import autostart, proto, sockpath
from scaf.lib.capacity import capacity_line

if TYPE_CHECKING:
    from rich.console import Console

# Exit statuses besides 0 and 1 (EPILOG).
EXIT_BAD_ANSWER = 3
EXIT_UNTRUSTED = 4

DESCRIPTION = """\
Ask the scaf daemon for its state and print it: the policy, how many hardware
contexts it allocates (cpus), how many are free of foreign load (available),
then one row per client program:

  PID         the client's process id (checked by the daemon with SO_PEERCRED)
  NAME        its command name
  THREADS     the team size it runs now (its allocation; for a non-malleable
              client, its fixed team)
  SHARE       the hardware contexts the policy gave it (for a non-malleable
              client, the size of its CPU set; the shares add up to at most
              the available contexts)
  MALLEABLE   yes: its team size follows the allocation at each parallel region;
              no: its team is fixed and the daemon steers it by CPU affinity;
              undecided: the layer is still watching its regions (each runs
              once at the full team before it is steered)
  BY          who decided that: evidence (the layer's rule, from the
              program's omp_* calls), user (scaf run --malleable/--fixed,
              SCAF_MALLEABLE), rules (a rules file: scaf rules), check (scaf
              check's test mode) or default (no evidence either way yet)
  CPUSET      the CPUs a non-malleable client is confined to
  NLWP        the threads the process has (from /proc)
  IDLE        yes: it has run no parallel region and used next to no CPU
              for a while (a parent waiting on its pool, an idle pool
              worker): it holds no share (SHARE 0) and keeps THREADS for its
              next region, which gets its share back at once
  EFFICIENCY  its estimated parallel efficiency (- when not known yet)
  ESTIMATE    where that comes from: none, assumed, measured or counters;
              remembered: the speedup the daemon kept from the program's
              earlier runs, until it reports a measured one
  REMEMBERED  what the daemon remembered of the program when it arrived: the
              verdict and the runs it was learned from (- when nothing: a
              first run, scaf run --no-memory, scafd --no-memory)
  USER        whose program it is (the kernel's word, SO_PEERCRED): on a
              shared daemon, each user's programs

Under the clients, the processes that are not clients but keep CPUs busy
(the foreign load, at least 0.2 of a context), busiest first, each with its
owner, CPU use and why scaf does not steer it: not started under scaf run,
a parallel runtime scaf cannot steer, or its layer inert (SCAF_DISABLE=1,
another daemon's socket, ...). They need the daemon's lookout (not with
--no-lookout).

--verbose adds, under the table, the reason for each client's verdict: the
call, function and object that decided it, or the rule's file and line; then
what was remembered of it, and the team it started with when scaf chose it
(a program known to keep its team starts with its share and cannot grow).
--json prints the daemon's reply as it is (fields: docs/cli.md in scaf's
source tree).
--prometheus prints it in the Prometheus text format (scaf_* metrics: cpus,
available, foreign load, policy, clients, refused clients, and per client
threads, share, efficiency, idle), for node_exporter's textfile collector; when no
daemon answers it still prints scaf_up 0 (and exits 1). A batch job's id is
the label job_id: the daemon's own (scafd --job), else a client's
SLURM_JOB_ID where its environment is readable (root, or its own user).
"""

EPILOG = """\
exit status:
  0  the daemon answered
  1  no daemon answers, or the socket path is unusable
  3  something answered that is not a status (malformed, too deeply nested)
  4  the daemon runs as another user that is not trusted: not you, not root,
     not SCAF_DAEMON_USER (your programs' layer refuses it too)

examples:
  scaf status                                   the table
  scaf status -v                                the table, then why each client is (not) malleable
  scaf status --json | jq '.clients[].threads'  the allocations, for scripts
  scaf status --socket /run/scaf/scafd.sock     ask a system-wide daemon
  scaf status --prometheus > /tmp/scaf.prom     the metrics, for a textfile collector
  watch -n1 scaf status                         follow it live
"""


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "status",
        help="show the daemon's clients and their threads",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    fmt = p.add_mutually_exclusive_group()
    fmt.add_argument("--json", action="store_true", help="print the daemon's JSON status instead of a table")
    fmt.add_argument("--prometheus", action="store_true",
                     help="print the node's state as Prometheus text exposition instead of a table")
    p.add_argument("-v", "--verbose", action="store_true",
                   help="after the table, the reason for each client's verdict")
    p.add_argument("--socket", metavar="P", help="the daemon's socket (default: $SCAF_SOCKET, "
                   "$XDG_RUNTIME_DIR/scaf/scafd.sock, /tmp/scaf-$UID/scafd.sock)")
    p.set_defaults(func=main)


def cpu_ranges(cpus: list[int]) -> str:
    """[0,1,2,5] -> '0-2,5' (the kernel's cpulist format)."""
    out: list[str] = []
    xs = sorted(set(cpus))
    i = 0
    while i < len(xs):
        j = i
        while j + 1 < len(xs) and xs[j + 1] == xs[j] + 1:
            j += 1
        out.append(str(xs[i]) if i == j else f"{xs[i]}-{xs[j]}")
        i = j + 1
    return ",".join(out)


def _fmt_eff(v: object) -> str:
    return f"{v:.2f}" if isinstance(v, (int, float)) and not isinstance(v, bool) else "-"


def verdict_of(c: dict) -> tuple[str, str]:
    """(MALLEABLE cell, BY cell): the daemon's verdict, or its older boolean alone."""
    v = c.get("verdict")
    word = {"malleable": "yes", "fixed": "no", "undecided": "undecided"}.get(v) if isinstance(v, str) else None
    if word is None:
        word = "yes" if c.get("malleable") else "no"
    src = c.get("verdict_source")
    return word, src if isinstance(src, str) and src else "-"


def _count(v: object) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def remembered_cell(c: dict) -> str:
    """The REMEMBERED cell: 'fixed, 3 runs', '1 run' (nothing decided), or '-' when nothing was remembered."""
    mem = c.get("memory")
    runs = _count(mem.get("runs")) if isinstance(mem, dict) else None
    if not runs:
        return "-"
    text = f"{runs} run" + ("s" if runs != 1 else "")
    verdict = mem.get("verdict") if isinstance(mem, dict) else None
    return f"{verdict}, {text}" if verdict in ("fixed", "malleable") else text


def memory_words(c: dict, cpus: object) -> str:
    """What the why-line adds about the memory: '; fixed, remembered from 3 runs; started with 1 of 2 contexts
    (cannot grow)', or '' when there is nothing to say."""
    out = ""
    mem = c.get("memory")
    runs = _count(mem.get("runs")) if isinstance(mem, dict) else None
    if runs:
        verdict = mem.get("verdict") if isinstance(mem, dict) else None
        source = mem.get("source") if isinstance(mem, dict) else None
        what = f"{verdict}, remembered" if verdict in ("fixed", "malleable") else "remembered"
        by = " by scaf check" if source == "check" else ""
        out += f"; {what}{by} from {runs} run" + ("s" if runs != 1 else "")
    started = _count(c.get("started_with"))
    if started:
        total = _count(cpus)
        of = f" of {total} contexts" if total else ""
        out += f"; started with {started}{of} (cannot grow)"
    return out


def user_name(uid: object) -> str:
    """uid -> login name, or the number when the account is unknown here (another container's user)."""
    if not isinstance(uid, int) or isinstance(uid, bool):
        return "-"
    import pwd

    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return str(uid)


def others_line(st: dict) -> str | None:
    """A shared daemon lists another user's clients to non-root users only as counts."""
    n, threads = st.get("other_clients"), st.get("other_threads")
    if not isinstance(n, int) or isinstance(n, bool) or n <= 0:
        return None
    t = f", {threads} threads" if isinstance(threads, int) and not isinstance(threads, bool) else ""
    return f"{n} clients of other users{t} (details only for root and the daemon's user)"


def render(st: dict, sock: str, verbose: bool = False) -> None:
    from rich import box
    from rich.console import Console
    from rich.table import Table

    console = Console()
    if not console.is_terminal:
        console.width = max(console.width, 140)  # pipes and logs: do not fold the table
    summary = (
        f"[bold]policy[/] {st.get('policy', '?')}   [bold]cpus[/] {st.get('cpus', '?')}   "
        f"[bold]available[/] {st.get('available', '?')}"
    )
    if isinstance(st.get("foreign"), (int, float)):
        summary += f"   [bold]foreign[/] {st['foreign']:.1f}"
    if isinstance(st.get("job"), str):
        summary += f"   [bold]job[/] {st['job']}"
    summary += f"   [dim]daemon pid {st.get('daemon_pid', '?')} on {sock}[/]"
    console.print(summary, highlight=False)
    cap = capacity_line(st)
    if cap:
        from rich.markup import escape

        console.print(escape(cap), highlight=False, soft_wrap=True)
    clients = st.get("clients") or []
    others = others_line(st)
    if not clients:
        console.print("no clients" if others is None else f"no clients of yours; {others}", highlight=False)
        render_foreign(console, st)
        return
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False)
    for col in ("PID", "NAME", "THREADS", "SHARE", "MALLEABLE", "BY", "CPUSET", "NLWP", "IDLE", "EFFICIENCY",
                "ESTIMATE", "REMEMBERED", "USER"):
        right = col in ("PID", "THREADS", "SHARE", "NLWP", "EFFICIENCY")
        table.add_column(col, justify="right" if right else "left", no_wrap=True)
    total = 0
    ordered = sorted(clients, key=lambda c: c.get("pid", 0))
    for c in ordered:
        share = c.get("share", c.get("threads", 0))
        total += share if isinstance(share, int) else 0
        table.add_row(
            str(c.get("pid", "?")),
            str(c.get("name", "?")),
            str(c.get("threads", "?")),
            str(share),
            *verdict_of(c),
            # The set a client is confined to; "-": none (steered by its thread count, or unconfined).
            cpu_ranges(c.get("cpuset") or []) if c.get("control", "cpuset") == "cpuset" else "-",
            str(c.get("nlwp", "-")),
            {True: "yes", False: "no"}.get(c.get("idle"), "-"),  # "-": a daemon that does not say
            _fmt_eff(c.get("efficiency")),
            str(c.get("estimate", "-")),
            remembered_cell(c),
            user_name(c.get("uid")),
        )
    table.add_section()
    idle = sum(1 for c in clients if c.get("idle") is True)
    table.add_row("all", f"{len(clients)} clients", "", str(total), "", "", "", "", f"{idle} idle", "", "", "", "")
    console.print(table)
    if others is not None:
        console.print(others, highlight=False)
    if verbose:
        from rich.markup import escape

        console.print("why:", highlight=False)
        for c in ordered:
            word, src = verdict_of(c)
            word = {"yes": "malleable", "no": "fixed"}.get(word, word)
            reason = c.get("reason") if isinstance(c.get("reason"), str) and c.get("reason") else "(not given)"
            console.print(f"  {c.get('pid', '?')} {escape(str(c.get('name', '?')))}: {word} "
                          f"(by {src}): {escape(reason)}{escape(memory_words(c, st.get('cpus')))}",
                          highlight=False, soft_wrap=True)
    render_runtimes(console, ordered, st.get("cpus"))
    render_foreign(console, st)


def runtime_words(c: dict, cpus: object) -> list[str]:
    """How each of a client's other runtimes follows its share, in words (docs/runtimes.md)."""
    team, out = c.get("runtime_team"), []
    for rt in c.get("runtimes") or []:
        if not isinstance(rt, dict) or not isinstance(rt.get("name"), str):
            continue
        name = rt["name"]
        if rt.get("follows"):
            out.append(f"{name}: follows its share (the layer resizes its pool)")
            continue
        of = f" of {cpus}" if isinstance(cpus, int) else ""
        size = f" ({team}{of})" if isinstance(team, int) and team > 0 else ""
        if not rt.get("spins"):
            out.append(f"{name} pool: its own count{size}: its threads sleep when idle, fixed for the run")
            continue
        via = rt.get("variable") or "the layer's count of CPUs"
        started = f"started with {team}{of}" if isinstance(team, int) and team > 0 else "started with its own count"
        out.append(f"{name} pool: {started} ({via}), fixed for the run")
    return out


def render_runtimes(console: Console, clients: list[dict], cpus: object) -> None:
    """The clients' runtimes other than OpenMP and BLAS, and how each is steered (nothing when none has one)."""
    from rich.markup import escape

    lines = [(c, runtime_words(c, cpus)) for c in clients]
    lines = [(c, w) for c, w in lines if w]
    if not lines:
        return
    console.print("runtimes:", highlight=False)
    for c, words in lines:
        console.print(f"  {c.get('pid', '?')} {escape(str(c.get('name', '?')))}: {escape('; '.join(words))}",
                      highlight=False, soft_wrap=True)


def render_foreign(console: Console, st: dict) -> None:
    """The busy processes that are not clients, and why (nothing when there are none)."""
    from rich import box
    from rich.table import Table

    procs = [p for p in st.get("foreign_procs") or [] if isinstance(p, dict)]
    if not procs:
        return
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False, title="not steered (foreign load)", title_justify="left")
    for col in ("PID", "NAME", "USER", "CPU", "WHY"):
        table.add_column(col, justify="right" if col in ("PID", "CPU") else "left", no_wrap=col != "WHY")
    for p in procs:
        cpu = p.get("cpu")
        table.add_row(str(p.get("pid", "?")), str(p.get("cmd") or p.get("name") or "?"), user_name(p.get("uid")),
                      f"{cpu:.1f}" if isinstance(cpu, (int, float)) else "-", str(p.get("reason", "")))
    console.print(table)


def main(args: argparse.Namespace) -> int:
    sock = args.socket or sockpath.default_socket()
    problem = autostart.socket_problem(sock)
    if problem:
        if args.prometheus:
            from scaf.lib import prometheus

            sys.stdout.write(prometheus.exposition(None, sock))
        print(f"scaf: {problem}", file=sys.stderr)
        return 1
    try:
        st = proto.status(sock)
    except proto.DaemonUnavailable as e:
        if args.prometheus:
            from scaf.lib import prometheus

            sys.stdout.write(prometheus.exposition(None, sock))
        reason = getattr(e.__cause__, "strerror", None) or str(e)
        print(f"scaf: no daemon answers on {sock} ({reason}); start one with `scaf daemon` "
              "or run a program with `scaf run`", file=sys.stderr)
        return 1
    except proto.BadStatus as e:
        print(f"scaf: the daemon on {sock} sent a malformed status: {e}", file=sys.stderr)
        return EXIT_BAD_ANSWER
    except proto.UntrustedDaemon as e:
        print(f"scaf: {e}", file=sys.stderr)
        return EXIT_UNTRUSTED
    if args.prometheus:
        from scaf.lib import prometheus

        sys.stdout.write(prometheus.exposition(st, sock))
    elif args.json:
        json.dump(st, sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        render(st, sock, args.verbose)
    return 0
