#!/usr/bin/env bash
# The main job on a real input: fetch the Debian kernel debuginfo (cached), encode its vmlinux
# with the kernel's pahole flags, verify the BTF (dwarf2btf verify and bpftool), compare it
# with pahole HEAD's output when the oracle is present, and print a summary.
#
#   scripts/encode-kernel.sh [-jN] [extra dwarf2btf flags...]
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-test-deps.sh
VMLINUX=$(scripts/fetch-kernel.sh)
CACHE=$(dirname "$VMLINUX")
OUT=$CACHE/vmlinux.dwarf2btf.btf
cargo build --release --quiet
BIN=target/release/dwarf2btf

JOBS=-j2
if [ $# -gt 0 ] && [[ $1 == -j* ]]; then JOBS=$1; shift; fi
FLAGS=(-J "$JOBS" --btf_features=encode_force,var,float,enum64,decl_tag,type_tag,optimized_func,consistent_func,decl_tag_kfuncs
       --lang_exclude=rust "--btf_encode_detached=$OUT")

echo "== encoding $VMLINUX"
/usr/bin/time -f "%e s wall, %U s user, %S s sys, %M KiB peak RSS" "$BIN" "${FLAGS[@]}" "$@" "$VMLINUX"
ls -l "$OUT"

echo "== dwarf2btf verify"
"$BIN" verify "$OUT"

echo "== bpftool btf dump"
bpftool btf dump file "$OUT" > "$CACHE/vmlinux.dwarf2btf.txt"
echo "bpftool listed $(grep -c '^\[' "$CACHE/vmlinux.dwarf2btf.txt") types"

ORACLE=$(scripts/oracle.sh vmlinux-6.1.0-57-cloud-amd64.pahole-head.btf)
if [ -f "$ORACLE" ]; then
  echo "== comparing with pahole HEAD's output ($ORACLE)"
  "$BIN" diff --set --only types "$OUT" "$ORACLE" || true
fi
