#!/usr/bin/env bash
# Installs what the test suite needs on a fresh Debian machine: the oracles (pahole, bpftool),
# the fixture compilers (gcc, clang), libbpf-sys's build inputs (libelf, zlib, pkg-config),
# binutils (readelf) and GNU time. Idempotent: skips apt when everything is present.
set -euo pipefail

need=(dwarves bpftool clang llvm gcc libelf-dev zlib1g-dev pkg-config binutils time xz-utils)
missing=()
for p in "${need[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO=sudo
  echo "installing: ${missing[*]}" >&2
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi
