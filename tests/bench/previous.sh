#!/bin/sh
# make bench-previous [PREVIOUS=<commit>]: builds the edgesync program of an
# earlier commit (default: HEAD~1) from `git archive` into
# <build>/previous/, then runs the storage, ingest, region and uplink benchmarks
# with it as the baseline of their "against the previous binary" rows (the
# same runs with both programs, one after the other, in one run).
#   tests/bench/previous.sh BUILD_DIR COMMIT GENERATOR [CCACHE_FLAG]
set -eu
build=$1
ref=$2
generator=$3
ccache=${4:-}
src="$build/previous/src"
out="$build/previous/build"
commit=$(git rev-parse --verify "$ref^{commit}")
if [ "$(cat "$build/previous/commit" 2>/dev/null || true)" != "$commit" ]; then
  rm -rf "$build/previous"
  mkdir -p "$src"
  git archive "$commit" | tar -x -C "$src"
  echo "$commit" > "$build/previous/commit"
fi
test -f "$out/CMakeCache.txt" || cmake -S "$src" -B "$out" -G "$generator" -DCMAKE_BUILD_TYPE=RelWithDebInfo $ccache
cmake --build "$out" --target edgesync -j 2
echo "previous binary: $(git log -1 --format='%h %s' "$commit")"
EDGESYNC_BENCH_PREVIOUS="$(cd "$out" && pwd)/edgesync" ./tests/bench/run.sh "$build" "${PARTS:-storage ingest region uplink}"
