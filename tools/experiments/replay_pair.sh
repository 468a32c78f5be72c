#!/bin/bash
# replay_pair.sh — two data.table jobs at once under OMP_DYNAMIC, scaf run through Python, and scaf run replayed by scaf-run, alternating.
# Usage: replay_pair.sh ROUNDS: two data.table jobs at once (tests/corpus/scripts/datatable_group.R, each in its own folder),
# ROUNDS rounds alternating OMP_DYNAMIC=true, `scaf run` through Python every time (SCAF_RUN_REPLAY=0) and
# `scaf run` replayed by scaf-run; a private scafd with its memory kept warm by two rounds first.
# Prints one line per run: mode, summed wall seconds of the two jobs, digests of their outputs.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
S=$ROOT/tests/corpus/scripts/datatable_group.R
W=$(mktemp -d /tmp/scaf-replay-XXXXXX)
mkdir -p "$W/a" "$W/b" "$W/state" "$W/cache"
"$ROOT/build/bin/scafd" --socket "$W/s.sock" --state-dir "$W/state" 2>"$W/scafd.log" &
DPID=$!
trap 'kill $DPID 2>/dev/null; rm -rf "$W"' EXIT
sleep 0.5
job() { # MODE FOLDER
  cd "$W/$2"
  local t0 t1
  t0=$(date +%s.%N)
  case $1 in
    dyn) env OMP_DYNAMIC=true Rscript "$S" >"$W/out.$2" 2>/dev/null ;;
    py) env XDG_CACHE_HOME="$W/cache" SCAF_RUN_REPLAY=0 "$ROOT/build/bin/scaf" run --no-start --socket "$W/s.sock" -- Rscript "$S" >"$W/out.$2" 2>/dev/null ;;
    replay) env XDG_CACHE_HOME="$W/cache" "$ROOT/build/bin/scaf" run --no-start --socket "$W/s.sock" -- Rscript "$S" >"$W/out.$2" 2>/dev/null ;;
  esac
  t1=$(date +%s.%N)
  echo "$t1 - $t0" | bc >"$W/t.$2"
}
pair() {
  job "$1" a & local pa=$!; job "$1" b & local pb=$!; wait "$pa" "$pb"
  echo "$1 $(echo "$(cat "$W/t.a") + $(cat "$W/t.b")" | bc) $(grep -v '^threads' "$W/out.a" | md5sum | cut -c1-8) $(grep -v '^threads' "$W/out.b" | md5sum | cut -c1-8)"
}
pair replay >/dev/null; pair replay >/dev/null   # the memory learns data.table, and the records are written
for _ in $(seq "${1:-10}"); do pair dyn; pair py; pair replay; done
