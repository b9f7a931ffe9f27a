#!/bin/sh
# Installs the Debian packages edgesync needs, by purpose. Idempotent: it asks
# dpkg what is already there and installs only what is missing, printing it.
#
#   firmware-config/deps.sh [--check] GROUP...
#   groups: build test analysis demo region fuzz deb cross-arm64 cross-armhf
#
# --check only reports (exit 1 if something is missing). Not root: prints the
# command to run instead of running it.
set -eu

pkgs_build="cmake make g++ pkg-config file libsqlite3-dev libpaho-mqttpp-dev libpaho-mqtt-dev
  libflatbuffers-dev flatbuffers-compiler libzstd-dev libsystemd-dev libxxhash-dev libspdlog-dev
  libfmt-dev libtoml11-dev libcli11-dev nlohmann-json3-dev libcpp-httplib-dev libjs-dygraphs libpq-dev"
pkgs_test="libgtest-dev libgmock-dev mosquitto mosquitto-clients openssl sqlite3 procps nats-server prometheus chromium faketime postgresql"
pkgs_demo="mosquitto mosquitto-clients"
# A region broker's machine: mosquitto_passwd for the identities, openssl
# for the CA, mosquitto_sub for `edgesync-region-auth revoke --broker`.
pkgs_region="mosquitto mosquitto-clients openssl"
pkgs_fuzz="clang libclang-rt-14-dev"
# make thread-safety (the first step of make test): Clang's thread-safety
# analysis over the build's compile_commands.json.
pkgs_analysis="clang jq"
# Packaging (make deb) and its test, which installs the package with dpkg:
# dpkg-shlibdeps, strip, lintian, systemd-analyze, adduser for postinst.
pkgs_deb="dpkg-dev binutils lintian systemd adduser"
# Cross builds use the build machine's flatc and a sysroot of Debian's target
# packages (firmware-config/cross/sysroot.sh), so only the compilers and the
# emulator are installed on the host.
pkgs_cross_arm64="g++-aarch64-linux-gnu qemu-user dpkg-dev"
pkgs_cross_armhf="g++-arm-linux-gnueabihf qemu-user dpkg-dev"

check=0
if [ "${1:-}" = "--check" ]; then check=1; shift; fi
[ $# -gt 0 ] || set -- build test

wanted=""
for group in "$@"; do
  case "$group" in
    build) wanted="$wanted $pkgs_build" ;;
    test) wanted="$wanted $pkgs_build $pkgs_test $pkgs_deb $pkgs_analysis" ;;
    analysis) wanted="$wanted $pkgs_analysis" ;;
    demo) wanted="$wanted $pkgs_build $pkgs_demo" ;;
    region) wanted="$wanted $pkgs_region" ;;
    fuzz) wanted="$wanted $pkgs_build $pkgs_fuzz" ;;
    deb) wanted="$wanted $pkgs_deb" ;;
    cross-arm64) wanted="$wanted $pkgs_cross_arm64" ;;
    cross-armhf) wanted="$wanted $pkgs_cross_armhf" ;;
    *) echo "deps.sh: unknown group '$group'" >&2; exit 2 ;;
  esac
done

missing=""
for p in $(echo $wanted | tr ' ' '\n' | sort -u); do
  status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
  case "$status" in
    *" installed") ;;
    *) missing="$missing $p" ;;
  esac
done

[ -n "$missing" ] || exit 0
if [ "$check" = 1 ]; then
  echo "missing packages:$missing"
  exit 1
fi
echo "deps: installing$missing"
if [ "$(id -u)" != 0 ]; then
  echo "deps: not root; run this, then try again:" >&2
  echo "  sudo apt-get update && sudo apt-get install -y --no-install-recommends$missing" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
# An old or empty package index makes installs fail with "Unable to locate".
apt-get update -qq
apt-get install -y -qq --no-install-recommends $missing
