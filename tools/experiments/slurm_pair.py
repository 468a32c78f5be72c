"""Two jobs sharing one Slurm node (OverSubscribe=YES), plain against scaf, timed by Slurm's own accounting (sacct).

    build/venv/bin/python tools/experiments/slurm_pair.py [--pair ep,cg] [--size W] [--reps 4] [--rounds 3]

Run as root: it starts the tests' one-node Slurm (tests/support/slurm.py: munged, slurmctld and
slurmd of its own, job completions in a file that `sacct --completion` reads) with scaf's
slurm.conf lines and TaskProlog. Each round submits, in a rotating order: each program alone as a
job of the node's CPUs (its solo time), the two as two jobs at once with `--oversubscribe` run
plain, and the same with the node-wide shared daemon (the jobs' environment names it in
SCAF_NODE_SOCKET, so the prolog points them at it, and they preload the layer as `scaf run`
does). Each job runs its program --reps times one after the other, so that sacct's Elapsed (whole
seconds) is long enough to compare. Σspeedup of a pair is the sum over
its two jobs of solo seconds / seconds in the pair (the median solo over the rounds); 2.0 is two
machines' worth, 1.0 no better than running them one after the other. Prints one table and
whether every job printed the checksum of its solo run.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "python")]

from scaf.lib import paths
from support import slurm


def elapsed_s(c: slurm.Slurm, jobid: str) -> int:
    """sacct's Elapsed of the job, from the job completion file (there is no slurmdbd)."""
    r = c.run(["sacct", "--completion", "-n", "-P", "-j", jobid, "-o", "JobID,Elapsed"], check=False)
    for line in r.stdout.splitlines():
        jid, _, el = line.partition("|")
        if jid == jobid:
            h, m, s = (int(x) for x in el.split("-")[-1].split(":"))
            days = int(el.split("-")[0]) if "-" in el else 0
            return ((days * 24 + h) * 60 + m) * 60 + s
    raise SystemExit(f"sacct has no Elapsed for job {jobid}: {r.stdout} {r.stderr}")


def submit(c: slurm.Slurm, d: Path, name: str, size: str, reps: int, env: dict[str, str], scaf: bool) -> str:
    script = d / f"{name}.sh"
    pre = f"LD_PRELOAD={paths.layer()} GOMP_SPINCOUNT={paths.SPINCOUNT} " if scaf else ""
    script.write_text(f"#!/bin/sh\nfor i in $(seq {reps}); do {pre}{paths.workload(name)} --size {size}; done > {name}.out\n")
    return c.sbatch(script, f"--cpus-per-task={os.cpu_count()}", "--oversubscribe", env=env)


def checksum(d: Path, name: str) -> str:
    """The checksum all of the job's runs printed, or "?" when they differ or one printed none."""
    text = (d / f"{name}.out").read_text()
    sums = set(re.findall(r"^checksum=(\w+)$", text, re.MULTILINE))
    runs = len(re.findall(r"^name=", text, re.MULTILINE))
    return sums.pop() if len(sums) == 1 and runs == text.count("verified=yes") and runs > 0 else "?"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pair", default="ep,cg")
    ap.add_argument("--size", default="W")
    ap.add_argument("--reps", type=int, default=4, help="runs of the program in each job, one after the other")
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    names = args.pair.split(",")
    assert len(names) == 2, "--pair takes two workloads"
    top = Path(tempfile.mkdtemp(prefix="scaf-slurm-bench-", dir="/tmp"))
    os.chmod(top, 0o755)
    (top / "tmp").mkdir(mode=0o1777)
    prolog = top / "slurm-taskprolog"
    prolog.write_text((ROOT / "dist/slurm/slurm-taskprolog.in").read_text().replace("@SBINDIR@",
                                                                                   str(paths.scafd().parent)))
    prolog.chmod(0o755)
    node_dir = top / "node"
    node_dir.mkdir(mode=0o755)
    node_sock = str(node_dir / "scafd.sock")
    solo: dict[str, list[int]] = {n: [] for n in names}
    pair: dict[str, dict[str, list[int]]] = {cfg: {n: [] for n in names} for cfg in ("plain", "scaf")}
    sums_ok = True
    with slurm.cluster(top / "cluster", [f"TaskProlog={prolog}", "TaskPlugin=task/affinity"]) as c:
        node = subprocess.Popen([str(paths.scafd()), "--shared", "--socket", node_sock],
                                stdout=subprocess.DEVNULL, stderr=open(top / "node.log", "wb"))  # noqa: SIM115
        try:
            while not os.path.exists(node_sock):
                time.sleep(0.05)
            env = {k: v for k, v in os.environ.items() if not k.startswith(("SCAF_", "OMP_", "GOMP_", "LD_"))}
            env.update(c.env(), TMPDIR=str(top / "tmp"))
            ref: dict[str, str] = {}
            for r in range(args.rounds):
                order = ["solo", "plain", "scaf"]
                order = order[r % 3:] + order[:r % 3]
                for what in order:
                    d = top / f"r{r}-{what}"
                    d.mkdir()
                    if what == "solo":
                        for n in names:
                            j = submit(c, d, n, args.size, args.reps, env, False)
                            c.wait_state(j, ("COMPLETED",), 1800)
                            solo[n].append(elapsed_s(c, j))
                            ref.setdefault(n, checksum(d, n))
                            sums_ok &= ref[n] != "?"
                            sums_ok &= checksum(d, n) == ref[n]
                        continue
                    e = dict(env, SCAF_NODE_SOCKET=node_sock if what == "scaf" else "/nonexistent")
                    jobs = {n: submit(c, d, n, args.size, args.reps, e, what == "scaf") for n in names}
                    for n, j in jobs.items():
                        c.wait_state(j, ("COMPLETED",), 1800)
                        pair[what][n].append(elapsed_s(c, j))
                    for n in names:
                        sums_ok &= checksum(d, n) == ref.get(n, checksum(d, n))
                print(f"round {r + 1}: solo {solo}, pairs {pair}", file=sys.stderr, flush=True)
        finally:
            node.terminate()
            node.wait(timeout=20)
    shutil.rmtree(top, ignore_errors=True)
    base = {n: statistics.median(solo[n]) for n in names}
    print(f"pair {'+'.join(names)} at size {args.size} x{args.reps} per job, {os.cpu_count()} CPUs, "
          f"{args.rounds} rounds; "
          f"solo (s): " + ", ".join(f"{n} {base[n]:g}" for n in names))
    print("| configuration | " + " | ".join(f"{n} (s)" for n in names) + " | Σspeedup |")
    print("| --- | " + " | ".join("---" for _ in names) + " | --- |")
    for cfg in ("plain", "scaf"):
        med = {n: statistics.median(pair[cfg][n]) for n in names}
        sp = sum(base[n] / med[n] for n in names)
        print(f"| {cfg} | " + " | ".join(f"{med[n]:g} ({', '.join(map(str, pair[cfg][n]))})" for n in names)
              + f" | {sp:.2f} |")
    print(f"checksums identical to the solo runs: {'yes' if sums_ok else 'NO'}")
    return 0 if sums_ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
