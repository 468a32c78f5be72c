"""`scaf plot trace|alloc`: per-CPU strips from a `scaf trace` file; threads per client from a daemon log."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from scaf.lib.plot import PlotInputError, plot_alloc_log, plot_trace

EPILOG = """\
examples:
  scaf trace -o run.trace -- scaf run -- gm convert -size 3000x3000 plasma: -blur 0x9 /tmp/p.ppm
  scaf plot trace run.trace -o run.png       one strip per CPU, coloured by process tree
  scafd --log alloc.jsonl &  ...             (or scaf daemon --log alloc.jsonl)
  scaf plot alloc alloc.jsonl -o alloc.png   threads per client over time

inputs:
  trace  the text or CSV output of `scaf trace` (see `scaf trace --help`); a trace of a run that
         ended before its first sample still gives a picture, which says so (exit status 0)
  alloc  the daemon's --log file: one status JSON object per line with a "time" field
"""


def cmd_plot(args: argparse.Namespace) -> int:
    if not args.kind:
        print("scaf plot: say what to plot: trace FILE or alloc LOG (see --help)", file=sys.stderr)
        return 2
    out = args.output or str(Path(args.file).with_suffix(".png"))
    note = None
    try:
        if args.kind == "trace":
            note = plot_trace(args.file, out, args.title)
        else:
            plot_alloc_log(args.file, out, args.title)
    except PlotInputError as e:
        print(f"scaf plot: {e}", file=sys.stderr)
        return 1
    except OSError as e:
        print(f"scaf plot: cannot write {out}: {e.strerror or e}", file=sys.stderr)
        return 1
    if note:
        print(f"scaf plot: {args.file}: {note}; the picture says so", file=sys.stderr)
    print(out)
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "plot",
        help="draw a trace (CPU strips) or a daemon log (threads per client) as PNG",
        description="Draw the output of `scaf trace`, or a daemon --log, as a PNG.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    kinds = p.add_subparsers(dest="kind", metavar="KIND")
    for kind, helptext, metavar in (
        ("trace", "one strip per CPU, coloured by process tree, over time", "FILE"),
        ("alloc", "threads per client over time from a scafd --log file", "LOG"),
    ):
        k = kinds.add_parser(kind, help=helptext, description=helptext, epilog=EPILOG,
                             formatter_class=argparse.RawDescriptionHelpFormatter)
        k.add_argument("file", metavar=metavar)
        k.add_argument("-o", "--output", metavar="PNG", help="output file (default: input with .png)")
        k.add_argument("--title", help="figure title")
        k.set_defaults(func=cmd_plot)
    p.set_defaults(func=cmd_plot, kind=None)
