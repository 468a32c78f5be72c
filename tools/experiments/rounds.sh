#!/bin/bash
# rounds.sh — a HistGradientBoosting fit alone (hgbfit.py), plain and under `scaf run`, N rounds alternating.
# Usage: rounds.sh N [SIZE]
# `scaf run` starts its own per-user daemon (speedup policy) in a private runtime and state directory,
# so the first scaf round is cold and the later ones find what the daemon remembered.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
py=$root/build/venv/bin/python
n=${1:-6}
size=${2:-2.0}
export XDG_RUNTIME_DIR=$(mktemp -d) XDG_STATE_HOME=$(mktemp -d)
trap 'pkill -f "scafd --socket $XDG_RUNTIME_DIR" || true; rm -rf "$XDG_RUNTIME_DIR" "$XDG_STATE_HOME"' EXIT
for r in $(seq "$n"); do
    echo "plain $("$py" "$here/hgbfit.py" "$size")"
    echo "scaf $("$py" -m scaf run --policy speedup -- "$py" "$here/hgbfit.py" "$size" 2>/dev/null)"
done
