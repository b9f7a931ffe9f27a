#!/bin/sh
# make bench [BENCH=part]: runs build/tests/bench/bench_<part> (every part
# when none is named; several as "part part") with EDGESYNC_BENCH_DIR=<build>/bench, then
# bench_report merges the parts' rows into <build>/bench/results.json.
#   tests/bench/run.sh BUILD_DIR [PART ...]
set -eu
build=${1:-build}
part=${2:-}
out="$build/bench"
mkdir -p "$out"
export EDGESYNC_BENCH_DIR="$out"
status=0
if [ -n "$part" ]; then
  programs=""
  for one in $part; do programs="$programs $build/tests/bench/bench_$one"; done
else
  programs=$(ls "$build"/tests/bench/bench_* 2>/dev/null | grep -v '/bench_report$' || true)
fi
for p in $programs; do
  if [ ! -x "$p" ]; then
    echo "no benchmark $p (configure with -DEDGESYNC_BENCH=ON)" >&2
    exit 2
  fi
  echo "== $(basename "$p")"
  "$p" || status=1
done
"$build/tests/bench/bench_report" "$out" || status=1
exit $status
