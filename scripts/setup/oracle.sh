#!/usr/bin/env bash
# Prints the path of an oracle file from tests/data, decompressed into the cache when it is
# stored compressed there (tests/data/NAME.xz):
#
#   scripts/setup/oracle.sh vmlinux-6.1.0-57-cloud-amd64.pahole-1.32.btf
set -euo pipefail
cd "$(dirname "$0")/../.."
name=$1
if [ -f "tests/data/$name" ]; then echo "$PWD/tests/data/$name"; exit 0; fi
src=tests/data/$name.xz
[ -f "$src" ] || { echo "error: no oracle $name in tests/data" >&2; exit 1; }
CACHE=${DWARF2BTF_CACHE:-$HOME/.cache/dwarf2btf}
out=$CACHE/oracles/$name
if [ ! -s "$out" ] || [ "$src" -nt "$out" ]; then
  mkdir -p "$(dirname "$out")"
  xz -dc "$src" > "$out.tmp" && mv "$out.tmp" "$out"
fi
echo "$out"
