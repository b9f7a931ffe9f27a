#!/bin/sh
# make fuzz: builds every tests/fuzz/*_fuzz.cc with clang's libFuzzer,
# AddressSanitizer and UBSan in its own build dir, then runs each target for
# SECONDS on a copy of its seed corpus. Exits non-zero on the first finding
# (the crashing input is left in BUILD/artifacts/).
#   tests/fuzz/run.sh BUILD_DIR [SECONDS]
set -eu
build=${1:-build/fuzz}
seconds=${2:-30}
src=$(cd "$(dirname "$0")/../.." && pwd)
cmake -S "$src" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DEDGESYNC_FUZZ=ON -DEDGESYNC_BENCH=OFF \
  -DCMAKE_CXX_FLAGS="-fsanitize=address,undefined -fsanitize=fuzzer-no-link -fno-sanitize-recover=undefined" \
  -DCMAKE_C_FLAGS="-fsanitize=address,undefined -fsanitize=fuzzer-no-link" >/dev/null
targets=$(cd "$src/tests/fuzz" && ls *_fuzz.cc | sed 's/\.cc$//')
cmake --build "$build" --target $targets -j 2
mkdir -p "$build/artifacts"
for t in $targets; do
  corpus="$build/corpus/$t"
  mkdir -p "$corpus"
  cp -n "$src/tests/fuzz/corpus/$t/"* "$corpus/" 2>/dev/null || true
  echo "== $t: ${seconds}s"
  if ! "$build/tests/$t" -max_total_time="$seconds" -max_len=65536 -artifact_prefix="$build/artifacts/$t-" \
    -print_final_stats=1 "$corpus" >"$build/$t.log" 2>&1; then
    tail -n 40 "$build/$t.log"
    echo "== $t: FAILED (see $build/$t.log and $build/artifacts/)"
    exit 1
  fi
  grep -E "stat::number_of_executed_units|stat::peak_rss_mb" "$build/$t.log" || true
done
echo "== all fuzz targets ran ${seconds}s without a finding"
