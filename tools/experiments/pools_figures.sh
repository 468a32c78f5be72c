#!/bin/sh
# pools_figures.sh — the runs behind the pools figures of docs/results.md, in one go, on a quiet machine: pools under each configuration, the reclaim, the overhead before and after.
# Usage: tools/experiments/pools_figures.sh OUT [BASE_BUILD]
#   OUT         a folder for every run's output (outside the tree; the last set stands in docs/results/pools at commit 3a4be15)
#   BASE_BUILD  a build of the commit before idle clients (scafd, libscaf_gomp.so, workloads/regions) for the overhead's "before"
set -eu
OUT=$1
BASE=${2:-}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
SCAF=$ROOT/build/bin/scaf
PY=$ROOT/build/venv/bin/python
mkdir -p "$OUT"
# The machine's CPU use over 5 s, in % of all CPUs (what other people's work takes now).
busy() {
    a=$(awk '/^cpu /{print $2+$3+$4+$7+$8+$9, $2+$3+$4+$5+$6+$7+$8+$9}' /proc/stat); sleep 5
    b=$(awk '/^cpu /{print $2+$3+$4+$7+$8+$9, $2+$3+$4+$5+$6+$7+$8+$9}' /proc/stat)
    echo "$a $b" | awk '{printf "%d", 100 * ($3 - $1) / ($4 - $2)}'
}
# Each step waits (20 min at most) until the machine is quiet: under 10% busy over 5 s.
say() {
    n=0
    while [ "$(busy)" -ge 10 ] && [ $n -lt 240 ]; do n=$((n + 1)); done
    echo "== $* (load $(cut -d' ' -f1-3 /proc/loadavg), $(busy)% busy before it)" | tee -a "$OUT/log.txt"
}
say "three fits, joblib loky, 2 workers"
"$SCAF" bench pools --frameworks loky --sizes 1,1,1 --configs default,static,scaf --rounds 5 --out "$OUT/loky3" 2>>"$OUT/log.txt"
say "three fits, joblib loky, guard off (inner_max_num_threads=2)"
"$SCAF" bench pools --frameworks loky --sizes 1,1,1 --configs guard-off --rounds 1 --out "$OUT/loky3-guard-off" 2>>"$OUT/log.txt"
say "five fits of unequal size, the largest last, Dask LocalCluster(n_workers=2, threads_per_worker=1)"
"$SCAF" bench pools --frameworks dask --sizes 1,1,2,2,3 --configs default,guard-off,static,scaf --rounds 3 --out "$OUT/dask5" 2>>"$OUT/log.txt"
say "five fits of unequal size, the largest first, Dask LocalCluster(n_workers=2, threads_per_worker=1)"
"$SCAF" bench pools --frameworks dask --sizes 3,2,2,1,1 --configs default,scaf --rounds 3 --out "$OUT/dask5-largest-first" 2>>"$OUT/log.txt"
say "five fits of unequal size, the largest last, multiprocessing.Pool(2)"
"$SCAF" bench pools --frameworks mp --sizes 1,1,2,2,3 --configs static,scaf --rounds 3 --out "$OUT/mp5" 2>>"$OUT/log.txt"
say "the same, multiprocessing's default (no rule: every worker 2 threads)"
"$SCAF" bench pools --frameworks mp --sizes 1,1,2,2,3 --configs default --rounds 1 --out "$OUT/mp5-default" 2>>"$OUT/log.txt"
say "five numpy product tasks, joblib loky (BLAS pools)"
"$SCAF" bench pools --frameworks loky --task matmul --sizes 1,1,2,2,3 --configs default,static,scaf --rounds 3 --out "$OUT/loky5-matmul" 2>>"$OUT/log.txt"
say "reclaim"
"$PY" "$ROOT/tools/experiments/reclaim.py" --rounds 10 > "$OUT/reclaim.txt" 2>&1
say "overhead"
for r in 1 2; do
    if [ -n "$BASE" ]; then
        SCAF_BUILD=$BASE "$SCAF" bench overhead --workload regions --rounds 5 --out "$OUT/overhead-before-$r" >/dev/null 2>>"$OUT/log.txt"
    fi
    "$SCAF" bench overhead --workload regions --rounds 5 --out "$OUT/overhead-after-$r" >/dev/null 2>>"$OUT/log.txt"
done
say "done"
