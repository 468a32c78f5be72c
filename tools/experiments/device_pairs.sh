#!/bin/bash
# device_pairs.sh — pairs of workloads run at once on a many-core machine under each baseline a user has and under scaf, cold and warm, for docs/results.
#
# Needs only gcc, cmake and bash (python3 for the `checked` row; skipped without it). Builds into $B,
# writes a table and every program's output under $OUT. Each pair runs, both programs at once:
#   plain     nothing set: each program takes every CPU
#   dynamic   OMP_DYNAMIC=true
#   static    OMP_NUM_THREADS=N/2 each (the static split)
#   cold      under scaf (LD_PRELOAD, a fresh daemon, an empty memory)
#   warm      under scaf again, in a fresh daemon on the state directory the cold run left
#   kwarm     warm again, the daemon with --placement kernel (fixed teams that fit are not pinned)
#   checked   (dtgroup only) warm, after scaf check's word (malleable) was recorded, as `scaf check` does
# Times are each program's wall seconds; a run past $CAP seconds is killed and shown as >CAP.
# Usage: tools/experiments/device_pairs.sh [PAIR...]   (PAIR like crit+crit; default: the set below)
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
B=${B:-/tmp/scafb}
OUT=${OUT:-/tmp/pairs-out}
CAP=${CAP:-40}
N=$(nproc)
HALF=$((N / 2))
SPIN=$(sed -n 's/^SPINCOUNT = "\([0-9]*\)"/\1/p' "$ROOT/python/scaf/lib/paths.py")
mkdir -p "$OUT"
echo "machine: $N CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2)" | tee "$OUT/table.txt"
cmake -S "$ROOT" -B "$B/cmake" -DSCAF_OUT="$B" >"$OUT/build.log" 2>&1 && cmake --build "$B/cmake" -j"$N" >>"$OUT/build.log" 2>&1 ||
    { echo "build failed"; tail -20 "$OUT/build.log"; exit 1; }
W=$B/workloads
LAYER=$B/lib/libscaf_gomp.so

# Work per program, chosen so each runs for seconds at N/2 threads on a 16-CPU machine.
args_of() {
    [ -n "${WL_ARGS:-}" ] && { echo "$WL_ARGS"; return; }
    case $1 in
    crit) echo "--size W" ;;
    xgbhist | dtgroup) echo "--size W --scale 6" ;;
    ep) echo "--size W --scale 4" ;;
    *) echo "--size W" ;;
    esac
}

# run_one TAG PROG ENV... : one program, its wall seconds into $OUT/TAG.t, its output into $OUT/TAG.out
run_one() {
    local tag=$1 prog=$2
    shift 2
    local t0 t1 rc
    t0=$(date +%s.%N)
    env "$@" timeout "$CAP" "$W/$prog" $(args_of "$prog") >"$OUT/$tag.out" 2>&1
    rc=$?
    t1=$(date +%s.%N)
    if [ $rc -eq 124 ]; then echo ">$CAP" >"$OUT/$tag.t"; else awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.2f", b-a}' >"$OUT/$tag.t"; fi
}

# pair TAG A B ENV... : A and B at once
pair() {
    local tag=$1 a=$2 b=$3
    shift 3
    run_one "$tag.1" "$a" "$@" &
    local p=$!
    run_one "$tag.2" "$b" "$@"
    wait $p
}

daemon_start() { # STATE_DIR [SCAFD OPTION...]
    local st=$1
    shift
    rm -f "$OUT/sock"
    "$B/bin/scafd" --socket "$OUT/sock" --state-dir "$st" --log "$OUT/daemon-$RUN.log" "$@" 2>>"$OUT/daemon.err" &
    DPID=$!
    for _ in $(seq 50); do [ -S "$OUT/sock" ] && break; sleep 0.1; done
}
daemon_stop() { kill "$DPID" 2>/dev/null; wait "$DPID" 2>/dev/null; }

