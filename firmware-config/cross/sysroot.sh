#!/bin/bash
# Builds a sysroot of Debian's target-architecture libraries for the cross
# builds, without installing anything of that architecture on the build machine:
# the packages of packages.txt and their dependencies are fetched with
# `apt-get download` and unpacked with `dpkg-deb -x`. This avoids multiarch
# co-installation (which upgrades host libraries and, for armhf, may be blocked
# by a broken index) and works the same for arm64 and armhf.
#
#   firmware-config/cross/sysroot.sh ARCH DIR      ARCH: arm64 | armhf
#
# Idempotent: DIR/.edgesync-sysroot records the architecture and the package
# list; when they have not changed, nothing is done. Needs root only once per
# machine, to register the architecture with dpkg and fetch its package index.
set -euo pipefail

arch=${1:?usage: sysroot.sh ARCH DIR}
dir=${2:?usage: sysroot.sh ARCH DIR}
case "$arch" in
  arm64) triplet=aarch64-linux-gnu; qemu_arch=aarch64 ;;
  armhf) triplet=arm-linux-gnueabihf; qemu_arch=arm ;;
  *) echo "sysroot: unknown architecture '$arch' (arm64 or armhf)" >&2; exit 2 ;;
esac
here=$(cd "$(dirname "$0")" && pwd)
list="$here/packages.txt"
stamp="$dir/.edgesync-sysroot"

# Headers and link-time files of the C and C++ runtime (glibc, libstdc++,
# libgcc) come with the cross compiler (/usr/$triplet/{include,lib}); only their
# run-time packages (libc6, libstdc++6, libgcc-s1) go into the sysroot, so that
# qemu-user runs target programs with Debian's target libraries exactly as a
# board does (`qemu-aarch64 -L DIR prog`).
EXCLUDED='^(libc6-dev|libc-dev-bin|libc-bin|libstdc\+\+-[0-9]+-dev|libgcc-[0-9]+-dev|linux-libc-dev|libcrypt-dev|libnsl-dev|libtirpc-dev|rpcsvc-proto)$'

wanted=$(sed -e 's/#.*//' "$list" | tr -s ' \t\n' ' ' | sed -e 's/^ //' -e 's/ $//')
# The stamp also covers this script and the list, so changing either rebuilds.
want_stamp="arch=$arch recipe=$(cat "$0" "$list" | md5sum | cut -c1-12) packages=$wanted"
# qemu-user's default interpreter prefix is /etc/qemu-binfmt/<qemu arch> (the
# -L option overrides it): pointing it at this sysroot makes a plain
# `qemu-aarch64 build/arm64/edgesync` work. An existing prefix that is not an
# edgesync sysroot is left alone.
link_qemu_prefix() {
  local link="/etc/qemu-binfmt/$qemu_arch" abs
  abs=$(cd "$dir" && pwd -P)
  [ "$(readlink "$link" 2>/dev/null || true)" = "$abs" ] && return 0
  if [ -e "$link" ] && ! [ -L "$link" -a -f "$link/.edgesync-sysroot" ]; then
    echo "sysroot: $link exists and is not an edgesync sysroot; run target programs with qemu-$qemu_arch -L $abs"
    return 0
  fi
  if [ "$(id -u)" != 0 ]; then
    echo "sysroot: not root, so $link is not set; run target programs with qemu-$qemu_arch -L $abs"
    return 0
  fi
  echo "sysroot: ln -sfn $abs $link (default qemu-$qemu_arch prefix)"
  mkdir -p /etc/qemu-binfmt
  ln -sfn "$abs" "$link"
}

if [ -f "$stamp" ] && [ "$(head -n 1 "$stamp")" = "$want_stamp" ]; then
  echo "sysroot: $dir is up to date ($arch)"
  link_qemu_prefix
  exit 0
fi
echo "sysroot: building $dir for $arch from Debian packages: $wanted"

as_root() {
  if [ "$(id -u)" = 0 ]; then
    "$@"
  else
    echo "sysroot: needs root for: $*" >&2
    echo "  run: sudo $* (or sudo make deps), then try again" >&2
    exit 1
  fi
}

if [ "$(dpkg --print-architecture)" != "$arch" ] &&
   ! dpkg --print-foreign-architectures | grep -qx "$arch"; then
  echo "sysroot: dpkg --add-architecture $arch"
  as_root dpkg --add-architecture "$arch"
fi

# Names as apt knows them: architecture-specific packages get ":$arch",
# architecture-independent ones (header-only libraries) stay plain.
# (Each apt-cache call re-reads every index when apt's cache file is disabled,
# as in Debian's container images: ask about all packages at once.)
qualify() {
  local p found indep out="" missing=""
  # `apt-cache show pkg:arch` prints nothing for Architecture: all packages.
  found=$(apt-cache show --no-all-versions $(for p in $wanted; do echo "$p:$arch"; done) 2>/dev/null |
    sed -n 's/^Package: //p' || true)
  indep=$(apt-cache show --no-all-versions $wanted 2>/dev/null |
    awk '/^Package: /{p=$2} /^Architecture: all$/{print p}' || true)
  for p in $wanted; do
    if echo "$found" | grep -qx -- "$p"; then
      out="$out $p:$arch"
    elif echo "$indep" | grep -qx -- "$p"; then
      out="$out $p"
    else
      missing="$missing $p"
    fi
  done
  if [ -n "$missing" ]; then
    echo "sysroot: no $arch package in the apt index for:$missing" >&2
    return 1
  fi
  echo "$out"
}

