#!/bin/bash
# device_solo.sh — one program alone, plain and under scaf in turn, to separate what scaf costs a lone program from what sharing costs a pair.
#
# Each round runs every row of ROWS once, in that order, for each program named (SOLO_ROUNDS rounds, default 3).
# Rows (default: plain env scaf half shalf):
#   plain   nothing set: every CPU
#   env     plain with what scaf run adds besides the layer (GOMP_SPINCOUNT, OPENBLAS_THREAD_TIMEOUT: paths.py)
#   env1    env with OMP_NUM_THREADS=N-1 (the team a start leaves when the lookout sees one CPU's foreign load)
#   off     env with the layer preloaded and SCAF_DISABLE=1 (the cost of loading it)
#   nod     env with the layer preloaded and no daemon (the layer on its own)
#   pre     env with the layer preloaded and the daemon (everything but scaf run's own start)
#   scaf    through `scaf run` as the `scaf` launcher starts it (scaf-run, which replays the decision of the run
#           before in C), one daemon for all rounds (so from the second round its memory is warm)
#   pyrun   scaf through `python -m scaf run` (the decision made in Python every time)
#   noblas  scaf with SCAF_BLAS=0 (no BLAS pool steering, no helper thread)
#   notls   scaf with SCAF_TLS_CHECK=0 SCAF_EXPERIMENTS=0
#   half    OMP_NUM_THREADS=N/2, as one program of a static split
#   shalf   through `scaf run` with OMP_NUM_THREADS=N/2 (a user's count, which scaf run keeps)
#   import  env, the Python program's imports alone (`-c "import xgboost"`; xgboost only)
#   simport scaf, the same imports
# and `true` plain, through scaf-run and through Python's `scaf run` (scaf run's own start). Writes $OUT/solo.txt: each row's wall seconds,
# round by round, and the median. Expects a build in $B (device_pairs.sh's) and, for `xgboost`, xgboost in $PY.
# Usage: B=BUILD OUT=DIR [ROWS="..."] tools/experiments/device_solo.sh PROG...   (PROG: a workload, or xgboost)
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
B=${B:-/tmp/scafb}
OUT=${OUT:-/tmp/solo-out}
PY=${PY:-python3}
ROUNDS=${SOLO_ROUNDS:-3}
ROWS=${ROWS:-plain env scaf half shalf}
CAP=${CAP:-40}
HALF=$(($(nproc) / 2))
SPIN=$(sed -n 's/^SPINCOUNT = "\([0-9]*\)"/\1/p' "$ROOT/python/scaf/lib/paths.py")
TIMEOUT=$(sed -n 's/^THREAD_TIMEOUT = "\([0-9]*\)"/\1/p' "$ROOT/python/scaf/lib/paths.py")
ENV="GOMP_SPINCOUNT=$SPIN OPENBLAS_THREAD_TIMEOUT=$TIMEOUT"
LAYER=$B/lib/libscaf_gomp.so
export PYTHONPATH=$ROOT/python${PYTHONPATH:+:$PYTHONPATH} SCAF_BUILD=$B
mkdir -p "$OUT"
command_of() {
    case $1 in
    xgboost) echo "$PY $ROOT/tests/corpus/scripts/xgboost_hist.py" ;;
    xgboost-import) echo "$PY -c 'import xgboost'" ;;
    true) echo true ;;
    *) local v="ARGS_$1"; echo "$B/workloads/$1 ${!v:---size W}" ;;
    esac
}
# How each row starts a program: 0 plain, 1 as the `scaf` launcher does (tools/scaf.in), 2 through Python alone.
PRE_1="$B/lib/scaf-run $PY '' run --no-start --socket $OUT/sock --"
PRE_2="$PY -m scaf run --no-start --socket $OUT/sock --"
once() { # FILE PROG HOW(0/1/2) ENV... : appends the wall seconds (or rcN) to FILE
    local file=$1 prog=$2 how=$3 t0 rc pre=
    shift 3
    [ "$how" = 0 ] || { local v="PRE_$how"; pre=${!v}; }
    t0=$(date +%s.%N)
    eval "env $* timeout $CAP $pre $(command_of "$prog")" >>"$OUT/$prog.out" 2>&1
    rc=$?
    if [ $rc -ne 0 ]; then echo "rc$rc" >>"$file"; else awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN{printf "%.3f\n", b-a}' >>"$file"; fi
}
rm -f "$OUT/sock"
"$B/bin/scafd" --socket "$OUT/sock" --state-dir "$(mktemp -d "$OUT/state-XXXX")" --log "$OUT/daemon.log" 2>>"$OUT/daemon.err" &
DPID=$!
for _ in $(seq 50); do [ -S "$OUT/sock" ] && break; sleep 0.1; done
for r in $(seq "$ROUNDS"); do
    for p in "$@"; do
        for row in $ROWS; do
            case $row in
            plain) once "$OUT/$p.$row" "$p" 0 ;;
            env) once "$OUT/$p.$row" "$p" 0 $ENV ;;
            env1) once "$OUT/$p.$row" "$p" 0 $ENV OMP_NUM_THREADS=$(($(nproc) - 1)) ;;
            off) once "$OUT/$p.$row" "$p" 0 $ENV LD_PRELOAD="$LAYER" SCAF_SOCKET="$OUT/sock" SCAF_DISABLE=1 ;;
            nod) once "$OUT/$p.$row" "$p" 0 $ENV LD_PRELOAD="$LAYER" SCAF_SOCKET="$OUT/none" ;;
            pre) once "$OUT/$p.$row" "$p" 0 $ENV LD_PRELOAD="$LAYER" SCAF_SOCKET="$OUT/sock" ;;
            scaf) once "$OUT/$p.$row" "$p" 1 ;;
            pyrun) once "$OUT/$p.$row" "$p" 2 ;;
            noblas) once "$OUT/$p.$row" "$p" 1 SCAF_BLAS=0 ;;
            notls) once "$OUT/$p.$row" "$p" 1 SCAF_TLS_CHECK=0 SCAF_EXPERIMENTS=0 ;;
            half) once "$OUT/$p.$row" "$p" 0 OMP_NUM_THREADS="$HALF" ;;
            shalf) once "$OUT/$p.$row" "$p" 1 OMP_NUM_THREADS="$HALF" ;;
            import) [ "$p" = xgboost ] && once "$OUT/$p.$row" "$p-import" 0 $ENV ;;
            simport) [ "$p" = xgboost ] && once "$OUT/$p.$row" "$p-import" 1 ;;
            esac
        done
    done
    once "$OUT/true.plain" true 0
    once "$OUT/true.scaf" true 1
    once "$OUT/true.pyrun" true 2
    echo "round $r done" >>"$OUT/daemon.err"
done
kill "$DPID" 2>/dev/null; wait "$DPID" 2>/dev/null
median() { grep -E '^[0-9.]+$' "$1" | sort -n | awk '{v[NR]=$1} END{if (NR) print v[int((NR+1)/2)]; else print "-"}'; }
{
    echo "each program alone on $(nproc) CPUs, $ROUNDS rounds alternating; wall seconds round by round, then the median"
    for f in "$OUT"/true.plain "$OUT"/true.scaf "$OUT"/true.pyrun; do printf "%-16s %s  median %s\n" "$(basename "$f")" "$(tr '\n' ' ' <"$f")" "$(median "$f")"; done
    for p in "$@"; do for row in $ROWS; do
        f=$OUT/$p.$row
        [ -f "$f" ] || continue
        printf "%-16s %s  median %s\n" "$(basename "$f")" "$(tr '\n' ' ' <"$f")" \
            "$(median "$f")"
    done; done
} >"$OUT/solo.txt"
grep -hE '^(predict |model |logloss |checksum=)' "$OUT"/*.out 2>/dev/null | sort | uniq -c >>"$OUT/solo.txt"
