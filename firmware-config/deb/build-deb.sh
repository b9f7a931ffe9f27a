#!/bin/bash
# Builds the edgesync Debian package from a built binary, with dpkg-deb (no
# source package: the binary comes from the native or cross build).
#
#   firmware-config/deb/build-deb.sh ARCH BINARY OUTDIR VERSION [SYSROOT]
#     ARCH     amd64 | arm64 | armhf (the Debian architecture of BINARY)
#     SYSROOT  the cross sysroot (firmware-config/cross/sysroot.sh) for arm64
#              and armhf; the build machine's own libraries for amd64
#
# Writes OUTDIR/edgesync_VERSION_ARCH.deb (`make deb ARCH=...` calls this).
# Dependencies are computed by dpkg-shlibdeps from the libraries the binary
# was linked against: the sysroot's DEBIAN/{shlibs,symbols} (gathered by
# sysroot.sh from Debian's target packages) for a cross build, the installed
# packages' for amd64.
set -euo pipefail

arch=${1:?usage: build-deb.sh ARCH BINARY OUTDIR VERSION [SYSROOT]}
binary=${2:?binary}
outdir=${3:?outdir}
version=${4:?version}
sysroot=${5:-}
# Whoever distributes the package should put their own address here.
maintainer=${DEB_MAINTAINER:-edgesync maintainers <edgesync@example.org>}
here=$(cd "$(dirname "$0")" && pwd)
config_dir=$(dirname "$here")

case "$arch" in
  amd64) strip=strip ;;
  arm64) strip=aarch64-linux-gnu-strip ;;
  armhf) strip=arm-linux-gnueabihf-strip ;;
  *) echo "build-deb: unknown architecture '$arch' (amd64, arm64 or armhf)" >&2; exit 2 ;;
esac
[ -x "$binary" ] || { echo "build-deb: no binary at $binary" >&2; exit 1; }
if [ "$arch" != "$(dpkg --print-architecture)" ]; then
  [ -n "$sysroot" ] && [ -f "$sysroot/DEBIAN/shlibs" ] || {
    echo "build-deb: $arch needs the cross sysroot with DEBIAN/shlibs (firmware-config/cross/sysroot.sh)" >&2
    exit 1
  }
fi

mkdir -p "$outdir"
outdir=$(cd "$outdir" && pwd)
work=$(mktemp -d "$outdir/.edgesync-deb.XXXXXX")
trap 'rm -rf "$work"' EXIT
# dpkg-shlibdeps expects a source tree: debian/control and debian/<package>/.
mkdir -p "$work/debian"
printf 'Source: edgesync\n\nPackage: edgesync\nArchitecture: any\n' > "$work/debian/control"
root="$work/debian/edgesync"
doc="$root/usr/share/doc/edgesync"

install -d -m 0755 "$root/DEBIAN" "$root/usr/bin" "$root/lib/systemd/system" "$root/etc/edgesync" \
  "$doc/examples" "$root/usr/share/man/man1"
# Debug information stays in the build tree (build/<arch>/edgesync).
"$strip" --strip-unneeded --remove-section=.comment --remove-section=.note -o "$root/usr/bin/edgesync" "$binary"
chmod 0755 "$root/usr/bin/edgesync"
# The PostgreSQL hub store module (store/pg_module.h), built next to the
# binary where the build had libpq. The program looks for it in
# /usr/lib/<multiarch>/edgesync/ (EDGESYNC_PG_MODULE_DIR in CMakeLists.txt).
module="$(dirname "$binary")/edgesync-postgresql.so"
shlibdeps_files=("$root/usr/bin/edgesync")
if [ -f "$module" ]; then
  multiarch=$(dpkg-architecture -a"$arch" -qDEB_HOST_MULTIARCH 2>/dev/null)
  moddir="$root/usr/lib/$multiarch/edgesync"
  install -d -m 0755 "$moddir"
  "$strip" --strip-unneeded --remove-section=.comment --remove-section=.note -o "$moddir/edgesync-postgresql.so" \
    "$module"
  chmod 0644 "$moddir/edgesync-postgresql.so"
  shlibdeps_files+=("$moddir/edgesync-postgresql.so")
  echo "build-deb: with the PostgreSQL module (/usr/lib/$multiarch/edgesync/edgesync-postgresql.so)"
