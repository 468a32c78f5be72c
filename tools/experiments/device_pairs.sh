#!/bin/bash
# device_pairs.sh — pairs of programs run at once on a many-core machine under each baseline a user has and under scaf, cold and warm, for docs/results.md.
#
# Needs gcc, cmake and bash; with a python3 that has scaf's few needs (rich, psutil) the scaf rows start each
# program through `scaf run` as the `scaf` launcher does (scaf-run, which replays the last identical run's
# decision in C: every run's environment is the same but for the pair's own settings), else through LD_PRELOAD. Builds into $B (unless $B already
# holds a build: NOBUILD=1), writes a table and every program's output under $OUT. Each pair runs, both programs at once:
#   plain     nothing set: each program takes every CPU
#   dynamic   OMP_DYNAMIC=true
#   static    OMP_NUM_THREADS=N/2 each (the static split)
#   cold      under scaf (a fresh daemon, an empty memory)
#   warm      under scaf again, in a fresh daemon on the state directory the cold run left
#   cwarm     warm again, the daemon with --placement cpuset (fixed teams that fit are pinned; the default leaves them to the kernel)
#   swarm     warm again, with GOMP_SPINCOUNT=300000 (libgomp's own default) given as a user's, which scaf run keeps:
#             separates scaf's short spin (paths.SPINCOUNT) from the rest (not in the default list)
#   checked   (dtgroup only) warm, after scaf check's word (malleable) was recorded, as `scaf check` does
# Times are each program's wall seconds; a run past $CAP seconds is killed and shown as >CAP. A pair not begun
# by $DEADLINE (seconds since the epoch) is skipped.
# Programs: the workloads (crit, ep, xgbhist, dtgroup, ...; their size from ARGS_<name>) and `xgboost`, the
# corpus's real XGBoost script (needs xgboost in $PY).
# The cold run is always made (it leaves the memory the warm runs read); CONFIGS (comma-separated) or a pair's own
# list after a colon (dtgroup+dtgroup:dynamic,warm,checked) choose the others.
# Usage: tools/experiments/device_pairs.sh [PAIR[:CONFIGS]...]   (PAIR like crit+crit; default: the set below)
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
B=${B:-/tmp/scafb}
OUT=${OUT:-/tmp/pairs-out}
CAP=${CAP:-40}
PY=${PY:-python3}
DEADLINE=${DEADLINE:-0}
N=$(nproc)
HALF=$((N / 2))
SPIN=$(sed -n 's/^SPINCOUNT = "\([0-9]*\)"/\1/p' "$ROOT/python/scaf/lib/paths.py")
mkdir -p "$OUT"
echo "machine: $N CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2)" | tee -a "$OUT/table.txt"
if [ -z "${NOBUILD:-}" ]; then
    cmake -S "$ROOT" -B "$B/cmake" -DSCAF_OUT="$B" >"$OUT/build.log" 2>&1 && cmake --build "$B/cmake" -j"$N" >>"$OUT/build.log" 2>&1 ||
        { echo "build failed"; tail -20 "$OUT/build.log"; exit 1; }
fi
W=$B/workloads
LAYER=$B/lib/libscaf_gomp.so
export PYTHONPATH=$ROOT/python${PYTHONPATH:+:$PYTHONPATH} SCAF_BUILD=$B
USE_RUN=
SCAF_BUILD=$B "$PY" -m scaf run --help >/dev/null 2>&1 && USE_RUN=1
echo "scaf rows start programs through: $([ -n "$USE_RUN" ] && echo "scaf run" || echo LD_PRELOAD)" | tee -a "$OUT/table.txt"

# Work per program, chosen so each runs for seconds at N/2 threads on a 16-CPU machine.
ARGS_crit=${ARGS_crit:---size W}
ARGS_ep=${ARGS_ep:---size W --scale 4}
ARGS_xgbhist=${ARGS_xgbhist:---size W --scale 6}
ARGS_dtgroup=${ARGS_dtgroup:---size W --scale 6}
command_of() {
    case $1 in
    xgboost) echo "$PY $ROOT/tests/corpus/scripts/xgboost_hist.py" ;;
    *) local v="ARGS_$1"; echo "$W/$1 ${!v:---size W}" ;;
    esac
}

# run_one TAG PROG SCAF ENV... : one program, its wall seconds into $OUT/TAG.t, its output into $OUT/TAG.out;
# SCAF=1 starts it under scaf.
run_one() {
    local tag=$1 prog=$2 scaf=$3
    shift 3
    local t0 t1 rc pre=()
    if [ "$scaf" = 1 ]; then
        # The pair's own settings come last in the LD_PRELOAD form, so a GOMP_SPINCOUNT of theirs (swarm) stands.
        if [ -n "$USE_RUN" ]; then pre=("$B/lib/scaf-run" "$PY" "" run --no-start --socket "$OUT/sock" --); else pre=(env LD_PRELOAD="$LAYER" SCAF_SOCKET="$OUT/sock" GOMP_SPINCOUNT="$SPIN" "$@"); fi
    fi
    t0=$(date +%s.%N)
    # shellcheck disable=SC2046
    env "$@" timeout "$CAP" "${pre[@]}" $(command_of "$prog") >"$OUT/$tag.out" 2>&1
    rc=$?
    t1=$(date +%s.%N)
    if [ $rc -eq 124 ]; then echo ">$CAP" >"$OUT/$tag.t"
    elif [ $rc -ne 0 ]; then echo "rc$rc" >"$OUT/$tag.t"
    else awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.2f", b-a}' >"$OUT/$tag.t"; fi
}

