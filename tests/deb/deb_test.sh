#!/bin/bash
# The Debian packages, as `make deb` builds them (ctest: deb.<arch>).
#
#   tests/deb/deb_test.sh ARCH SOURCE_DIR BUILD_DIR
#
# arm64, armhf: the package of the cross build (reusing build/<arch> and the
# sysroot when `make cross` made them) has the right Architecture, a binary
# and a PostgreSQL module for that machine (file, readelf) and dependencies
# computed from the sysroot: target packages, with versions, covering every
# library the binary and the module need.
# amd64: installed for real with dpkg on this machine, checked (user, modes,
# conffiles, units accepted by systemd-analyze verify, lintian, the program
# free of libpq and the PostgreSQL module loaded from where the package put
# it), upgraded to a higher version with an edited conffile and state kept,
# then purged without leftovers. Needs root (CI runs as root); refuses to touch an edgesync
# already installed here. Cleans up after itself, also when a check fails.
set -euo pipefail

arch=${1:?usage: deb_test.sh ARCH SOURCE_DIR BUILD_DIR}
src=$(cd "${2:?source dir}" && pwd)
build=$(cd "${3:?build dir}" && pwd)
out=$(mktemp -d "${TMPDIR:-/tmp}/edgesync-deb-test.XXXXXX")
version=$(grep -m1 -o 'edgesync VERSION [0-9.]*' "$src/CMakeLists.txt" | cut -d' ' -f3)
installed_by_us=0

cleanup() {
  if [ "$installed_by_us" = 1 ]; then
    echo "deb_test: purging the test installation"
    dpkg --purge edgesync >/dev/null 2>&1 || true
  fi
  rm -rf "$out"
}
trap cleanup EXIT

fail() {
  echo "deb_test: FAILED: $*" >&2
  exit 1
}
check() {  # check DESCRIPTION COMMAND...
  local what=$1
  shift
  if "$@"; then echo "ok: $what"; else fail "$what"; fi
}
fails() { ! "$@"; }
quiet() { "$@" >/dev/null; }

make_deb() {  # make_deb VERSION -> path of the .deb
  make -C "$src" --no-print-directory deb ARCH="$arch" BUILD="$build" DEB_DIR="$out" DEB_VERSION="$1" \
    JOBS="${JOBS:-2}" >&2
  echo "$out/edgesync_$1_$arch.deb"
}

field() { dpkg-deb -f "$1" "$2"; }

# The dependency names of a Depends line, without versions and alternatives.
depends_names() { echo "$1" | tr ',' '\n' | sed -e 's/([^)]*)//g' -e 's/|.*//' -e 's/ //g' | grep -v '^$' | sort -u; }

check_cross() {
  local deb machine_file machine_elf
  case "$arch" in
    arm64) machine_file="ARM aarch64"; machine_elf="AArch64" ;;
    armhf) machine_file="ARM, EABI5"; machine_elf="ARM" ;;
  esac
  deb=$(make_deb "$version")
  check "$deb exists" test -f "$deb"
  check "Architecture: $arch" test "$(field "$deb" Architecture)" = "$arch"
  check "Version: $version" test "$(field "$deb" Version)" = "$version"
  dpkg-deb -x "$deb" "$out/root"
  local bin="$out/root/usr/bin/edgesync" desc elf_machine
  desc=$(file -b "$bin")
  echo "file: $desc"
  check "binary is $machine_file" grep -q "$machine_file" <<<"$desc"
  if [ "$arch" = armhf ]; then
    check "binary uses the hard-float loader" grep -q "ld-linux-armhf.so.3" <<<"$desc"
  fi
  check "binary is stripped" grep -q ", stripped" <<<"$desc"
  elf_machine=$(readelf -h "$bin" | sed -n 's/^ *Machine: *//p')
  check "ELF machine $machine_elf (readelf: $elf_machine)" test "$elf_machine" = "$machine_elf"

  local depends names sysroot_pkgs n needed soname pkg
  depends=$(field "$deb" Depends)
  echo "Depends: $depends"
  names=$(depends_names "$depends")
  # Every dependency is a Debian package of the target architecture unpacked
  # into the sysroot (its stamp lists "Package: P Version: V Architecture: A"
  # per package) or a name its libraries' shlibs files give (a Provides such
  # as libspdlog1.10-fmt9), or adduser.
  sysroot_pkgs=$( (awk -v a="$arch" '$1 == "Package:" && ($6 == a || $6 == "all") { print $2 }' \
    "$build/sysroot/$arch/.edgesync-sysroot"; awk '{ print $3 }' "$build/sysroot/$arch/DEBIAN/shlibs") | sort -u)
  for n in $names; do
    [ "$n" = adduser ] && continue
    check "dependency $n is a $arch package of the sysroot" grep -qx "$n" <<<"$sysroot_pkgs"
  done
  check "no architecture qualifiers in Depends" test -z "$(grep -o ':[a-z0-9]*' <<<"$depends" || true)"
  check "versioned dependencies (symbols files were used)" grep -q "libc6 (>= " <<<"$depends"
  # Every library the binary needs is provided by a dependency: the sysroot
  # package holding the soname's file is listed.
  # The PostgreSQL hub store module (store/pg_module.h): built for the
  # board, where the program looks for it, holding the only need of libpq.
  local multiarch module
  multiarch=$(dpkg-architecture -a"$arch" -qDEB_HOST_MULTIARCH 2>/dev/null)
  module="$out/root/usr/lib/$multiarch/edgesync/edgesync-postgresql.so"
  check "the PostgreSQL module is in /usr/lib/$multiarch/edgesync" test -f "$module"
  check "the module is $machine_file" grep -q "$machine_file" <<<"$(file -b "$module")"
  check "the program does not need libpq" fails grep -q 'libpq' <<<"$(readelf -d "$bin")"
  check "the module needs libpq" grep -q 'libpq' <<<"$(readelf -d "$module")"
  needed=$(readelf -d "$bin" "$module" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | sort -u)
  check "the binary needs shared libraries" test -n "$needed"
  for soname in $needed; do
    # shlibs lines read "<name> <version> <package> ...": libfoo.so.1 is "libfoo 1".
    pkg=$(awk -v b="${soname%%.so.*}" -v v="${soname##*.so.}" '$1 == b && $2 == v { print $3; exit }' \
      "$build/sysroot/$arch/DEBIAN/shlibs")
    check "$soname: its package (${pkg:-none found}) is a dependency" grep -qx "${pkg:-none}" <<<"$names"
  done
  local conffiles
  conffiles=$(dpkg-deb --ctrl-tarfile "$deb" | tar -xO ./conffiles)
  check "conffiles: both configs" test "$conffiles" = "$(printf '/etc/edgesync/edgesync.toml\n/etc/edgesync/region.toml')"
  check "both units shipped" test -f "$out/root/lib/systemd/system/edgesync.service" \
    -a -f "$out/root/lib/systemd/system/edgesync-region.service"
}

