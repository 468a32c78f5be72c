#!/bin/bash
# device_curves.sh — each program alone at 1, N/4, N/2 and N threads on a many-core machine: the solo curves the simulator's calibration turns pairs into scenarios from.
#
# Run it in the same session as device_pairs.sh, with the same ARGS_<prog> (device_session.sh exports them), so
# that the curves and the pairs are of one machine and one size: then `calibrate_sim.py --from DIR` judges every
# pair whose programs both have a curve. Each (program, threads) runs CURVE_ROUNDS times (default 1), plain
# (OMP_NUM_THREADS=T, no layer), in rounds; the median goes to $OUT/scaling.txt as "PROG alone scale1 T=N: S" lines
# (the first loan's probe-scaling.txt format), the single runs to $OUT/curves-runs.txt. A run past $CAP seconds is
# killed and left out. A (program, threads) not begun by $DEADLINE (seconds since the epoch) is skipped.
# Programs: the workloads (crit, ep, xgbhist, dtgroup, ...) built in $B, and `xgboost` (needs xgboost in $PY).
# Usage: B=BUILD OUT=DIR [CURVE_THREADS="1 4 8 16"] tools/experiments/device_curves.sh PROG...
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
B=${B:-/tmp/scafb}
OUT=${OUT:-/tmp/curves-out}
PY=${PY:-python3}
CAP=${CAP:-120}
DEADLINE=${DEADLINE:-0}
ROUNDS=${CURVE_ROUNDS:-1}
N=$(nproc)
THREADS=${CURVE_THREADS:-"1 $((N / 4)) $((N / 2)) $N"}
[ $# -gt 0 ] || { echo "usage: $0 PROG..." >&2; exit 2; }
mkdir -p "$OUT"
command_of() {
    case $1 in
    xgboost) echo "$PY $ROOT/tests/corpus/scripts/xgboost_hist.py" ;;
    *) local v="ARGS_$1"; echo "$B/workloads/$1 ${!v:---size W}" ;;
    esac
}
for r in $(seq "$ROUNDS"); do
    for prog in "$@"; do
        for t in $THREADS; do
            if [ "$DEADLINE" != 0 ] && [ "$(date +%s)" -ge "$DEADLINE" ]; then echo "$prog T=$t round $r: skipped, past the deadline" >>"$OUT/curves-runs.txt"; continue; fi
            t0=$(date +%s.%N)
            # shellcheck disable=SC2046
            env OMP_NUM_THREADS="$t" timeout "$CAP" $(command_of "$prog") >"$OUT/$prog.T$t.r$r.out" 2>&1
            rc=$?
            if [ $rc -eq 0 ]; then
                awk -v p="$prog" -v t="$t" -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN{printf "%s T=%s %.3f\n", p, t, b-a}' >>"$OUT/curves-runs.txt"
            else
                echo "$prog T=$t rc$rc" >>"$OUT/curves-runs.txt"
            fi
        done
    done
done
# The median of each (program, threads) over its rounds.
awk '$3 ~ /^[0-9.]+$/ { k = $1 " " $2; n[k]++; v[k, n[k]] = $3 }
     END { for (k in n) { m = n[k]; for (i = 1; i <= m; i++) a[i] = v[k, i];
             for (i = 1; i <= m; i++) for (j = i + 1; j <= m; j++) if (a[j] < a[i]) { x = a[i]; a[i] = a[j]; a[j] = x }
             med = (m % 2) ? a[(m + 1) / 2] : (a[m / 2] + a[m / 2 + 1]) / 2
             split(k, f, " "); printf "%s alone scale1 %s: %.2f\n", f[1], f[2], med } }' "$OUT/curves-runs.txt" |
    sort -t= -k1,1 -k2,2n >"$OUT/scaling.txt"
cat "$OUT/scaling.txt"
