#!/usr/bin/env bash
# Fetches the reference kernel's debug vmlinux (Debian linux-image-6.1.0-57-cloud-amd64-dbg,
# the image the oracles in tests/data were made from) into a cache outside the repo,
# checks its build ID, and prints the vmlinux path on stdout.
#
#   scripts/setup/fetch-kernel.sh            # -> $DWARF2BTF_CACHE/vmlinux-6.1.0-57-cloud-amd64
#   scripts/setup/fetch-kernel.sh --modules  # -> $DWARF2BTF_CACHE/modules-6.1.0-57-cloud-amd64
#   scripts/setup/fetch-kernel.sh --which    # the package it would use, fetching nothing
#   scripts/setup/fetch-kernel.sh --build-id # the pinned image's build ID
#
# --modules also unpacks every debug module (plain ELF .ko with DWARF, 1121 of them, ~1.2 GB)
# from the same package, keeping the kernel/... tree, and prints that directory instead. The
# package is checked through the build ID of the vmlinux it carries; a stamp file holding that
# build ID marks a complete unpack, so it is done once.
#
# When the pinned package can no longer be fetched (it leaves Debian's archive when a newer
# ABI replaces it), the newest linux-image-*-cloud-amd64-dbg apt knows is used instead, and a
# warning says so: the tests then run on that kernel, and those that need pahole HEAD's output
# for the pinned image skip, listed at the end of scripts/test.sh. DWARF2BTF_KERNEL_PKG names
# another package as the pinned one (e.g. one that does not exist, to try the fallback).
#
# Cache: $DWARF2BTF_CACHE, default ~/.cache/dwarf2btf. Needs apt (run as root or with sudo).
set -euo pipefail

PINNED_PKG=linux-image-6.1.0-57-cloud-amd64-dbg
PINNED_BUILD_ID=01d2640d3a13145ee314eb05b155f141b7b7058b
PKG=${DWARF2BTF_KERNEL_PKG:-$PINNED_PKG}
CACHE=${DWARF2BTF_CACHE:-$HOME/.cache/dwarf2btf}

MODE=vmlinux
case "${1:-}" in
  "") ;;
  --modules) MODE=modules ;;
  --which) MODE=which ;;
  --build-id) echo "$PINNED_BUILD_ID"; exit 0 ;;
  *) echo "usage: $0 [--modules|--which|--build-id]" >&2; exit 2 ;;
esac

