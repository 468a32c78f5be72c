#!/bin/bash
# regionless_ab.sh — a fixed team that fills the machine beside a newcomer in its serial start, under two builds in turn, a static split and plainly.
# Usage: regionless_ab.sh OLD NEW ROUNDS: a fixed team that fills the machine (xgbhist, 2 threads, fixed by the evidence at its
# first regions) joined 0.8 s later by a newcomer whose first 400,000 blocks are serial work (slowregions
# --serial-blocks: a program's start, as an interpreter's imports are), under the daemon and layer of the OLD and
# NEW checkouts in turn, and as a static split and plainly. Prints per run: the build, xgbhist's wall seconds,
# its own time_s, the newcomer's serial seconds and wall seconds, and xgbhist's checksum line.
set -u
OLD=$1 NEW=$2 ROUNDS=${3:-5}
W=$(mktemp -d /tmp/scaf-regionless-XXXXXX)
trap 'rm -rf "$W"' EXIT
cc -std=c11 -O2 -fopenmp -o "$W/slowregions" "$NEW/tests/progs/slowregions.c" || exit 1
now() { date +%s.%N; }
one() { # NAME ROOT(or "") XGB_ENV...
    local name=$1 root=$2 dpid= pre=() t0 ta tb
    shift 2
    if [ -n "$root" ]; then
        rm -rf "$W/state"; mkdir -p "$W/state"
        "$root/build/bin/scafd" --socket "$W/s.sock" --state-dir "$W/state" 2>"$W/scafd.$name.log" &
        dpid=$!
        for _ in $(seq 50); do [ -S "$W/s.sock" ] && break; sleep 0.1; done
        pre=(env LD_PRELOAD="$root/build/lib/libscaf_gomp.so" SCAF_SOCKET="$W/s.sock" GOMP_SPINCOUNT=10000)
    fi
    t0=$(now)
    ( env "$@" "${pre[@]}" "$NEW/build/workloads/xgbhist" --size W >"$W/x.out" 2>&1; now >"$W/x.end" ) &
    local px=$!
    sleep 0.8
    local t1
    t1=$(now)
    "${pre[@]}" "$W/slowregions" --serial-blocks 400000 --regions 1 --iters 1000 >"$W/s.out" 2>&1
    tb=$(now)
    wait $px
    ta=$(cat "$W/x.end")
    [ -n "$dpid" ] && { kill "$dpid"; wait "$dpid" 2>/dev/null; rm -f "$W/s.sock"; }
    echo "$name $(echo "$ta - $t0" | bc) $(sed -n 's/.*time_s=\([0-9.]*\).*/\1/p' "$W/x.out") $(sed -n 's/serial_s=//p' "$W/s.out") $(echo "$tb - $t1" | bc) $(grep -o 'verified=[a-z]*' "$W/x.out")"
}
for _ in $(seq "$ROUNDS"); do
    one static "" OMP_NUM_THREADS=1
    one plain ""
    one old "$OLD"
    one new "$NEW"
done
