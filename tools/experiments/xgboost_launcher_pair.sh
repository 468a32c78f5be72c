#!/bin/bash
# xgboost_launcher_pair.sh — two real XGBoost trainings at once as a static split, under scaf run through Python, and replayed by scaf-run, alternating.
# Usage: xgboost_launcher_pair.sh ROUNDS: two XGBoost trainings at once (tests/corpus/scripts/xgboost_hist.py), ROUNDS rounds alternating
# the static split (OMP_NUM_THREADS = CPUs/2 each), `scaf run` through Python every time (SCAF_RUN_REPLAY=0) and
# `scaf run` as the `scaf` launcher starts it the second time (replayed by scaf-run); a private scafd whose memory
# two rounds first teach that XGBoost keeps its team. Prints one line per pair: mode, summed wall seconds of the
# two trainings, the digests of their outputs.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
S=$ROOT/tests/corpus/scripts/xgboost_hist.py
PY=$ROOT/build/venv/bin/python
HALF=$(($(nproc) / 2))
W=$(mktemp -d /tmp/scaf-xgb-XXXXXX)
mkdir -p "$W/a" "$W/b" "$W/state" "$W/cache"
"$ROOT/build/bin/scafd" --socket "$W/s.sock" --state-dir "$W/state" 2>"$W/scafd.log" &
DPID=$!
trap 'kill $DPID 2>/dev/null; rm -rf "$W"' EXIT
sleep 0.5
job() { # MODE FOLDER
  cd "$W/$2" || exit 1
  local t0 t1
  t0=$(date +%s.%N)
  case $1 in
    static) env OMP_NUM_THREADS="$HALF" "$PY" "$S" >"$W/out.$2" 2>/dev/null ;;
    py) env XDG_CACHE_HOME="$W/cache" SCAF_RUN_REPLAY=0 "$ROOT/build/bin/scaf" run --no-start --socket "$W/s.sock" -- "$PY" "$S" >"$W/out.$2" 2>/dev/null ;;
    replay) env XDG_CACHE_HOME="$W/cache" "$ROOT/build/bin/scaf" run --no-start --socket "$W/s.sock" -- "$PY" "$S" >"$W/out.$2" 2>/dev/null ;;
  esac
  t1=$(date +%s.%N)
  echo "$t1 - $t0" | bc >"$W/t.$2"
}
pair() {
  job "$1" a & local pa=$!; job "$1" b & local pb=$!; wait "$pa" "$pb"
  echo "$1 $(echo "$(cat "$W/t.a") + $(cat "$W/t.b")" | bc) $(md5sum <"$W/out.a" | cut -c1-8) $(md5sum <"$W/out.b" | cut -c1-8)"
}
pair replay >/dev/null; pair replay >/dev/null   # the memory learns XGBoost, and the records are written
for _ in $(seq "${1:-10}"); do pair static; pair py; pair replay; done
