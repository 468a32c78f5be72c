#!/usr/bin/env python3
"""What one task of a process pool costs under scaf, counted in instructions (callgrind), not timed.

The task is the pool benchmark's HistGradientBoosting fit (python/scaf/lib/bench/poolprog.py: 30 features,
60 iterations; 12,000-13,000 OpenMP regions a fit whatever the rows). Each variant runs one fit under
`valgrind --tool=callgrind`; a client request zeroes the counters before the fit and dumps them after it,
so the interpreter's start and imports are left out and every thread of the process is counted. Instruction
counts do not depend on the machine's load, so two runs of one tree agree to about 0.1% (the Python
interpreter's own allocation pattern moves a little with the environment's size), and a regression of the
layer's per-region path shows as instructions per region.

Variants (each on a fresh private scafd, --no-lookout so that other load on the machine cannot change the
teams; the environment is the one `scaf run` gives the program, captured from `scaf run -- python`):

  plain       no preload, OMP_NUM_THREADS=T
  inert       scaf run's environment, no daemon (the layer preloaded, inert)
  scaf        scaf run on a private daemon, the fit its only client (estimates are lazy then)
  scaf-noest  the same, SCAF_ESTIMATE=0
  pair        beside a second client (a loop of the same fits, not under valgrind), as in a pool
  pair-noest  the same, SCAF_ESTIMATE=0 in both
  worker      as a loky worker under scaf: OMP_NUM_THREADS left to scaf run (the machine's count, which
              scaf run gives Python programs for their pools' sake), beside a second such client: its
              team is steered to its share, while the program reads the machine's count

At T >= 2 every variant runs with OMP_WAIT_POLICY=passive, so that the instructions of libgomp's spinning
waiters (which depend on how valgrind schedules threads) do not drown the rest; scaf run then sets no
GOMP_SPINCOUNT. `worker` is measured once (its count is the machine's) and set beside plain at 1 thread,
the loky default it replaces.

Printed per variant: the fit's instructions (all threads), its ratio to plain at the same T, the regions
(calls of the GOMP_parallel* entry points from the program), the layer's own instructions and per region
(libscaf_*.so, with ld.so's __tls_get_addr that its thread-locals call), libgomp's and libc's, and the rest
(the program: Python, numpy, scikit-learn). With --syscalls, each variant also runs natively: the syscalls
made during the fit (strace -f, between two marker calls), the threads created, and the voluntary and
involuntary context switches of the process during the fit (getrusage, in a run without strace).

Not a test, and no timing: a table to set beside the last one (docs/results.md, "Overhead").

    build/venv/bin/python tools/experiments/task_cost.py [--rows 5000] [--iters 60] [--threads 1,2]
        [--variants plain,inert,scaf,...] [--syscalls] [--build DIR] [--keep DIR]
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "python"))

from scaf.lib import paths
from scaf.lib.daemon import PrivateDaemon

MARK_C = r"""
#include <valgrind/callgrind.h>
void cg_zero(void) { CALLGRIND_ZERO_STATS; }
void cg_dump(const char *what) { CALLGRIND_DUMP_STATS_AT(what); }
"""

# The fit of poolprog.hgb_task, timed out of the interpreter's start: a small fit first (imports, first
# touches), then the counters are zeroed, the fit runs, they are dumped. `native` mode reads the process's
# context switches and marks the fit for strace instead.
FIT_PY = r"""
import ctypes, hashlib, json, os, resource, sys, time

mode, mark, rows, iters = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
# Loaded first: an object loaded later makes the layer's helper scan the loaded objects again, during the fit.
cg = ctypes.CDLL(mark) if mode == "cg" else None

import numpy as np
from sklearn.ensemble import HistGradientBoostingClassifier

rng = np.random.default_rng(0)
x = rng.standard_normal((rows, 30))
y = (x[:, :5].sum(axis=1) + 0.5 * rng.standard_normal(rows) > 0).astype(int)
HistGradientBoostingClassifier(max_iter=2, early_stopping=False, random_state=0).fit(x[:500], y[:500])
# The layer's one-time work after its connect (the helper's first scan of the loaded objects) falls here, not in
# the fit: valgrind runs one thread at a time, and this sleep lets the helper run.
time.sleep(1.0)

