#!/bin/bash
# pair.sh MODE: run two data.table scripts at once, print summed wall seconds and output digests
S=/work/main/tests/corpus/scripts/datatable_group.R
run() {
  cd /tmp/dtc/w$2
  local t0=$(date +%s.%N)
  if [ "$1" = dyn ]; then env OMP_DYNAMIC=true Rscript $S > /tmp/dtc/out.$2 2>/dev/null
  elif [ "$1" = pin ]; then env XDG_CACHE_HOME=/tmp/cacheA /work/main/build/bin/scaf run --no-start --socket /tmp/dtc/k.sock -- Rscript $S > /tmp/dtc/out.$2 2>/dev/null
  else env XDG_CACHE_HOME=/tmp/cacheA /work/main/build/bin/scaf run --no-start --socket /tmp/dtc/s.sock -- Rscript $S > /tmp/dtc/out.$2 2>/dev/null; fi
  local t1=$(date +%s.%N); echo "$t1 - $t0" | bc > /tmp/dtc/t.$2
}
run $1 a & run $1 b & wait
echo "$1 $(echo "$(cat /tmp/dtc/t.a) + $(cat /tmp/dtc/t.b)" | bc) $(grep -v '^threads' /tmp/dtc/out.a | md5sum | cut -c1-8) $(grep -v '^threads' /tmp/dtc/out.b | md5sum | cut -c1-8)"
