#!/bin/bash
# docs/DEPLOY.md's install steps, exactly as written and in order, with the
# amd64 package on this machine (ctest: deb.deploy).
#
#   tests/deb/deploy_test.sh SOURCE_DIR BUILD_DIR
#
# Runs each fenced block that follows a "<!-- deploy-test: NAME -->" line,
# in a folder holding only the package, and checks what each must leave:
# install (the gateway not started, its config refused for want of an id),
# configure (the gateway running under the id the steps set), reidentify
# (the same store under the new id). Where systemd is not PID 1, `systemctl`
# is stood in for: start/restart run the unit's ExecStart= as its User= in
# the background, stop ends it, status tells whether it runs. Needs root
# (CI runs as root); refuses to touch an edgesync already installed here.
set -euo pipefail

src=$(cd "${1:?usage: deploy_test.sh SOURCE_DIR BUILD_DIR}" && pwd)
build=$(cd "${2:?build dir}" && pwd)
out=$(mktemp -d "${TMPDIR:-/tmp}/edgesync-deploy-test.XXXXXX")
chmod 755 "$out"
version=$(grep -m1 -o 'edgesync VERSION [0-9.]*' "$src/CMakeLists.txt" | cut -d' ' -f3)
arch=$(dpkg --print-architecture)
installed_by_us=0

cleanup() {
  # The gateway the steps started goes first: purging deletes its user,
  # which deluser refuses while a process runs as it.
  if [ -f "$out/gateway.pid" ]; then
    local pid
    pid=$(cat "$out/gateway.pid")
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 1 150); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
  fi
  if [ "$installed_by_us" = 1 ]; then
    echo "deploy_test: purging the test installation"
    dpkg --purge edgesync >/dev/null 2>&1 || true
  fi
  rm -rf "$out"
}
trap cleanup EXIT
fail() {
  echo "deploy_test: FAILED: $*" >&2
  exit 1
}
check() {
  local what=$1
  shift
  if "$@"; then echo "ok: $what"; else fail "$what"; fi
}
fails() { ! "$@"; }

[ "$(id -u)" = 0 ] || fail "installs the package: run as root (CI does)"
if dpkg-query -W -f='${Status}' edgesync 2>/dev/null | grep -q "installed\|config-files"; then
  fail "an edgesync package is already installed here; this test installs and purges its own"
fi

make -C "$src" --no-print-directory deb ARCH="$arch" BUILD="$build" DEB_DIR="$out/pkg" DEB_VERSION="$version" \
  JOBS="${JOBS:-2}" >&2
mkdir "$out/board"
cp "$out/pkg/edgesync_${version}_${arch}.deb" "$out/board/"

