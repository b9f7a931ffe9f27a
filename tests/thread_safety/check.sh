#!/bin/bash
# The lock rules, checked: Clang's thread-safety analysis (-Wthread-safety,
# platform/thread_annotations.h) over the sources whose classes declare them,
# with the include paths and defines of the real build (its
# compile_commands.json), syntax only: no objects, no second build. Any
# violation fails. `make thread-safety`; the first step of `make test`.
#
#   tests/thread_safety/check.sh BUILD_DIR [SOURCE...]
#
# SOURCE... defaults to every source of the annotated folders, in the build
# or not. A source the build does not compile takes the flags of one of its
# folder's that it does (store/pg/ in a build configured without
# PostgreSQL: a store/ source's, and libpq's include path from pkg-config;
# named as unchecked, a failure, without libpq-dev), or else of
# platform/clock.cc (tests/thread_safety/unguarded_probe.cc). Needs clang++
# and jq (deps.sh group analysis) and the build's generated headers (the
# thread_safety target of CMakeLists.txt generates them first).
set -euo pipefail

build=$(cd "$1" && pwd)
shift
src=$(cd "$(dirname "$0")/../.." && pwd)
db=$build/compile_commands.json
[ -f "$db" ] || { echo "thread-safety: no $db (configure the build first)" >&2; exit 2; }
CLANGXX=${CLANGXX:-clang++}
command -v "$CLANGXX" >/dev/null || { echo "thread-safety: $CLANGXX not found (firmware-config/deps.sh analysis)" >&2; exit 2; }

# A list of its own: the thread_safety.* tests run this side by side.
sources=$(mktemp)
trap 'rm -f "$sources"' EXIT
folders=(store agent sync platform)
if [ $# -eq 0 ]; then
  for f in "${folders[@]}"; do
    jq -r --arg p "$src/$f/" '.[].file | select(startswith($p))' "$db"
    find "$src/$f" -name '*.cc'
  done | sort -u > "$sources"
else
  for s in "$@"; do case "$s" in /*) echo "$s" ;; *) echo "$src/$s" ;; esac; done > "$sources"
fi

# check_one FILE: the build's command for FILE (or platform/clock.cc's),
# run by clang++ with only the thread-safety warnings, as errors. GCC's own
# warnings (-Wall -Wextra) are the real build's business; clang's view of
# them would only add noise here. -Wthread-safety-beta adds the lock order
# (ACQUIRED_BEFORE).
check_one() {
  local file=$1 entry cmd dir args out=() skip=0 a extra=()
  entry=$(jq -c --arg f "$file" 'first(.[] | select(.file == $f))' "$db")
  if [ -z "$entry" ]; then
    local rel=${file#"$src"/} folder
    folder=${rel%%/*}
    if [ "$rel" != "$file" ] && [[ " $folders_list " == *" $folder "* ]]; then
      entry=$(jq -c --arg p "$src/$folder/" 'first(.[] | select(.file | startswith($p)))' "$db")
    fi
    [ -n "$entry" ] || entry=$(jq -c --arg f "$src/platform/clock.cc" 'first(.[] | select(.file == $f))' "$db")
    case "$file" in
      "$src"/store/pg/*)
        if ! a=$(pkg-config --cflags libpq 2>/dev/null); then
          echo "thread-safety: $file: libpq headers not found (libpq-dev), so its lock rules cannot be checked" >&2
          return 1
        fi
        # And the defines the module's own targets give it (CMakeLists.txt).
        read -r -a extra <<<"$a -DEDGESYNC_HAVE_POSTGRESQL=1"
        extra+=('-DEDGESYNC_VERSION="thread-safety"') ;;
    esac
  fi
  cmd=$(jq -r .command <<<"$entry")
  dir=$(jq -r .directory <<<"$entry")
  eval "args=($cmd)"
  for a in "${args[@]:1}"; do
    if [ $skip = 1 ]; then skip=0; continue; fi
    case "$a" in
      -o) skip=1 ;;
      -c | -W*) ;;
      *.cc) ;;
      *) out+=("$a") ;;
    esac
  done
  cd "$dir" && "$CLANGXX" "${out[@]}" "${extra[@]}" -fsyntax-only -Wthread-safety -Wthread-safety-beta \
    -Werror=thread-safety -Werror=thread-safety-beta "$file"
}
export -f check_one
export db src CLANGXX
export folders_list="${folders[*]}"

n=$(wc -l < "$sources")
start=$(date +%s)
rc=0
xargs -a "$sources" -P "${JOBS:-$(nproc)}" -n 1 bash -c 'check_one "$1"' _ || rc=$?
took=$(( $(date +%s) - start ))
if [ $rc != 0 ]; then
  echo "thread-safety: FAILED ($n sources, ${took} s): a lock rule is broken (see above)" >&2
  exit 1
fi
echo "thread-safety: ok ($n sources, ${took} s)"