def stat(path):
    try:
        os.stat(path)
    except OSError:
        pass

if cg:
    cg.cg_zero()
stat("/scaf-task-cost-begin")
r0 = resource.getrusage(resource.RUSAGE_SELF)
clf = HistGradientBoostingClassifier(max_iter=iters, early_stopping=False, random_state=0).fit(x, y)
r1 = resource.getrusage(resource.RUSAGE_SELF)
stat("/scaf-task-cost-end")
if cg:
    cg.cg_dump(b"fit")
print("task-cost " + json.dumps({
    "digest": hashlib.sha256(clf.predict_proba(x[:2000]).tobytes()).hexdigest()[:16],
    "nvcsw": r1.ru_nvcsw - r0.ru_nvcsw, "nivcsw": r1.ru_nivcsw - r0.ru_nivcsw,
    "threads": len(os.listdir("/proc/self/task"))}), flush=True)
"""

COMPANION_PY = r"""
import sys
import numpy as np
from sklearn.ensemble import HistGradientBoostingClassifier
rows, iters = int(sys.argv[1]), int(sys.argv[2])
rng = np.random.default_rng(1)
x = rng.standard_normal((rows, 30))
y = (x[:, :5].sum(axis=1) > 0).astype(int)
while True:
    HistGradientBoostingClassifier(max_iter=iters, early_stopping=False, random_state=0).fit(x, y)
"""

VARIANTS = ("plain", "inert", "scaf", "scaf-noest", "pair", "pair-noest", "worker")


# ---- callgrind's output ----

def parse_callgrind(path: Path) -> tuple[collections.Counter, collections.Counter]:
    """Self instructions per (object, function), and calls per (caller object, callee function)."""
    names: dict[str, dict[str, str]] = {"ob": {}, "fn": {}}
    ob = fn = cfn = ""
    self_cost: collections.Counter = collections.Counter()
    calls: collections.Counter = collections.Counter()
    skip_next = False

    def name(kind: str, rest: str) -> str:
        m = re.match(r"\((\d+)\)(?: (.*))?$", rest)
        if not m:
            return rest
        if m.group(2) is not None:
            names[kind][m.group(1)] = m.group(2)
        return names[kind].get(m.group(1), "?")

    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            c = line[:1]
            if c.isdigit() or c in "+-*":
                parts = line.split()
                if skip_next:  # the inclusive cost of the call line above: not this function's own
                    skip_next = False
                elif len(parts) >= 2:
                    self_cost[(ob, fn)] += int(parts[1])
                continue
            key, _, rest = line.rstrip("\n").partition("=")
            if key == "ob":
                ob = name("ob", rest)
            elif key == "fn":
                fn = name("fn", rest)
            elif key == "cob":
                name("ob", rest)  # the callee's object: the name table only (calls count by the caller's)
            elif key == "cfn":
                cfn = name("fn", rest)
            elif key == "calls":
                calls[(ob, cfn)] += int(rest.split()[0])
                skip_next = True
            elif key in ("fl", "fi", "fe", "cfi", "cfl"):
                pass
    return self_cost, calls


def bucket(obj: str, fn: str) -> str:
    base = os.path.basename(obj)
    if base.startswith("libscaf_") or (base.startswith("ld-linux") and fn == "__tls_get_addr"):
        return "layer"
    if base.startswith("libgomp"):
        return "libgomp"
    if base.startswith("libc.so"):
        return "libc"
    return "program"


def summarize(path: Path) -> dict:
    self_cost, calls = parse_callgrind(path)
    out = collections.Counter()
    for (obj, fn), v in self_cost.items():
        out[bucket(obj, fn)] += v
    # Regions: the program's own calls of an entry point (the layer's calls into libgomp are not new ones).
    regions = sum(n for (obj, fn), n in calls.items()
                  if fn.startswith("GOMP_parallel") and not fn.endswith("_end")
                  and bucket(obj, fn) == "program")
    top = sorted(((v, os.path.basename(o), f) for (o, f), v in self_cost.items() if bucket(o, f) == "layer"),
                 reverse=True)[:12]
    return {"total": sum(out.values()), **dict(out), "regions": regions,
            "layer_top": [[v, f"{o}:{f}"] for v, o, f in top]}


# ---- environments ----

def scaf_run_env(socket: str, threads: int | None, extra: dict[str, str]) -> dict[str, str]:
    """The environment `scaf run` gives a python program on SOCKET (OMP_NUM_THREADS=threads set by the user
    first, or left to scaf run when None)."""
    env = {k: v for k, v in os.environ.items() if k not in ("LD_PRELOAD", "OMP_NUM_THREADS", "SCAF_SOCKET")}
    env.update(extra)
    if threads is not None:
        env["OMP_NUM_THREADS"] = str(threads)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT / "python"), env.get("PYTHONPATH")) if p)
    env["SCAF_RUN_REPLAY"] = "0"
    dump = "import json, os; print('ENV ' + json.dumps(dict(os.environ)))"
    r = subprocess.run([sys.executable, "-m", "scaf", "run", "--no-start", "--socket", socket, "--",
                        sys.executable, "-c", dump], env=env, capture_output=True, text=True, timeout=120,
                       check=False)
    line = next((ln for ln in r.stdout.splitlines() if ln.startswith("ENV ")), None)
    if r.returncode != 0 or line is None:
        raise SystemExit(f"scaf run failed ({r.returncode}): {r.stderr[-500:]}")
    got = json.loads(line[4:])
    got.pop("SCAF_RUN_REPLAY", None)
    return got


def swap_build(env: dict[str, str], build: Path | None) -> dict[str, str]:
    """Another build's layer in LD_PRELOAD (--build): the same file names under BUILD/lib."""
    if build is None or "LD_PRELOAD" not in env:
        return env
    env = dict(env)
    env["LD_PRELOAD"] = ":".join(str(build / "lib" / os.path.basename(p)) if "libscaf_" in p else p
                                 for p in env["LD_PRELOAD"].split(":"))
    return env