# pair TAG A B SCAF ENV... : A and B at once
pair() {
    local tag=$1 a=$2 b=$3 scaf=$4
    shift 4
    run_one "$tag.1" "$a" "$scaf" "$@" &
    local p=$!
    run_one "$tag.2" "$b" "$scaf" "$@"
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
# spair TAG A B ENV... : A and B at once under scaf, their exit reports into $OUT/TAG.report. The report's path is
# the same for every run, so that scaf-run's replay (keyed by the environment) is not defeated by it.
spair() {
    local tag=$1
    shift
    rm -f "$OUT/report"
    pair "$tag" "$1" "$2" 1 "${@:3}" SCAF_REPORT="$OUT/report"
    mv -f "$OUT/report" "$OUT/$tag.report" 2>/dev/null
}

cell() { # TAG: the summed seconds, or each program's figure where one failed
    local a b
    a=$(cat "$OUT/$1.1.t"); b=$(cat "$OUT/$1.2.t")
    awk -v a="$a" -v b="$b" 'BEGIN{ if (a !~ /^[0-9.]+$/ || b !~ /^[0-9.]+$/) printf "%s+%s", a, b; else printf "%.2f", a+b }'
}
# The lines that carry a program's answer: the workloads' checksum, the XGBoost script's digests.
sums() { grep -hE '^(checksum=|predict |model |logloss )' "$OUT/$1.1.out" "$OUT/$1.2.out" 2>/dev/null | sort -u | tr '\n' ' '; }

PAIRS=("$@")
CONFIGS=${CONFIGS:-plain,dynamic,static,cold,warm,cwarm,checked}
[ ${#PAIRS[@]} -eq 0 ] && PAIRS=(xgbhist+xgbhist crit+crit dtgroup+dtgroup crit+ep)
printf "%-18s %9s %9s %9s %9s %9s %9s %9s %9s\n" pair plain dynamic static cold warm cwarm swarm checked | tee -a "$OUT/table.txt"
for spec in "${PAIRS[@]}"; do
    p=${spec%%:*}
    cfgs=$CONFIGS
    [ "$spec" != "$p" ] && cfgs=${spec#*:}
    want() { [[ ",${cfgs// /,}," == *",$1,"* ]]; }
    if [ "$DEADLINE" != 0 ] && [ "$(date +%s)" -ge "$DEADLINE" ]; then echo "$p: skipped, past the deadline" | tee -a "$OUT/table.txt"; continue; fi
    a=${p%+*}; b=${p#*+}; RUN=$p
    want plain && pair "$p.plain" "$a" "$b" 0
    want dynamic && pair "$p.dynamic" "$a" "$b" 0 OMP_DYNAMIC=true
    want static && pair "$p.static" "$a" "$b" 0 OMP_NUM_THREADS=$HALF
    st=$(mktemp -d "$OUT/state-XXXX")
    daemon_start "$st"
    spair "$p.cold" "$a" "$b"
    daemon_stop
    if want warm; then
        daemon_start "$st"
        spair "$p.warm" "$a" "$b"
        daemon_stop
    fi
    if want cwarm; then
        daemon_start "$st" --placement cpuset
        spair "$p.cwarm" "$a" "$b"
        daemon_stop
    fi
    if want swarm; then
        daemon_start "$st"
        spair "$p.swarm" "$a" "$b" GOMP_SPINCOUNT=300000
        daemon_stop
    fi
    if want checked && [ "$a" = dtgroup ] && [ -n "$USE_RUN" ]; then
        daemon_start "$st"
        "$PY" - "$OUT/sock" "$W/$a" >>"$OUT/daemon.err" 2>&1 <<'PYEOF'
import sys
from scaf.lib import progkey, proto
sock, exe = sys.argv[1], sys.argv[2]
key = progkey.key_of(exe, [exe])
r = proto.memory(sock, proto.MEMORY_REMEMBER, key=key.key, verdict=proto.VERDICT_MALLEABLE, name=key.name.encode())
print("remembered", r.status)
PYEOF
        daemon_stop
        daemon_start "$st"
        spair "$p.checked" "$a" "$b"
        daemon_stop
    fi
    ref=$(sums "$p.plain")
    [ -f "$OUT/$p.plain.1.t" ] || ref=$(sums "$p.static")
    [ -f "$OUT/$p.plain.1.t" ] || [ -f "$OUT/$p.static.1.t" ] || ref=$(sums "$p.dynamic")
    row=()
    for c in plain dynamic static cold warm cwarm swarm checked; do
        if [ ! -f "$OUT/$p.$c.1.t" ]; then row+=(-); continue; fi
        v=$(cell "$p.$c")
        [ "$(sums "$p.$c")" = "$ref" ] || v="$v*"
        row+=("$v")
    done
    printf "%-18s %9s %9s %9s %9s %9s %9s %9s %9s\n" "$p" "${row[@]}" | tee -a "$OUT/table.txt"
done
echo "summed wall seconds of the two programs (lower is better); >CAP killed at the cap, rcN exited N; * an answer that differs from plain's (static's, else dynamic's, where plain did not run)" | tee -a "$OUT/table.txt"
grep -h '"reason"' "$OUT"/*.report 2>/dev/null | sed 's/.*"exe":"\([^"]*\)".*"verdict":"\([^"]*\)".*"reason":"\([^"]*\)".*"teams":\(\[[^]]*\]\).*/\1 \2: \3 teams \4/' | sort | uniq -c >"$OUT/verdicts.txt"
