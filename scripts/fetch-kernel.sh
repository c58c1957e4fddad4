#!/usr/bin/env bash
# Fetches the reference kernel's debug vmlinux (Debian linux-image-6.1.0-57-cloud-amd64-dbg,
# the image the oracles in ../shared/oracles were made from) into a cache outside the repo,
# checks its build ID, and prints the vmlinux path on stdout.
#
#   scripts/fetch-kernel.sh            # -> $DWARF2BTF_CACHE/vmlinux-6.1.0-57-cloud-amd64
#
# Cache: $DWARF2BTF_CACHE, default ~/.cache/dwarf2btf. Needs apt (run as root or with sudo).
set -euo pipefail

KVER=6.1.0-57-cloud-amd64
PKG=linux-image-${KVER}-dbg
BUILD_ID=01d2640d3a13145ee314eb05b155f141b7b7058b
CACHE=${DWARF2BTF_CACHE:-$HOME/.cache/dwarf2btf}
VMLINUX=$CACHE/vmlinux-$KVER

build_id() { readelf -n "$1" 2>/dev/null | awk '/Build ID/ {print $3; exit}'; }

if [ -s "$VMLINUX" ] && [ "$(build_id "$VMLINUX")" = "$BUILD_ID" ]; then
  echo "$VMLINUX"
  exit 0
fi

mkdir -p "$CACHE"
cd "$CACHE"
SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO=sudo
if ! ls ${PKG}_*.deb >/dev/null 2>&1; then
  echo "fetching $PKG (about 280 MB)..." >&2
  if ! apt-get download "$PKG" >&2 2>/dev/null; then
    $SUDO apt-get update -qq >&2
    apt-get download "$PKG" >&2
  fi
fi
DEB=$(ls ${PKG}_*.deb | head -n 1)
echo "unpacking vmlinux from $DEB..." >&2
tmp=$(mktemp -d "$CACHE/unpack.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
dpkg-deb --fsys-tarfile "$DEB" | tar -x -C "$tmp" --wildcards "./usr/lib/debug/boot/vmlinux-$KVER"
mv "$tmp/usr/lib/debug/boot/vmlinux-$KVER" "$VMLINUX.tmp"
got=$(build_id "$VMLINUX.tmp")
if [ "$got" != "$BUILD_ID" ]; then
  echo "error: $VMLINUX.tmp has build ID $got, expected $BUILD_ID" >&2
  rm -f "$VMLINUX.tmp"
  exit 1
fi
mv "$VMLINUX.tmp" "$VMLINUX"
echo "$VMLINUX"