# ---- one variant ----

class Bench:
    def __init__(self, args: argparse.Namespace, work: Path) -> None:
        self.args = args
        self.work = work
        self.fit = work / "fit.py"
        self.fit.write_text(FIT_PY)
        self.companion = work / "companion.py"
        self.companion.write_text(COMPANION_PY)
        self.mark = work / "cgmark.so"
        src = work / "cgmark.c"
        src.write_text(MARK_C)
        subprocess.run([os.environ.get("CC", "cc"), "-O2", "-shared", "-fPIC", "-o", str(self.mark), str(src)],
                       check=True)
        self.scafd = (args.build / "bin" / "scafd") if args.build else paths.scafd()

    def daemon(self) -> PrivateDaemon:
        d = PrivateDaemon(["--no-lookout", "--cpus", str(self.args.cpus), *self.args.daemon_arg],
                          binary=self.scafd, prefix="scaf-tc-")
        d.start_or_discard()
        return d

    def envs(self, variant: str, threads: int, sock: str) -> tuple[dict[str, str], dict[str, str] | None]:
        """The measured program's environment and the companion's (None: no companion)."""
        base = {"PYTHONHASHSEED": "0"}
        if threads >= 2 or variant == "worker":
            base["OMP_WAIT_POLICY"] = "passive"
        if variant.endswith("-noest"):
            base["SCAF_ESTIMATE"] = "0"
        if variant == "plain":
            env = {k: v for k, v in os.environ.items() if k not in ("LD_PRELOAD", "SCAF_SOCKET")}
            env.update(base, OMP_NUM_THREADS=str(threads))
            return env, None
        env = swap_build(scaf_run_env(sock, None if variant == "worker" else threads, base), self.args.build)
        if variant == "inert":
            env["SCAF_SOCKET"] = str(self.work / "no-daemon" / "none.sock")
        return env, (dict(env) if variant.startswith("pair") or variant == "worker" else None)

    def start_companion(self, env: dict[str, str], d: PrivateDaemon) -> subprocess.Popen:
        p = subprocess.Popen([sys.executable, str(self.companion), str(self.args.rows), str(self.args.iters)],
                             env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if any(c.get("pid") == p.pid for c in d.status().get("clients", [])):
                return p
            time.sleep(0.2)
        p.kill()
        raise SystemExit("the second client never connected")

    def run(self, variant: str, threads: int) -> dict:
        d = self.daemon() if variant != "plain" else None
        comp = None
        try:
            env, cenv = self.envs(variant, threads, d.socket if d else "")
            if cenv is not None and d is not None:
                comp = self.start_companion(cenv, d)
            res = self.callgrind(variant, threads, env)
            if self.args.syscalls:
                res.update(self.native(variant, threads, env))
            return res
        finally:
            if comp is not None:
                comp.kill()
                comp.wait()
            if d is not None:
                d.stop()
                d.cleanup()

    def callgrind(self, variant: str, threads: int, env: dict[str, str]) -> dict:
        tag = f"{variant}.t{threads}"
        out = self.work / f"cg.{tag}"
        argv = ["valgrind", "--tool=callgrind", "--trace-children=no", f"--callgrind-out-file={out}.%p",
                sys.executable, str(self.fit), "cg", str(self.mark), str(self.args.rows), str(self.args.iters)]
        r = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=self.args.timeout, check=False)
        line = next((ln for ln in r.stdout.splitlines() if ln.startswith("task-cost ")), None)
        if r.returncode != 0 or line is None:
            raise SystemExit(f"{tag}: valgrind failed ({r.returncode}): {r.stderr[-800:]}")
        parts = sorted(self.work.glob(f"cg.{tag}.*.1"))
        if not parts:
            raise SystemExit(f"{tag}: no dump of the fit")
        # Forked experiments (the estimator's children) write dumps of their own: counted, not summed.
        res = summarize(parts[0])
        res["forked"] = len({p.name.split(".")[3] for p in self.work.glob(f"cg.{tag}.*")}) - 1
        res["digest"] = json.loads(line.split(" ", 1)[1])["digest"]
        if self.args.keep:
            for p in self.work.glob(f"cg.{tag}.*"):
                shutil.copy(p, self.args.keep / p.name)
        return res

    def native(self, variant: str, threads: int, env: dict[str, str]) -> dict:
        """Syscalls during the fit (strace), then the context switches of a run without strace."""
        log = self.work / f"strace.{variant}.t{threads}"
        fit = [sys.executable, str(self.fit), "native", "-", str(self.args.rows), str(self.args.iters)]
        subprocess.run(["strace", "-f", "-qq", "-o", str(log), *fit], env=env, capture_output=True, text=True,
                       timeout=self.args.timeout, check=True)
        counts: collections.Counter = collections.Counter()
        on = False
        with open(log, encoding="utf-8", errors="replace") as f:
            for ln in f:
                if "scaf-task-cost-begin" in ln:
                    on = True
                    continue
                if "scaf-task-cost-end" in ln:
                    break
                m = re.match(r"\d+\s+([a-z_0-9]+)\(", ln)
                if on and m:
                    counts[m.group(1)] += 1
        r = subprocess.run(fit, env=env, capture_output=True, text=True, timeout=self.args.timeout, check=True)
        line = next(ln for ln in r.stdout.splitlines() if ln.startswith("task-cost "))
        got = json.loads(line.split(" ", 1)[1])
        return {"syscalls": sum(counts.values()), "syscall_top": counts.most_common(6),
                "clones": counts["clone"] + counts["clone3"], "nvcsw": got["nvcsw"], "nivcsw": got["nivcsw"]}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("--rows", type=int, default=5000, help="rows of the fit (poolprog's size 1 is 20000)")
    ap.add_argument("--iters", type=int, default=60, help="boosting iterations (poolprog's: 60)")
    ap.add_argument("--threads", default="1,2", help="OMP_NUM_THREADS values, comma-separated")
    ap.add_argument("--variants", default=",".join(VARIANTS), help=f"of {', '.join(VARIANTS)}")
    ap.add_argument("--cpus", type=int, default=len(os.sched_getaffinity(0)), help="scafd --cpus")
    ap.add_argument("--daemon-arg", action="append", default=[], help="one more scafd option (repeatable)")
    ap.add_argument("--build", type=Path, help="another build's bin/scafd and lib/libscaf_*.so (before/after)")
    ap.add_argument("--syscalls", action="store_true", help="also strace each variant natively")
    ap.add_argument("--keep", type=Path, help="copy the callgrind files here")
    ap.add_argument("--json", action="store_true", help="print the results as JSON too")
    ap.add_argument("--timeout", type=float, default=1800)
    args = ap.parse_args()
    variants = [v for v in args.variants.split(",") if v]
    bad = [v for v in variants if v not in VARIANTS]
    if bad:
        ap.error(f"unknown variants: {bad}")
    if not shutil.which("valgrind") or (args.syscalls and not shutil.which("strace")):
        raise SystemExit("needs valgrind (and strace for --syscalls)")
    if args.keep:
        args.keep.mkdir(parents=True, exist_ok=True)
    threads = [int(t) for t in args.threads.split(",")]
    rows: list[tuple[str, int, dict]] = []
    with tempfile.TemporaryDirectory(prefix="scaf-task-cost-") as tmp:
        b = Bench(args, Path(tmp))
        for t in threads:
            for v in variants:
                if v == "worker" and t != threads[0]:
                    continue  # its count is scaf run's, not T: once
                print(f"# {v} at T={t if v != 'worker' else 'scaf run'} ...", file=sys.stderr, flush=True)
                rows.append((v, t, b.run(v, t)))
    plain = {t: r["total"] for v, t, r in rows if v == "plain"}
    print(f"HistGradientBoosting fit, {args.rows} rows x 30, {args.iters} iterations; callgrind, all threads")
    hdr = (f"{'variant':<11}{'T':>3}{'regions':>9}{'instructions':>16}{'/plain':>8}{'layer':>12}"
           f"{'layer/reg':>10}{'libgomp':>12}{'libc':>13}{'program':>15}{'forks':>6}  digest")
    print(hdr)
    for v, t, r in rows:
        base = plain.get(1 if v == "worker" else t)
        ratio = f"{r['total'] / base:.4f}" if base else "-"
        per = r.get("layer", 0) / r["regions"] if r.get("regions") else 0.0
        print(f"{v:<11}{t if v != 'worker' else '-':>3}{r['regions']:>9}{r['total']:>16,}{ratio:>8}"
              f"{r.get('layer', 0):>12,}{per:>10.0f}{r.get('libgomp', 0):>12,}{r.get('libc', 0):>13,}"
              f"{r.get('program', 0):>15,}{r['forked']:>6}  {r['digest']}")
    if args.syscalls:
        print(f"\n{'variant':<11}{'T':>3}{'syscalls':>10}{'clones':>8}{'nvcsw':>8}{'nivcsw':>8}  most made")
        for v, t, r in rows:
            top = ", ".join(f"{n} {k}" for k, n in r["syscall_top"])
            print(f"{v:<11}{t if v != 'worker' else '-':>3}{r['syscalls']:>10}{r['clones']:>8}{r['nvcsw']:>8}"
                  f"{r['nivcsw']:>8}  {top}")
    print("\nthe layer's largest functions (instructions, first scaf row):")
    first = next((r for v, t, r in rows if v not in ("plain", "inert")), None)
    for val, what in (first or {}).get("layer_top", []):
        print(f"{val:>12,}  {what}")
    if args.json:
        print(json.dumps([{"variant": v, "threads": t, **r} for v, t, r in rows]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
