#!/bin/bash
# xgb-stagger.sh — two real XGBoost trainings, the second started STAGGER seconds after the first, as a static split and under two builds' scaf run.
# Usage: xgb-stagger.sh OLD NEW ROUNDS STAGGER: two XGBoost trainings (tests/corpus/scripts/xgboost_hist.py), the second
# started STAGGER seconds after the first, ROUNDS rounds alternating the static split (OMP_NUM_THREADS = CPUs/2
# each) and `scaf run` (the launcher, replayed) of the OLD and NEW checkouts, each on its own private scafd whose
# memory two pairs first warm. Prints per pair: mode, the first's and the second's wall seconds, their sum, and
# whether both printed the same digests as the static split.
set -u
OLD=$1 NEW=$2 ROUNDS=${3:-10} STAGGER=${4:-0.9}
S=$NEW/tests/corpus/scripts/xgboost_hist.py
PY=$NEW/build/venv/bin/python
HALF=$(($(nproc) / 2))
W=$(mktemp -d /tmp/scaf-xgbst-XXXXXX)
mkdir -p "$W/a" "$W/b" "$W/old" "$W/new" "$W/cache"
"$OLD/build/bin/scafd" --socket "$W/old/s.sock" --state-dir "$W/old" 2>"$W/old.log" &
P1=$!
"$NEW/build/bin/scafd" --socket "$W/new/s.sock" --state-dir "$W/new" 2>"$W/new.log" &
P2=$!
trap 'kill $P1 $P2 2>/dev/null; rm -rf "$W"' EXIT
sleep 0.5
job() { # MODE FOLDER
  cd "$W/$2" || exit 1
  local t0
  t0=$(date +%s.%N)
  case $1 in
    static) env OMP_NUM_THREADS="$HALF" "$PY" "$S" >"$W/out.$2" 2>/dev/null ;;
    old|new) local r=$OLD; [ "$1" = new ] && r=$NEW
      env XDG_CACHE_HOME="$W/cache" "$r/build/bin/scaf" run --no-start --socket "$W/$1/s.sock" -- "$PY" "$S" >"$W/out.$2" 2>/dev/null ;;
  esac
  echo "$(date +%s.%N) - $t0" | bc >"$W/t.$2"
}
pair() {
  job "$1" a & local pa=$!
  sleep "$STAGGER"
  job "$1" b & local pb=$!
  wait "$pa" "$pb"
  local same=no
  [ "$(md5sum <"$W/out.a")" = "$(md5sum <"$W/out.b")" ] && same=yes
  echo "$1 $(cat "$W/t.a") $(cat "$W/t.b") $(echo "$(cat "$W/t.a") + $(cat "$W/t.b")" | bc) $same"
}
for m in old new old new; do pair $m >/dev/null; done   # memories warm, records written
for _ in $(seq "$ROUNDS"); do pair static; pair old; pair new; done
