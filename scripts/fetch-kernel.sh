#!/usr/bin/env bash
# Fetches the reference kernel's debug vmlinux (Debian linux-image-6.1.0-57-cloud-amd64-dbg,
# the image the oracles in tests/data were made from) into a cache outside the repo,
# checks its build ID, and prints the vmlinux path on stdout.
#
#   scripts/fetch-kernel.sh            # -> $DWARF2BTF_CACHE/vmlinux-6.1.0-57-cloud-amd64
#   scripts/fetch-kernel.sh --modules  # -> $DWARF2BTF_CACHE/modules-6.1.0-57-cloud-amd64
#
# --modules also unpacks every debug module (plain ELF .ko with DWARF, 1121 of them, ~1.2 GB)
# from the same package, keeping the kernel/... tree, and prints that directory instead. The
# package is checked through the build ID of the vmlinux it carries; a stamp file holding that
# build ID marks a complete unpack, so it is done once.
#
# Cache: $DWARF2BTF_CACHE, default ~/.cache/dwarf2btf. Needs apt (run as root or with sudo).
set -euo pipefail

KVER=6.1.0-57-cloud-amd64
PKG=linux-image-${KVER}-dbg
BUILD_ID=01d2640d3a13145ee314eb05b155f141b7b7058b
CACHE=${DWARF2BTF_CACHE:-$HOME/.cache/dwarf2btf}
VMLINUX=$CACHE/vmlinux-$KVER
MODDIR=$CACHE/modules-$KVER
STAMP=$MODDIR/.unpacked

MODULES=0
case "${1:-}" in
  "") ;;
  --modules) MODULES=1 ;;
  *) echo "usage: $0 [--modules]" >&2; exit 2 ;;
esac

build_id() { readelf -n "$1" 2>/dev/null | awk '/Build ID/ {print $3; exit}'; }

vmlinux_ok=0
if [ -s "$VMLINUX" ] && [ "$(build_id "$VMLINUX")" = "$BUILD_ID" ]; then
  vmlinux_ok=1
fi
if [ "$MODULES" -eq 0 ] && [ "$vmlinux_ok" -eq 1 ]; then
  echo "$VMLINUX"
  exit 0
fi
if [ "$MODULES" -eq 1 ] && [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$BUILD_ID" ]; then
  echo "$MODDIR"
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
tmp=$(mktemp -d "$CACHE/unpack.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
if [ "$MODULES" -eq 0 ]; then
  echo "unpacking vmlinux from $DEB..." >&2
  dpkg-deb --fsys-tarfile "$DEB" | tar -x -C "$tmp" --wildcards "./usr/lib/debug/boot/vmlinux-$KVER"
else
  echo "unpacking vmlinux and modules from $DEB..." >&2
  dpkg-deb --fsys-tarfile "$DEB" | tar -x -C "$tmp" --wildcards "./usr/lib/debug/boot/vmlinux-$KVER" \
    "./usr/lib/debug/lib/modules/$KVER/*.ko"
fi
mv "$tmp/usr/lib/debug/boot/vmlinux-$KVER" "$VMLINUX.tmp"
got=$(build_id "$VMLINUX.tmp")
if [ "$got" != "$BUILD_ID" ]; then
  echo "error: $VMLINUX.tmp has build ID $got, expected $BUILD_ID" >&2
  rm -f "$VMLINUX.tmp"
  exit 1
fi
if [ "$MODULES" -eq 0 ]; then
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