mode_of() { stat -c '%a %U:%G' "$1"; }

check_amd64_cycle() {
  [ "$(id -u)" = 0 ] || fail "installs the package with dpkg: run as root (CI does)"
  if dpkg-query -W -f='${Status}' edgesync 2>/dev/null | grep -q "installed\|config-files"; then
    fail "an edgesync package is already installed here; this test installs and purges its own"
  fi
  getent passwd edgesync >/dev/null && fail "a user edgesync exists already (not made by this test)"
  local v1=$version v2="$version+1" deb1 deb2
  deb1=$(make_deb "$v1")
  deb2=$(make_deb "$v2")
  check "$v2 sorts after $v1" dpkg --compare-versions "$v2" gt "$v1"

  # lintian, down to info tags (hardening, spelling): no tag beyond those
  # justified in firmware-config/deb/lintian-justified.
  local tags unexpected
  tags=$(lintian --no-cfg --display-info --tag-display-limit 0 "$deb1" 2>&1 | grep -E '^[EWI]: ' || true)
  echo "lintian: ${tags:-(no tags)}"
  unexpected=$(grep -v -F -f <(sed -e 's/#.*//' -e '/^ *$/d' "$src/firmware-config/deb/lintian-justified") \
    <<<"$tags" || true)
  check "lintian reports only justified tags" test -z "$unexpected"

  installed_by_us=1
  dpkg -i "$deb1"
  check "installed $v1" test "$(dpkg-query -W -f='${Version} ${Status}' edgesync)" = "$v1 install ok installed"
  local uid
  uid=$(getent passwd edgesync | cut -d: -f3)
  check "system user edgesync (uid $uid)" test -n "$uid" -a "${uid:-1000}" -lt 1000
  check "its shell is nologin" test "$(getent passwd edgesync | cut -d: -f7)" = /usr/sbin/nologin
  check "/var/lib/edgesync is 0700 edgesync" test "$(mode_of /var/lib/edgesync)" = "700 edgesync:edgesync"
  for f in edgesync.toml region.toml; do
    check "/etc/edgesync/$f is 0640 root:edgesync" test "$(mode_of /etc/edgesync/$f)" = "640 root:edgesync"
  done
  check "the service's user reads the gateway config" \
    quiet runuser -u edgesync -- edgesync config check /etc/edgesync/edgesync.toml
  # Shipped without a gateway id: nothing starts under a placeholder.
  check "the shipped gateway config lacks only an id for the gateway role" grep -q 'gateway.id: missing' \
    <<<"$(runuser -u edgesync -- edgesync config check /etc/edgesync/edgesync.toml --role gateway 2>&1 || true)"
  check "installing made no store" test ! -e /var/lib/edgesync/store.db
  check "the service's user reads the region config" \
    quiet runuser -u edgesync -- edgesync config check /etc/edgesync/region.toml --role region
  check "other users do not read the configs" fails runuser -u nobody -- cat /etc/edgesync/edgesync.toml
  check "the gateway unit is enabled" test -L /etc/systemd/system/multi-user.target.wants/edgesync.service
  check "the region unit is not enabled" test ! -e /etc/systemd/system/multi-user.target.wants/edgesync-region.service
  check "systemd-analyze verify accepts both units" \
    systemd-analyze verify /lib/systemd/system/edgesync.service /lib/systemd/system/edgesync-region.service
  check "the units run as edgesync" grep -q '^User=edgesync$' /lib/systemd/system/edgesync.service \
    /lib/systemd/system/edgesync-region.service
  check "edgesync --version runs" edgesync --version
  # Hardening (CMakeLists.txt): relocations bound at load, fortified libc calls.
  check "the binary is linked with BIND_NOW" grep -qE 'BIND_NOW|FLAGS_1.*NOW' <<<"$(readelf -d /usr/bin/edgesync)"
  check "the binary calls fortified libc functions" grep -q '__[a-z_]*_chk' <<<"$(readelf --dyn-syms -W /usr/bin/edgesync)"

  # The PostgreSQL hub store is a module (store/pg_module.h): the program
  # maps no libpq; the region role loads the module from the installed
  # folder and gets as far as connecting (nothing listens on port 1).
  local module pg_out
  module="/usr/lib/$(dpkg-architecture -qDEB_HOST_MULTIARCH)/edgesync/edgesync-postgresql.so"
  check "the PostgreSQL module is installed at $module" test -f "$module"
  check "the program does not need libpq" fails grep -q 'libpq' <<<"$(readelf -d /usr/bin/edgesync)"
  check "the module needs libpq" grep -q 'libpq' <<<"$(readelf -d "$module")"
  check "Depends has the module's libpq5" grep -q 'libpq5' <<<"$(field "$deb1" Depends)"
  mkdir -p "$out/pg-hub"
  printf '[gateway]\ndata_dir = "%s/pg-hub/data"\n[hub]\nregion = "eu"\nbroker_uri = "tcp://127.0.0.1:1"\nstore = "postgresql://edgesync@127.0.0.1:1/hub"\n' \
    "$out" > "$out/pg-hub/region.toml"
  pg_out=$(env -u EDGESYNC_PG_MODULE edgesync region -c "$out/pg-hub/region.toml" 2>&1 || true)
  echo "region on PostgreSQL, no server: $pg_out"
  check "the region role loads the installed module" \
    fails grep -qE 'no PostgreSQL hub store module|does not load|unusable' <<<"$pg_out"
  check "and reaches for the database (libpq: connection refused)" grep -q 'Connection refused' <<<"$pg_out"

  # What an administrator and the service leave before an upgrade.
  sed -i 's/^#id = .*/id = "pi-field-7"/' /etc/edgesync/edgesync.toml
  runuser -u edgesync -- sh -c 'echo kept > /var/lib/edgesync/marker'
  dpkg -i "$deb2"
  check "upgraded to $v2" test "$(dpkg-query -W -f='${Version} ${Status}' edgesync)" = "$v2 install ok installed"
  check "the edited conffile is kept" grep -q '^id = "pi-field-7"' /etc/edgesync/edgesync.toml
  check "its mode is kept" test "$(mode_of /etc/edgesync/edgesync.toml)" = "640 root:edgesync"
  check "the state is kept" test "$(cat /var/lib/edgesync/marker)" = kept
  check "the user is the same" test "$(getent passwd edgesync | cut -d: -f3)" = "$uid"

  dpkg --purge edgesync
  installed_by_us=0
  check "the package is gone" test -z "$(dpkg-query -W -f='${Status}' edgesync 2>/dev/null | grep -v not-installed || true)"
  check "the user is gone" fails getent passwd edgesync
  check "the group is gone" fails getent group edgesync
  check "the state is gone" test ! -e /var/lib/edgesync
  check "the configs are gone" test ! -e /etc/edgesync
  check "no statoverride is left" test -z "$(dpkg-statoverride --list | grep /etc/edgesync || true)"
  check "no unit symlink is left" test -z "$(find /etc/systemd/system -name 'edgesync*' 2>/dev/null)"
  check "no deb-systemd-helper state is left" \
    test -z "$(find /var/lib/systemd -name '*edgesync*' 2>/dev/null)"
  check "the binary is gone" test ! -e /usr/bin/edgesync
  check "the module's folder is gone" test ! -e "$(dirname "$module")"
}

case "$arch" in
  arm64 | armhf) check_cross ;;
  amd64) check_amd64_cycle ;;
  *) fail "unknown architecture '$arch'" ;;
esac
echo "deb_test: $arch passed"