# A package index without $arch (architecture just added, or stale) is refreshed.
# Some mirrors serve an armhf index whose size does not match its Release file
# ("File has unexpected size ... Mirror sync in progress?"); apt then ignores
# that one index (e.g. bookworm-security) and keeps the others, which is enough
# here as long as every wanted package is found afterwards.
if ! names=$(qualify 2>/dev/null); then
  for attempt in 1 2 3; do
    echo "sysroot: apt-get update (attempt $attempt) to get the $arch package index"
    if [ "$(id -u)" = 0 ]; then
      apt-get update -qq || echo "sysroot: apt-get update reported errors (see above); checking the index anyway"
    else
      as_root apt-get update
    fi
    if names=$(qualify); then break; fi
    sleep $((attempt * 5))
  done
  if ! names=$(qualify); then
    echo "sysroot: the apt index lacks packages for $arch; check /etc/apt/sources.list and run apt-get update" >&2
    exit 1
  fi
fi

# Dependency closure, restricted to target-architecture and arch-independent
# packages (":$arch" names, plus the plain names asked for above).
closure=$(apt-cache depends --recurse --no-recommends --no-suggests --no-conflicts \
    --no-breaks --no-replaces --no-enhances $names |
  grep -v '^ ' | grep -v '^<' | grep ":$arch\$" | sed "s/:$arch\$//" | sort -u |
  grep -Ev "$EXCLUDED" || true)
indep=""
for n in $names; do
  case "$n" in *:*) ;; *) indep="$indep $n" ;; esac
done
downloads=""
for p in $closure; do downloads="$downloads $p:$arch"; done
downloads="$downloads $indep"
echo "sysroot: $(echo $downloads | wc -w) packages:$downloads"

work="$dir.tmp"
rm -rf "$work"
mkdir -p "$work/debs" "$work/root"
ok=0
for attempt in 1 2 3; do
  # -o APT::Sandbox::User=root: the download dir belongs to the caller, not _apt.
  if (cd "$work/debs" && apt-get download -q -o APT::Sandbox::User=root $downloads); then
    ok=1; break
  fi
  echo "sysroot: apt-get download failed (attempt $attempt), retrying" >&2
  sleep $((attempt * 5))
done
if [ "$ok" != 1 ]; then
  echo "sysroot: could not download the $arch packages (network or mirror problem)" >&2
  exit 1
fi
# The packages' shlibs and symbols files go to DEBIAN/ at the sysroot's top:
# `dpkg-shlibdeps -S DIR` then treats the sysroot like a package being built
# and computes a .deb's dependencies from the very libraries the program was
# linked against (firmware-config/deb/build-deb.sh).
mkdir -p "$work/root/DEBIAN"
for deb in "$work"/debs/*.deb; do
  dpkg-deb -x "$deb" "$work/root"
  rm -rf "$work/ctrl"
  dpkg-deb -e "$deb" "$work/ctrl"
  for f in shlibs symbols; do
    if [ -f "$work/ctrl/$f" ]; then cat "$work/ctrl/$f" >> "$work/root/DEBIAN/$f"; fi
  done
done
rm -rf "$work/ctrl"

# Debian's -dev packages may link lib*.so to absolute paths (/lib/...): point
# them into the sysroot, relative, so the linker does not pick the host's files.
find "$work/root" -type l | while read -r link; do
  target=$(readlink "$link")
  case "$target" in
    /*)
      rel=$(realpath -m --relative-to="$(dirname "$link")" "$work/root$target")
      ln -sfn "$rel" "$link"
      ;;
  esac
done
# Merged /usr, as on an installed Debian 12 system: the linker and the loader
# look in one place.
for d in lib lib64; do
  if [ -d "$work/root/$d" ] && [ ! -L "$work/root/$d" ]; then
    mkdir -p "$work/root/usr/$d"
    cp -a "$work/root/$d/." "$work/root/usr/$d/"
    rm -rf "${work:?}/root/$d"
  fi
  [ -e "$work/root/$d" ] || ln -s "usr/$d" "$work/root/$d"
done
test -d "$work/root/usr/lib/$triplet" || { echo "sysroot: no usr/lib/$triplet after unpacking" >&2; exit 1; }

{
  echo "$want_stamp"
  for deb in "$work"/debs/*.deb; do
    dpkg-deb -f "$deb" Package Version Architecture | tr '\n' ' '
    echo
  done
} > "$work/root/.edgesync-sysroot"
rm -rf "$dir"
mkdir -p "$(dirname "$dir")"
mv "$work/root" "$dir"
rm -rf "$work"
echo "sysroot: $dir ready ($(du -sh "$dir" | cut -f1))"
link_qemu_prefix