SCAF_ENV=(LD_PRELOAD="$LAYER" SCAF_SOCKET="$OUT/sock" GOMP_SPINCOUNT="$SPIN")

cell() { # TAG: "t1 + t2 = sum"; verified and checksums noted
    local a b
    a=$(cat "$OUT/$1.1.t"); b=$(cat "$OUT/$1.2.t")
    awk -v a="$a" -v b="$b" 'BEGIN{ if (a ~ />/ || b ~ />/) printf "%s+%s", a, b; else printf "%.2f", a+b }'
}
sums() { grep -h '^checksum=' "$OUT/$1.1.out" "$OUT/$1.2.out" 2>/dev/null | sort -u | tr '\n' ' '; }

PAIRS=("$@")
[ ${#PAIRS[@]} -eq 0 ] && PAIRS=(xgbhist+xgbhist crit+crit dtgroup+dtgroup crit+ep)
printf "%-18s %9s %9s %9s %9s %9s %9s %9s\n" pair plain dynamic static cold warm kwarm checked | tee -a "$OUT/table.txt"
for p in "${PAIRS[@]}"; do
    a=${p%+*}; b=${p#*+}; RUN=$p
    pair "$p.plain" "$a" "$b"
    pair "$p.dynamic" "$a" "$b" OMP_DYNAMIC=true
    pair "$p.static" "$a" "$b" OMP_NUM_THREADS=$HALF
    st=$(mktemp -d "$OUT/state-XXXX")
    daemon_start "$st"
    pair "$p.cold" "$a" "$b" "${SCAF_ENV[@]}" SCAF_REPORT="$OUT/$p.cold.report"
    daemon_stop
    daemon_start "$st"
    pair "$p.warm" "$a" "$b" "${SCAF_ENV[@]}" SCAF_REPORT="$OUT/$p.warm.report"
    daemon_stop
    daemon_start "$st" --placement kernel
    pair "$p.kwarm" "$a" "$b" "${SCAF_ENV[@]}" SCAF_REPORT="$OUT/$p.kwarm.report"
    if [ "$a" = dtgroup ] && command -v python3 >/dev/null; then
        SCAF_BUILD=$B PYTHONPATH=$ROOT/python python3 - "$OUT/sock" "$W/$a" >>"$OUT/daemon.err" 2>&1 <<'EOF'
import sys
from scaf.lib import progkey, proto
sock, exe = sys.argv[1], sys.argv[2]
key = progkey.key_of(exe, [exe])
r = proto.memory(sock, proto.MEMORY_REMEMBER, key=key.key, verdict=proto.VERDICT_MALLEABLE, name=key.name.encode())
print("remembered", r.status)
EOF
        daemon_stop
        daemon_start "$st"
        pair "$p.checked" "$a" "$b" "${SCAF_ENV[@]}" SCAF_REPORT="$OUT/$p.checked.report"
    fi
    daemon_stop
    ref=$(sums "$p.plain")
    row=()
    for c in plain dynamic static cold warm kwarm checked; do
        if [ ! -f "$OUT/$p.$c.1.t" ]; then row+=(-); continue; fi
        v=$(cell "$p.$c")
        [ "$(sums "$p.$c")" = "$ref" ] || v="$v*"
        row+=("$v")
    done
    printf "%-18s %9s %9s %9s %9s %9s %9s %9s\n" "$p" "${row[@]}" | tee -a "$OUT/table.txt"
done
echo "summed wall seconds of the two programs (lower is better); * an answer (checksum) that differs from plain's" | tee -a "$OUT/table.txt"
grep -h '"reason"' "$OUT"/*.report 2>/dev/null | sed 's/.*"exe":"\([^"]*\)".*"verdict":"\([^"]*\)".*"reason":"\([^"]*\)".*"teams":\(\[[^]]*\]\).*/\1 \2: \3 teams \4/' | sort | uniq -c >"$OUT/verdicts.txt"