build_id() { readelf -n "$1" 2>/dev/null | awk '/Build ID/ {print $3; exit}'; }
kver_of() { local k=${1#linux-image-}; echo "${k%-dbg}"; }
SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO=sudo

# Sets KVER, VMLINUX, MODDIR, STAMP and BUILD_ID (expected; empty: whatever the package has,
# taken from the stamp of an earlier unpack) for package $PKG.
select_pkg() {
  KVER=$(kver_of "$PKG")
  VMLINUX=$CACHE/vmlinux-$KVER
  MODDIR=$CACHE/modules-$KVER
  STAMP=$MODDIR/.unpacked
  if [ "$PKG" = "$PINNED_PKG" ]; then
    BUILD_ID=$PINNED_BUILD_ID
  else
    BUILD_ID=$(cat "$VMLINUX.build-id" 2>/dev/null || true)
  fi
}

# Prints the cached path and exits when the cache already holds what is asked for.
use_cache() {
  [ -n "$BUILD_ID" ] || return 0
  if [ "$MODE" = vmlinux ] && [ -s "$VMLINUX" ] && [ "$(build_id "$VMLINUX")" = "$BUILD_ID" ]; then
    echo "$VMLINUX"; exit 0
  fi
  if [ "$MODE" = modules ] && [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$BUILD_ID" ]; then
    echo "$MODDIR"; exit 0
  fi
}

# Whether apt can fetch $1 (the package lists are refreshed once if it does not know it).
available() {
  apt-cache show "$1" >/dev/null 2>&1 && return 0
  [ -n "${refreshed:-}" ] && return 1
  refreshed=1
  $SUDO apt-get update -qq >&2 || true
  apt-cache show "$1" >/dev/null 2>&1
}

# The newest versioned linux-image-*-cloud-amd64-dbg apt knows, other than $1 (the
# major.minor-only names are meta-packages without files).
newest_other() {
  apt-cache search --names-only '^linux-image-.*-cloud-amd64-dbg$' | awk '{print $1}' |
    grep -Ev '^linux-image-[0-9]+\.[0-9]+-cloud-amd64-dbg$' | grep -vFx "$1" | sort -V | tail -n 1
}

fall_back() {
  local new
  if [ -n "${fell_back:-}" ]; then
    echo "error: the fallback package $PKG cannot be fetched either" >&2
    exit 1
  fi
  fell_back=1
  new=$(newest_other "$PKG")
  if [ -z "$new" ]; then
    echo "error: $PKG cannot be fetched and apt knows no other linux-image-*-cloud-amd64-dbg" >&2
    exit 1
  fi
  echo "warning: $PKG cannot be fetched (gone from the archive?); falling back to $new:" \
    "the checks against pahole HEAD's output for the pinned image will skip" >&2
  PKG=$new
  select_pkg
}

mkdir -p "$CACHE"
cd "$CACHE"
select_pkg
[ "$MODE" = which ] || use_cache
if ! ls "${PKG}"_*.deb >/dev/null 2>&1 && ! available "$PKG"; then
  fall_back
  [ "$MODE" = which ] || use_cache
fi
if [ "$MODE" = which ]; then
  echo "$PKG"
  exit 0
fi
if ! ls "${PKG}"_*.deb >/dev/null 2>&1; then
  echo "fetching $PKG (about 280 MB)..." >&2
  if ! apt-get download "$PKG" >&2; then
    fall_back
    ls "${PKG}"_*.deb >/dev/null 2>&1 || apt-get download "$PKG" >&2
  fi
fi
DEB=$(ls "${PKG}"_*.deb | head -n 1)
tmp=$(mktemp -d "$CACHE/unpack.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
if [ "$MODE" = vmlinux ]; then
  echo "unpacking vmlinux from $DEB..." >&2
  dpkg-deb --fsys-tarfile "$DEB" | tar -x -C "$tmp" --wildcards "./usr/lib/debug/boot/vmlinux-$KVER"
else
  echo "unpacking vmlinux and modules from $DEB..." >&2
  dpkg-deb --fsys-tarfile "$DEB" | tar -x -C "$tmp" --wildcards "./usr/lib/debug/boot/vmlinux-$KVER" \
    "./usr/lib/debug/lib/modules/$KVER/*.ko"
fi
mv "$tmp/usr/lib/debug/boot/vmlinux-$KVER" "$VMLINUX.tmp"
got=$(build_id "$VMLINUX.tmp")
if [ -z "$got" ] || { [ -n "$BUILD_ID" ] && [ "$got" != "$BUILD_ID" ]; }; then
  echo "error: $VMLINUX.tmp has build ID '$got', expected ${BUILD_ID:-one}" >&2
  rm -f "$VMLINUX.tmp"
  exit 1
fi
BUILD_ID=$got
[ "$PKG" = "$PINNED_PKG" ] || echo "$BUILD_ID" > "$VMLINUX.build-id"
vmlinux_ok=0
if [ -s "$VMLINUX" ] && [ "$(build_id "$VMLINUX")" = "$BUILD_ID" ]; then
  vmlinux_ok=1
fi
if [ "$MODE" = vmlinux ]; then
  mv "$VMLINUX.tmp" "$VMLINUX"
  echo "$VMLINUX"
  exit 0
fi
if [ "$vmlinux_ok" -eq 1 ]; then rm -f "$VMLINUX.tmp"; else mv "$VMLINUX.tmp" "$VMLINUX"; fi
n=$(find "$tmp/usr/lib/debug/lib/modules/$KVER" -name '*.ko' -type f | wc -l)
if [ "$n" -eq 0 ]; then
  echo "error: no .ko under usr/lib/debug/lib/modules/$KVER in $DEB" >&2
  exit 1
fi
rm -rf "$MODDIR"
mv "$tmp/usr/lib/debug/lib/modules/$KVER" "$MODDIR"
echo "$BUILD_ID" > "$STAMP"
echo "unpacked $n modules" >&2
echo "$MODDIR"
