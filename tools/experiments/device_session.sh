#!/bin/bash
# device_session.sh — one lent many-core machine's whole session in one command: build, check what is there, then the pairs and the pools, keeping every figure as it comes.
#
# For the workplace's `device` tool, whose command returns at most 8 files from $OUT: each step's table is copied
# to $OUT at once and everything else is packed into $OUT/all.tgz after each step, so a command cut short at its
# limit still brings back what it measured. Wheels in .whl/ (not tracked) are installed first, for the Python
# packages the machine lacks (on 2026-11-27: pyelftools, which `scaf run` needs, xgboost-cpu, dask,
# distributed, partd, locket, tblib, zict, tornado; docs/results.md, "16-CPU device runs"). BUDGET is the seconds the
# pairs and pools may start within (default 420).
# SOLO names programs to time alone first (device_solo.sh, SOLO_ROUNDS rounds; default none).
# CURVES names programs whose solo curves to measure first, at 1, N/4, N/2 and N threads (device_curves.sh,
# CURVE_ROUNDS rounds, default 1; within the first quarter of the budget): with the pairs of the same session they
# are what `calibrate_sim.py --from DIR` judges the simulator by (DIR: this $OUT, its scaling.txt, pairs.txt and
# verdicts.txt). For the pairs measured so far: CURVES="crit ep xgboost xgbhist dtgroup".
# Usage: OUT=DIR tools/experiments/device_session.sh
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${OUT:-/tmp/device-out}
BUDGET=${BUDGET:-420}
export B=${B:-/tmp/scafb} PY=${PY:-python3} PYTHONUNBUFFERED=1
# Each program runs for seconds at 8 threads on a 16-CPU machine (docs/results.md, "16-CPU device runs": scaling alone).
export ARGS_crit=${ARGS_crit:---size W --scale 0.25} ARGS_ep=${ARGS_ep:---size W} ARGS_xgbhist=${ARGS_xgbhist:---size W}
export ARGS_dtgroup=${ARGS_dtgroup:---size W} CAP=${CAP:-20}
PAIRS=${PAIRS:-xgboost+xgboost xgbhist+xgbhist crit+crit dtgroup+dtgroup crit+ep crit+xgbhist}
WORK=/tmp/dev
mkdir -p "$OUT" "$WORK"
T0=$(date +%s)
keep() { cp "$WORK"/pairs/table.txt "$OUT/pairs.txt" 2>/dev/null; cp "$WORK"/pools/pools.txt "$OUT/pools.txt" 2>/dev/null
         cp "$WORK"/solo/solo.txt "$OUT/solo.txt" 2>/dev/null; cp "$WORK"/curves/scaling.txt "$OUT/scaling.txt" 2>/dev/null
         cp "$WORK"/pairs/verdicts.txt "$OUT/verdicts.txt" 2>/dev/null
         tar czf "$OUT/all.tgz" -C /tmp dev 2>/dev/null; }
{
    echo "started $(date -u +%FT%TZ); $(nproc) CPUs; $(uname -r)"
    grep -m1 'model name' /proc/cpuinfo; cat /sys/fs/cgroup/cpu.max 2>/dev/null; grep -c processor /proc/cpuinfo
    gcc --version | head -1; cmake --version | head -1; "$PY" -V
} >"$OUT/machine.txt" 2>&1
if ls "$ROOT"/.whl/*.whl >/dev/null 2>&1; then
    "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site "$ROOT"/.whl/*.whl >>"$OUT/machine.txt" 2>&1
    export PYTHONPATH=/tmp/site
fi
"$PY" -c "import sklearn, joblib, numpy, rich, psutil; print('sklearn', sklearn.__version__, 'joblib', joblib.__version__, 'numpy', numpy.__version__)" >>"$OUT/machine.txt" 2>&1
"$PY" -c "import xgboost; print('xgboost', xgboost.__version__)" >>"$OUT/machine.txt" 2>&1
"$PY" -c "import dask.distributed, dask; print('dask', dask.__version__)" >>"$OUT/machine.txt" 2>&1
mkdir -p "$WORK/pairs"
cmake -S "$ROOT" -B "$B/cmake" -DSCAF_OUT="$B" >"$WORK/build.log" 2>&1 && cmake --build "$B/cmake" -j"$(nproc)" >>"$WORK/build.log" 2>&1 ||
    { echo "build failed" >>"$OUT/machine.txt"; tail -30 "$WORK/build.log" >>"$OUT/machine.txt"; keep; exit 1; }
echo "built after $(($(date +%s) - T0)) s" >>"$OUT/machine.txt"
PYTHONPATH=$ROOT/python${PYTHONPATH:+:$PYTHONPATH} SCAF_BUILD=$B "$PY" -m scaf run --no-start --socket /tmp/none -- true >>"$OUT/machine.txt" 2>&1
rc=$?
echo "scaf run without a daemon: exit $rc" >>"$OUT/machine.txt"
keep
[ $rc -eq 0 ] || exit 1
if [ -n "${SOLO:-}" ]; then
    # shellcheck disable=SC2086
    OUT=$WORK/solo ROUNDS=${SOLO_ROUNDS:-3} "$ROOT/tools/experiments/device_solo.sh" $SOLO >"$WORK/solo.log" 2>&1
    echo "alone done after $(($(date +%s) - T0)) s" >>"$OUT/machine.txt"
    keep
fi
if [ -n "${CURVES:-}" ]; then
    # shellcheck disable=SC2086
    DEADLINE=$((T0 + BUDGET / 4)) OUT=$WORK/curves "$ROOT/tools/experiments/device_curves.sh" $CURVES >"$WORK/curves.log" 2>&1
    echo "curves done after $(($(date +%s) - T0)) s" >>"$OUT/machine.txt"
    keep
fi
# The pairs get the first 60% of the budget, the pools the rest.
export DEADLINE=$((T0 + BUDGET * 6 / 10)) NOBUILD=1
# shellcheck disable=SC2086
OUT=$WORK/pairs "$ROOT/tools/experiments/device_pairs.sh" $PAIRS >"$WORK/pairs.log" 2>&1
keep
export DEADLINE=$((T0 + BUDGET))
D=$WORK/pools "$ROOT/tools/experiments/device_pools.sh" ${POOLS:-} >"$WORK/pools.log" 2>&1
keep
echo "done after $(($(date +%s) - T0)) s" >>"$OUT/machine.txt"