else
  echo "build-deb: no PostgreSQL module at $module: region hubs of this package use SQLite only"
fi
install -m 0644 "$config_dir/edgesync.service" "$config_dir/edgesync-region.service" "$root/lib/systemd/system/"
install -m 0644 "$here/edgesync-region-crl.service" "$here/edgesync-region-crl.timer" "$root/lib/systemd/system/"
install -d -m 0755 "$root/usr/share/edgesync/region"
install -m 0755 "$config_dir/region/edgesync-region-auth" "$root/usr/share/edgesync/region/"
install -m 0644 "$config_dir/region/edgesync.acl" "$config_dir/region/mosquitto-region.conf" \
  "$root/usr/share/edgesync/region/"
install -m 0644 "$here/edgesync.toml" "$here/region.toml" "$root/etc/edgesync/"
install -m 0644 "$config_dir/edgesync.example.toml" "$doc/examples/"
install -m 0644 "$here/copyright" "$doc/copyright"
sed -e "s|@MAINTAINER@|$maintainer|" "$here/changelog" | gzip -9n > "$doc/changelog.gz"
gzip -9n -c "$here/edgesync.1" > "$root/usr/share/man/man1/edgesync.1.gz"
# The units' Documentation= points here.
gzip -9n -c "$config_dir/../README.md" > "$doc/README.md.gz"
chmod 0644 "$doc/changelog.gz" "$doc/README.md.gz" "$root/usr/share/man/man1/edgesync.1.gz"

for s in postinst prerm postrm; do install -m 0755 "$here/$s" "$root/DEBIAN/$s"; done
printf '/etc/edgesync/edgesync.toml\n/etc/edgesync/region.toml\n' > "$root/DEBIAN/conffiles"

# Shared-library dependencies of the binary and the module as they will be
# installed (the module's libpq and what it pulls in: a region hub on
# PostgreSQL needs them; a gateway has them on disk but never maps them).
# The module's symbols of the program itself are resolved by the program
# when it loads the module; dpkg-shlibdeps finds them in no library, and
# its warnings for them (bit 0 of --warnings) would be noise.
shlibdeps_args=()
if [ "$arch" != "$(dpkg --print-architecture)" ]; then
  # -S: the sysroot acts as a package being built, whose DEBIAN/ holds the
  # shlibs and symbols files of every library in it.
  shlibdeps_args+=("-S$(cd "$sysroot" && pwd)")
fi
depends=$(cd "$work" && DEB_HOST_ARCH="$arch" dpkg-shlibdeps -O "${shlibdeps_args[@]}" \
  --warnings=2 "${shlibdeps_files[@]/#/-e}" | sed -n 's/^shlibs:Depends=//p')
[ -n "$depends" ] || { echo "build-deb: dpkg-shlibdeps found no dependencies" >&2; exit 1; }

size=$(du -k -s --exclude=DEBIAN "$root" | cut -f1)
sed -e "s/@VERSION@/$version/" -e "s/@ARCH@/$arch/" -e "s/@DEPENDS@/$depends/" -e "s/@SIZE@/$size/" \
  -e "s|@MAINTAINER@|$maintainer|" \
  "$here/control.in" > "$root/DEBIAN/control"
(cd "$root" && find . -path ./DEBIAN -prune -o -type f -printf '%P\0' | sort -z | xargs -0 md5sum) \
  > "$root/DEBIAN/md5sums"
chmod 0644 "$root/DEBIAN/control" "$root/DEBIAN/conffiles" "$root/DEBIAN/md5sums"

deb="$outdir/edgesync_${version}_${arch}.deb"
dpkg-deb --root-owner-group --build "$root" "$deb" >/dev/null
echo "build-deb: $deb"
dpkg-deb -f "$deb" Package Version Architecture Depends
