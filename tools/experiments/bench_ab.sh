#!/bin/bash
# bench_ab.sh — `scaf bench pairs` rounds alternating two builds, the previous commit (OLD) and this one (NEW), a fresh daemon each.
# Usage: [OLD=DIR] [NEW=DIR] bench_ab.sh OUT ROUNDS BENCH-ARGS...   (OLD: a clone built apart, default /tmp/old;
# NEW: default the checkout this script is in); on a quiet machine, e.g.
#   bench_ab.sh /tmp/ab-dt 2 --program datatable --configs unmodified,omp-dynamic,static,scaf,scaf-warm --stagger 0.6 --repeat 3
old=${OLD:-/tmp/old}; new=${NEW:-$(cd "$(dirname "$0")/../.." && pwd)}
out=$1; rounds=$2; shift 2
mkdir -p "$out"
for r in $(seq 1 "$rounds"); do
  for v in old new; do
    if [ $v = old ]; then tree=$old; else tree=$new; fi
    pkill scafd; sleep 1
    "$tree"/build/bin/scaf bench pairs "$@" --out "$out/$v-$r" > "$out/$v-$r.log" 2>&1
  done
done
