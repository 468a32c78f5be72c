#!/bin/bash
# device_runtimes.sh — every runtime's pairs on a many-core machine: `scaf bench pairs` over the programs the bench knows by name (polars, duckdb, onnxruntime, arrow, numba, numexpr, go, java), each twice and beside an OpenMP workload, unmodified, static, scaf cold and warm.
#
# Needs a build (make) whose build/venv has the pinned wheels (requirements.txt), or those the machine can run: a
# program the bench cannot find is skipped with the reason. Go needs `go` (golang-go), Java `javac` and `java`.
# REPEAT (default 3), CONFIGS (default unmodified,static,scaf,scaf-warm), PROGRAMS (default all), OMP (the OpenMP
# workload beside each, default stencil) and OUT (default /tmp/runtimes-out) choose what runs; one folder of
# results (results.json, report.md) per program under $OUT, and $OUT/table.md made from them by
# tools/experiments/results_table.py when it is there.
# Usage: tools/experiments/device_runtimes.sh
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${OUT:-/tmp/runtimes-out}
REPEAT=${REPEAT:-3}
CONFIGS=${CONFIGS:-unmodified,static,scaf,scaf-warm}
PROGRAMS=${PROGRAMS:-polars duckdb onnxruntime arrow numba numexpr go java}
OMP=${OMP:-stencil}
SCAF="$ROOT/build/bin/scaf"
mkdir -p "$OUT"
echo "machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2)" | tee "$OUT/machine.txt"
for p in $PROGRAMS; do
    if ! "$SCAF" bench pairs --workloads "$OMP" --program "$p" --configs "$CONFIGS" --repeat "$REPEAT" \
        --timeout 600 --out "$OUT/$p" >"$OUT/$p.log" 2>&1; then
        echo "$p: failed or skipped: $(grep -m1 -i 'not installed\|error' "$OUT/$p.log")" | tee -a "$OUT/skipped.txt"
        continue
    fi
    echo "$p: $OUT/$p/report.md"
done
if [ -x "$ROOT/tools/experiments/results_table.py" ] || [ -f "$ROOT/tools/experiments/results_table.py" ]; then
    "$ROOT/build/venv/bin/python" "$ROOT/tools/experiments/results_table.py" "$OUT"/*/ >"$OUT/table.md" 2>&1 || true
fi
