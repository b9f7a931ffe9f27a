#!/bin/bash
# What the PostgreSQL module and the program export (store/pg_module.h):
# the module exactly its one entry point, whose name carries the ABI of
# store/pg_module.h, and takes nothing of the project from the program; the
# program exports nothing of namespace edgesync (ctest: PgModuleExports).
#
#   tests/module/pg_module_exports_test.sh SOURCE_DIR BUILD_DIR
set -euo pipefail

src=$(cd "${1:?usage: pg_module_exports_test.sh SOURCE_DIR BUILD_DIR}" && pwd)
build=$(cd "${2:?build dir}" && pwd)
module="$build/edgesync-postgresql.so"
program="$build/edgesync"
failures=0

check() {
  local what=$1
  shift
  if "$@"; then
    echo "ok: $what"
  else
    echo "FAILED: $what"
    failures=$((failures + 1))
  fi
}

abi=$(sed -n 's/^constexpr uint32_t kPgModuleAbi = \([0-9]*\);$/\1/p' "$src/store/pg_module.h")
symbol=$(sed -n 's/^constexpr const char kPgModuleSymbol\[\] = "\(.*\)";$/\1/p' "$src/store/pg_module.h")
check "store/pg_module.h names the ABI ($abi) and the entry point ($symbol)" test -n "$abi" -a -n "$symbol"
check "the entry point's name carries the ABI" test "$symbol" = "edgesync_pg_module_v$abi"
check "the header declares that entry point" grep -q "^extern \"C\" const edgesync::PgModuleApi\\* $symbol(" \
  "$src/store/pg_module.h"

module_defined=$(nm -D --defined-only "$module" | awk '{ print $NF }')
echo "the module's defined dynamic symbols: $module_defined"
check "the module exports exactly $symbol" test "$module_defined" = "$symbol"
module_undefined=$(nm -D --undefined-only "$module" | awk '{ print $NF }')
project_undefined=$(grep -E '8edgesync|^edgesync' <<<"$module_undefined" || true)
check "the module takes nothing of the project from the program${project_undefined:+: $project_undefined}" \
  test -z "$project_undefined"

program_defined=$(nm -D --defined-only "$program" | awk '{ print $NF }')
check "the program exports dynamic symbols to look at" test -n "$program_defined"
project_exported=$(grep -E '8edgesync|^edgesync' <<<"$program_defined" || true)
check "the program exports nothing of namespace edgesync${project_exported:+: $(head -c 400 <<<"$project_exported")}" \
  test -z "$project_exported"

# Sizes, for docs/LIMITS.md.
size "$program" "$module"
[ "$failures" = 0 ] || { echo "$failures checks failed"; exit 1; }