# block NAME: the fenced block after the marker line, as the page has it.
block() {
  awk -v m="<!-- deploy-test: $1 -->" '
    $0 == m { found = 1; next }
    found && /^```/ { if (inside) exit; inside = 1; next }
    inside { print }' "$src/docs/DEPLOY.md"
}

# What every block runs in: the steps' own shell with stand-ins only for
# what this machine lacks.
cat > "$out/prelude.sh" <<PRELUDE
set -euo pipefail
out=$out
PRELUDE
cat >> "$out/prelude.sh" <<'PRELUDE'
if ! command -v sudo >/dev/null; then sudo() { "$@"; }; fi
if [ ! -d /run/systemd/system ]; then
  unit_exec() { sed -n 's/^ExecStart=//p' /lib/systemd/system/edgesync.service; }
  unit_user() { sed -n 's/^User=//p' /lib/systemd/system/edgesync.service; }
  gateway_running() { [ -f "$out/gateway.pid" ] && kill -0 "$(cat "$out/gateway.pid")" 2>/dev/null; }
  systemctl() {
    local verb=$1 unit=$2
    [ "$unit" = edgesync ] || { echo "systemctl stand-in: only edgesync" >&2; return 1; }
    case "$verb" in
      stop)
        if gateway_running; then kill "$(cat "$out/gateway.pid")"; while gateway_running; do sleep 0.2; done; fi
        rm -f "$out/gateway.pid" ;;
      start | restart)
        systemctl stop edgesync
        install -d -o "$(unit_user)" -m 0700 /run/edgesync
        (cd /var/lib/edgesync && exec runuser -u "$(unit_user)" -- $(unit_exec)) >>"$out/journal" 2>&1 &
        echo $! > "$out/gateway.pid"
        # Type=notify: systemctl returns once it is up (its status file says
        # running) or fails when it exits first.
        for _ in $(seq 1 300); do
          gateway_running || { echo "edgesync.service failed; see $out/journal" >&2; return 1; }
          edgesync status --json --config /etc/edgesync/edgesync.toml 2>/dev/null | grep -q '"running": *true' &&
            return 0
          sleep 0.2
        done
        return 1 ;;
      status)
        if gateway_running; then echo "edgesync.service: active (running)"; else echo "edgesync.service: inactive"; return 3; fi ;;
      *) echo "systemctl stand-in: no $verb" >&2; return 1 ;;
    esac
  }
fi
PRELUDE

run_block() {
  local name=$1 steps
  steps=$(block "$name")
  [ -n "$steps" ] || fail "docs/DEPLOY.md has no deploy-test block '$name'"
  echo "--- docs/DEPLOY.md, $name:"
  echo "$steps"
  echo "---"
  (cd "$out/board" && bash -c "source '$out/prelude.sh'; $steps") || fail "the '$name' steps"
}
gateway_pid() {
  if [ -f "$out/gateway.pid" ]; then
    kill -0 "$(cat "$out/gateway.pid")" 2>/dev/null && cat "$out/gateway.pid"
  else
    pgrep -x -u edgesync edgesync || true
  fi
}
origin() { runuser -u edgesync -- edgesync status --json --config /etc/edgesync/edgesync.toml | \
  sed -n 's/.*"origin": *"\([^"]*\)".*/\1/p' | head -1; }

installed_by_us=1
run_block install
check "installed" test "$(dpkg-query -W -f='${Status}' edgesync)" = "install ok installed"
check "the gateway is not running" test -z "$(gateway_pid)"
check "no store was made" test ! -e /var/lib/edgesync/store.db
why=$(runuser -u edgesync -- edgesync gateway -c /etc/edgesync/edgesync.toml 2>&1; echo "exit $?")
echo "the unit's ExecStart now: $why"
check "the gateway refuses to start without an id, saying why" grep -q "gateway.id: missing" <<<"$why"
check "with EX_CONFIG, which the unit does not restart on" grep -q "exit 78" <<<"$why"
check "the unit does not restart on 78" grep -q '^RestartPreventExitStatus=78$' /lib/systemd/system/edgesync.service

run_block configure
check "the gateway runs" test -n "$(gateway_pid)"
check "its store is bound to the id the steps set" grep -q '^greenhouse-3/' <<<"$(origin)"
first_origin=$(origin)

run_block reidentify
check "the gateway runs again" test -n "$(gateway_pid)"
check "under the new id" grep -q '^greenhouse-4/' <<<"$(origin)"
# Nothing was ingested (no sensor here): the store had no origin known
# upstream to leave behind, so it keeps its epoch (store_identity_test.cc
# covers a store with readings).
check "the same store, its epoch kept" test "${first_origin#*/}" = "$(origin | cut -d/ -f2)"
check "the same store file" test -f /var/lib/edgesync/store.db
# Stopped as an administrator would (prerm stops it only under systemd).
bash -c "source '$out/prelude.sh'; systemctl stop edgesync" || fail "stopping the gateway"
check "the package purges cleanly" dpkg --purge edgesync
installed_by_us=0
check "its user is gone" fails getent passwd edgesync
echo "deploy_test: passed"
