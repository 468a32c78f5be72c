"""Two scikit-learn fits at once, side by side under each configuration, by the fit's own seconds.

    build/venv/bin/python tools/experiments/sklearn_pair.py [--rounds R] [--pairs hgb+hgb,...]
                                                           [--configs unmodified,omp-dynamic,static,scaf]

Each round runs every pair under every configuration, in a rotating order, so that a drift of the
machine's state spreads over all of them; prints per pair and configuration the median fit seconds
of the two programs over the rounds, scaf's ratio to the best of the other configurations, and
whether every run printed the same result digest as the programs alone. `scaf` is `scaf run` on a
private daemon (speedup policy, the default) started for the round. docs/results.md, "scikit-learn",
quotes its output.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PY = str(ROOT / "build" / "venv" / "bin" / "python")
FIT = str(ROOT / "tools" / "experiments" / "sklearn_fit.py")
SCAF = str(ROOT / "build" / "bin" / "scaf")
SCAFD = str(ROOT / "build" / "bin" / "scafd")


def env_for(config: str, cpus: int, socket: str | None) -> tuple[dict[str, str], list[str]]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SCAF_", "OMP_")) and k != "LD_PRELOAD"}
    prefix: list[str] = []
    if config == "omp-dynamic":
        env["OMP_DYNAMIC"] = "true"
    elif config == "static":
        env["OMP_NUM_THREADS"] = str(max(1, cpus // 2))
    elif config == "scaf":
        prefix = [SCAF, "run", "--socket", str(socket), "--"]
    elif config != "unmodified":
        raise SystemExit(f"unknown configuration {config}")
    return env, prefix


def run_pair(pair: tuple[str, str], config: str, cpus: int) -> list[tuple[float, str]]:
    """[(fit seconds, digest)] of the two programs, started together."""
    daemon = None
    sock = None
    with tempfile.TemporaryDirectory() as tmp:
        if config == "scaf":
            sock = os.path.join(tmp, "scafd.sock")
            daemon = subprocess.Popen([SCAFD, "--socket", sock], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            for _ in range(100):
                if os.path.exists(sock):
                    break
                time.sleep(0.02)
        try:
            env, prefix = env_for(config, cpus, sock)
            procs = [subprocess.Popen([*prefix, PY, FIT, what], env=env, stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, text=True) for what in pair]
            out = []
            for p in procs:
                so, se = p.communicate(timeout=600)
                fit = next((float(ln.split()[1]) for ln in se.splitlines() if ln.startswith("fit_s ")), float("nan"))
                out.append((fit, so.strip()))
            return out
        finally:
            if daemon:
                daemon.terminate()
                daemon.wait(timeout=10)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--pairs", default="hgb+hgb,kmeans+kmeans,hgb+kmeans")
    ap.add_argument("--configs", default="unmodified,omp-dynamic,static,scaf")
    args = ap.parse_args()
    cpus = len(os.sched_getaffinity(0))
    pairs = [tuple(p.split("+")) for p in args.pairs.split(",")]
    configs = args.configs.split(",")
    alone = {}
    for what in {w for p in pairs for w in p}:
        env, _ = env_for("unmodified", cpus, None)
        r = subprocess.run([PY, FIT, what], env=env, capture_output=True, text=True, check=True)
        alone[what] = (r.stdout.strip(), float(r.stderr.split()[-1]))
    fits: dict[tuple, list[float]] = {}
    same = True
    for rnd in range(args.rounds):
        order = configs[rnd % len(configs):] + configs[:rnd % len(configs)]
        for pair in pairs:
            for config in order:
                for slot, ((fit, digest), what) in enumerate(zip(run_pair(pair, config, cpus), pair, strict=True)):
                    fits.setdefault((pair, slot, config), []).append(fit)
                    same &= digest == alone[what][0]
        print(f"round {rnd + 1}/{args.rounds} done", file=sys.stderr)
    print(f"{cpus} CPUs; alone (unmodified, all CPUs): " +
          ", ".join(f"{w} {s:.3f} s" for w, (_, s) in sorted(alone.items())))
    print(f"| pair: program | {' | '.join(configs)} | scaf / best other |")
    print(f"|---|{'---|' * len(configs)}---|")
    for pair in pairs:
        for slot, what in enumerate(pair):
            med = {c: statistics.median(fits[(pair, slot, c)]) for c in configs}
            others = [v for c, v in med.items() if c != "scaf"]
            ratio = med["scaf"] / min(others) if "scaf" in med and others else float("nan")
            print(f"| {'+'.join(pair)}: {what} | " + " | ".join(f"{med[c]:.3f}" for c in configs) + f" | {ratio:.3f} |")
    print(f"every run printed the digest of the program alone: {'yes' if same else 'NO'}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
