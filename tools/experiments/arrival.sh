#!/bin/bash
# arrival.sh — a program known fixed arrives while another fixed program holds every CPU: scaf's turns against the static split and plain, wall seconds of each.
#
# A is `fixed` (cold: nothing remembered, so it starts with every CPU and keeps them), B is `xgbhist`, which the
# memory knows fixed (a priming run first), arriving 1 s after A. Under scaf B starts with its share and the two
# fixed teams, which do not fit together, take turns (docs/memory.md, "When a fixed program already holds every
# CPU"). Baselines: both plain (every CPU each), the static split (OMP_NUM_THREADS=N/2 each).
# Usage: tools/experiments/arrival.sh [ROUNDS]   (writes a table on stdout; set WL_ARGS to change the sizes)
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
B=${SCAF_BUILD:-$ROOT/build}
W=$B/workloads
ROUNDS=${1:-3}
N=$(nproc)
HALF=$(((N + 1) / 2))
ARGS=${WL_ARGS:---size W}
SPIN=$(sed -n 's/^SPINCOUNT = "\([0-9]*\)"/\1/p' "$ROOT/python/scaf/lib/paths.py")
T=$(mktemp -d)
trap 'kill $D 2>/dev/null; rm -rf "$T"' EXIT

secs() { awk -v a="$1" -v b="$2" 'BEGIN{printf "%.2f", b-a}'; }
# one CONFIG ENV... : A, then B 1 s later; prints "A_seconds B_seconds makespan"
one() {
    local t0 ta tb
    t0=$(date +%s.%N)
    (env "$@" "$W/fixed" $ARGS >"$T/a.out" 2>&1; date +%s.%N >"$T/a.end") &
    sleep 1
    tb=$(date +%s.%N)
    env "$@" SCAF_REPORT="$T/b.report" "$W/xgbhist" $ARGS >"$T/b.out" 2>&1
    local be
    be=$(date +%s.%N)
    wait
    ta=$(cat "$T/a.end")
    echo "$(secs "$t0" "$ta") $(secs "$tb" "$be") $(secs "$t0" "$(printf '%s\n%s\n' "$ta" "$be" | sort -g | tail -1)")"
    grep -q "verified=yes" "$T/a.out" && grep -q "verified=yes" "$T/b.out" || echo "  (a run did not verify)"
}

"$B/bin/scafd" --socket "$T/s" --state-dir "$T/state" --log "$T/log" 2>/dev/null &
D=$!
for _ in $(seq 50); do [ -S "$T/s" ] && break; sleep 0.1; done
SCAF=(LD_PRELOAD="$B/lib/libscaf_gomp.so" SCAF_SOCKET="$T/s" GOMP_SPINCOUNT="$SPIN")
# Prime: xgbhist remembered fixed (a short run of it).
env "${SCAF[@]}" "$W/xgbhist" --size S >/dev/null 2>&1
echo "machine: $N CPUs; A = fixed $ARGS (cold), B = xgbhist $ARGS (remembered fixed), B 1 s after A"
printf "%-8s %8s %8s %9s\n" config A_s B_s makespan
for r in $(seq "$ROUNDS"); do
    printf "%-8s %s\n" plain "$(one)"
    printf "%-8s %s\n" static "$(one OMP_NUM_THREADS=$HALF)"
    # A cold every round: forget fixed's record (it is learned when A leaves).
    SCAF_BUILD=$B PYTHONPATH=$ROOT/python python3 -c "
from scaf.lib import progkey, proto
k = progkey.key_of('$W/fixed', ['$W/fixed'])
proto.memory('$T/s', proto.MEMORY_FORGET, key=k.key)" 2>/dev/null
    printf "%-8s %s\n" scaf "$(one "${SCAF[@]}")"
    sed -n 's/.*"reason":"\([^"]*\)".*"teams":\(\[[^]]*\]\).*/         B: \1, teams \2/p' "$T/b.report" | tail -1
    rm -f "$T/b.report"
done
