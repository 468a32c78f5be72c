#!/bin/bash
# datatable_placement_pair.sh — two data.table jobs at once (tests/corpus/scripts/datatable_group.R) under OMP_DYNAMIC or scaf run on a daemon of either placement: their summed wall seconds and output digests.
# Usage: datatable_placement_pair.sh MODE; MODE dyn (OMP_DYNAMIC=true), pin (scaf run on a daemon with
# --placement cpuset) or any other word (scaf run on a daemon with the default placement).
# Set up by hand before the rounds (docs/results.md, "data.table"): folders /tmp/dtc/wa and /tmp/dtc/wb, a warm
# scafd on /tmp/dtc/s.sock (default placement) and one on /tmp/dtc/k.sock (--placement cpuset); then e.g.
#   for r in $(seq 10); do for m in dyn new pin; do tools/experiments/datatable_placement_pair.sh $m; done; done
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
S=$ROOT/tests/corpus/scripts/datatable_group.R
run() {
  cd /tmp/dtc/w$2
  local t0=$(date +%s.%N)
  if [ "$1" = dyn ]; then env OMP_DYNAMIC=true Rscript $S > /tmp/dtc/out.$2 2>/dev/null
  elif [ "$1" = pin ]; then env XDG_CACHE_HOME=/tmp/cacheA "$ROOT"/build/bin/scaf run --no-start --socket /tmp/dtc/k.sock -- Rscript $S > /tmp/dtc/out.$2 2>/dev/null
  else env XDG_CACHE_HOME=/tmp/cacheA "$ROOT"/build/bin/scaf run --no-start --socket /tmp/dtc/s.sock -- Rscript $S > /tmp/dtc/out.$2 2>/dev/null; fi
  local t1=$(date +%s.%N); echo "$t1 - $t0" | bc > /tmp/dtc/t.$2
}
run $1 a & run $1 b & wait
echo "$1 $(echo "$(cat /tmp/dtc/t.a) + $(cat /tmp/dtc/t.b)" | bc) $(grep -v '^threads' /tmp/dtc/out.a | md5sum | cut -c1-8) $(grep -v '^threads' /tmp/dtc/out.b | md5sum | cut -c1-8)"
