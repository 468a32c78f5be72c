"""`scaf rules`: list the rules files the layer reads, and say which rule applies to a program."""

from __future__ import annotations

import argparse
import os
import sys

from scaf.lib.rules import (
    RulesFile,
    exe_path,
    find,
    load,
    unread_files,
)

DESCRIPTION = """\
List the rules that say whether a program is malleable (its results do not
depend on how many threads its parallel regions get, so scaf may change its
team at every region) or fixed (scaf keeps its team and steers it through its
CPU affinity instead). The layer reads them when a program first connects.

Without a rule, the layer decides from evidence: the program's own omp_* calls
(docs/layer.md in scaf's source tree). A rule overrides that evidence; `scaf run --malleable` or
`--fixed` (SCAF_MALLEABLE=yes|no) overrides every rule.

rules files, in the order they are read (the first matching rule wins):
  $SCAF_RULES             when set: a colon-separated list of files (the
                          layer reads the first 8), read instead of the two
                          below (set but empty: no rules at all)
  $XDG_CONFIG_HOME/scaf/rules, or ~/.config/scaf/rules when XDG_CONFIG_HOME
                          is unset or not absolute: your own rules
  /etc/scaf/rules         the machine's rules

format: one rule a line, `malleable PATTERN` or `fixed PATTERN`
  - `#` starts a comment (anywhere on the line); blank lines are ignored
  - PATTERN is an fnmatch(3) glob (* ? [...], backslash escapes); it cannot
    contain spaces or `#` (use ? there)
  - a PATTERN with a `/` is matched against the program's absolute executable
    path, symbolic links resolved (what /proc/self/exe shows); without a `/`,
    against that path's last component. `fixed convert*` matches
    /usr/bin/convert-im6.q16; `fixed /usr/bin/*` matches everything there;
    `fixed bin/convert` matches nothing (a `/` pattern must match the
    whole absolute path)
  - any other line is malformed: the layer ignores it (SCAF_VERBOSE=1 logs it)
    and `scaf rules` reports it

`scaf check --save -- PROG` writes a rule for PROG from a test of its results.
"""

EPILOG = """\
example file:
  # ~/.config/scaf/rules
  fixed     /opt/sim/bin/*        # reductions: bitwise-reproducible results wanted
  malleable convert-im6.q16       # checked with scaf check on our images
  fixed     *                     # everything else keeps its team

exit status:
  0  the rules were listed (or --which answered), no malformed line
  1  a rules file has a malformed line or cannot be read, or $SCAF_RULES
     names more files than the layer reads (each listed on stderr)
  2  usage error, or --which PROG was not found

examples:
  scaf rules                          the rules in effect, file by file
  scaf rules --which convert          which rule applies to `convert` (found through PATH)
  scaf rules --which ./a.out
  SCAF_RULES=./my.rules scaf rules    try a rules file before installing it
"""


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "rules",
        help="list the malleable/fixed rules, or say which applies to a program",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--which", metavar="PROG",
                   help="say which rule (if any) applies to PROG (a name found through PATH, or a path)")
    p.set_defaults(func=main)


def _report_problems(files: list[RulesFile]) -> int:
    unread = unread_files()
    for f in unread:
        print(f"scaf rules: {f}: not read: the layer reads only the first {len(files)} files of "
              "$SCAF_RULES", file=sys.stderr)
    bad = 0
    for rf in files:
        for prob in rf.problems:
            print(f"scaf rules: {prob}", file=sys.stderr)
            bad += prob.line > 0
    if bad:
        print(f"scaf rules: {bad} malformed line{'s' if bad != 1 else ''}: the layer ignores "
              f"{'them' if bad != 1 else 'it'}", file=sys.stderr)
    return 1 if bad or unread or any(rf.problems for rf in files) else 0


def main(args: argparse.Namespace) -> int:
    files = load()
    forced = os.environ.get("SCAF_MALLEABLE", "").strip().lower()
    if args.which is not None:
        exe = exe_path(args.which)
        if exe is None:
            what = "No such file or directory" if "/" in args.which else "command not found"
            print(f"scaf rules: {args.which}: {what}", file=sys.stderr)
            return 2
        rule = find(exe)
        if rule:
            print(f"{exe}: {rule.verdict}, by {rule.where()}: {rule.text()}")
        else:
            searched = ", ".join(rf.path for rf in files) or "no rules files ($SCAF_RULES is empty)"
            print(f"{exe}: no rule; the layer decides from evidence (searched: {searched})")
        if forced in ("yes", "1", "true", "on", "no", "0", "false", "off"):
            print(f"note: SCAF_MALLEABLE={os.environ['SCAF_MALLEABLE']} in this environment beats any rule")
        return _report_problems(files)
    if not files:
        print("no rules files: $SCAF_RULES is set but empty")
        return 0
    width = max(len(f"{r.file}:{r.line}") for rf in files for r in rf.rules) if any(
        rf.rules for rf in files) else 0
    for rf in files:
        state = "" if rf.exists else "  (absent)"
        if rf.exists and not rf.rules and not rf.problems:
            state = "  (no rules)"
        print(f"# {rf.path}{state}")
        for r in rf.rules:
            print(f"{r.where():<{width}}  {r.verdict:<9}  {r.pattern}")
    return _report_problems(files)
