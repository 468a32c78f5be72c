#!/bin/bash
# device_pools.sh — process pools under their framework's default, a static split and scaf on a many-core machine, for docs/results.md, "Process pools".
#
# Runs `scaf bench pools` once per scenario below (each into $D/NAME), with $PY as the Python of scaf and of the
# pool program (it needs scikit-learn and joblib; dask for the Dask scenario, which is skipped without it), and
# appends each report's table to $D/pools.txt. A scenario not begun by $DEADLINE (seconds since the epoch) is
# skipped. The scenarios: tasks of unequal length, as a user's pool meets them. POOL_CONFIGS and POOL_ROUNDS
# replace every scenario's own.
# Usage: B=BUILD D=OUTDIR tools/experiments/device_pools.sh [NAME...]
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
B=${B:-/tmp/scafb}
D=${D:-/tmp/pools-out}
PY=${PY:-python3}
DEADLINE=${DEADLINE:-0}
ROUNDS=${ROUNDS:-2}
mkdir -p "$D"
export PYTHONPATH=$ROOT/python${PYTHONPATH:+:$PYTHONPATH} SCAF_BUILD=$B
# name: framework workers sizes configs rounds
scenario() {
    case $1 in
    loky4-straggler) echo "loky 4 ${SIZES_straggler:-16,2,2,2,2} default,static,scaf,scaf-warm $ROUNDS" ;;
    loky2-equal) echo "loky 2 ${SIZES_equal:-8,8,8} default,static,scaf $ROUNDS" ;;
    dask2) echo "dask 2 ${SIZES_dask:-2,2,4,4,6} default,static,scaf 1" ;;
    mp2) echo "mp 2 ${SIZES_mp:-2,2,4,4,6} default,static,scaf 1" ;;
    esac
}
NAMES=("$@")
[ ${#NAMES[@]} -eq 0 ] && NAMES=(loky4-straggler dask2 loky2-equal mp2)
for name in "${NAMES[@]}"; do
    if [ "$DEADLINE" != 0 ] && [ "$(date +%s)" -ge "$DEADLINE" ]; then echo "$name: skipped, past the deadline" | tee -a "$D/pools.txt"; continue; fi
    read -r fw workers sizes configs rounds <<<"$(scenario "$name")"
    configs=${POOL_CONFIGS:-$configs} rounds=${POOL_ROUNDS:-$rounds}
    if [ "$fw" = dask ] && ! "$PY" -c "import dask.distributed" 2>/dev/null; then echo "$name: skipped, no dask in $PY" | tee -a "$D/pools.txt"; continue; fi
    echo "== $name: $fw, $workers workers, sizes $sizes, $rounds rounds (load $(cut -d' ' -f1-3 /proc/loadavg))" | tee -a "$D/pools.txt"
    t0=$(date +%s)
    "$PY" -m scaf bench pools --frameworks "$fw" --workers "$workers" --sizes "$sizes" --configs "$configs" \
        --rounds "$rounds" --python "$PY" --timeout 120 --out "$D/$name" >"$D/$name.stdout" 2>&1
    echo "exit $? after $(($(date +%s) - t0)) s" | tee -a "$D/pools.txt"
    grep '^|' "$D/$name/report.md" 2>/dev/null | tee -a "$D/pools.txt"
done
