#!/usr/bin/env bash
# The main job on a real input: fetch the Debian kernel debuginfo (cached), encode its vmlinux
# with the kernel's pahole flags, verify the BTF (dwarf2btf verify and bpftool), compare it
# with pahole 1.32's output when the oracle is present, and print a summary.
#
#   scripts/encode-kernel.sh [-jN] [extra dwarf2btf flags...]
set -euo pipefail
cd "$(dirname "$0")/.."

# What this job runs, and nothing more (idempotent: no apt call when all are there): readelf
# (binutils), xz for the compressed oracle (scripts/setup/oracle.sh), python3 for sections() below,
# GNU time for measure(), bpftool, gcc as cargo's linker, and Debian's pahole (dwarves), which
# the summary measures beside dwarf2btf. scripts/setup/fetch-kernel.sh needs only apt and dpkg-deb.
scripts/setup/apt-install.sh binutils xz-utils python3 time bpftool gcc dwarves
VMLINUX=$(scripts/setup/fetch-kernel.sh)
CACHE=$(dirname "$VMLINUX")
OUT=$CACHE/vmlinux.dwarf2btf.btf
cargo build --release --quiet
BIN=${CARGO_TARGET_DIR:-target}/release/dwarf2btf

JOBS=-j2
if [ $# -gt 0 ] && [[ $1 == -j* ]]; then JOBS=$1; shift; fi
FLAGS=(-J "$JOBS" --btf_features=encode_force,var,float,enum64,decl_tag,type_tag,optimized_func,consistent_func,decl_tag_kfuncs
       --lang_exclude=rust "--btf_encode_detached=$OUT")

# sections FILE: the type and string sections of raw BTF, without the header (whose length
# differs: dwarf2btf writes the classic 24 bytes, libbpf 1.8 32).
sections() {
  python3 - "$1" <<'PY'
import struct, sys
d = open(sys.argv[1], "rb").read()
hdr_len, type_off, type_len, str_off, str_len = struct.unpack_from("<IIIII", d, 4)
body = d[hdr_len:]
sys.stdout.buffer.write(body[type_off:type_off + type_len] + body[str_off:str_off + str_len])
PY
}
# measure LABEL CMD...: runs CMD (its output into $CACHE/LABEL.log) and prints one line with
# LABEL's wall time, CPU time and peak memory.
measure() {
  local label=$1
  shift
  /usr/bin/time -f "%e %U %S %M" -o "$CACHE/time.txt" "$@" > "$CACHE/$label.log" 2>&1
  awk -v l="$label" '{ printf "%s: %s s wall, %.2f s CPU, %d MiB peak\n", l, $1, $2 + $3, $4 / 1024 }' "$CACHE/time.txt"
}

echo "== encoding $VMLINUX"
ours=$(measure dwarf2btf "$BIN" "${FLAGS[@]}" -V "$@" "$VMLINUX")
echo "$ours"
echo "== dwarf2btf verify"
"$BIN" verify "$OUT"
echo "== bpftool btf dump"
bpftool btf dump file "$OUT" > "$CACHE/vmlinux.dwarf2btf.txt"
types=$(grep -c '^\[' "$CACHE/vmlinux.dwarf2btf.txt")
echo "bpftool listed $types types"

summary=("input: $VMLINUX" "output: $OUT, $(stat -c %s "$OUT") bytes, $types types, accepted by dwarf2btf verify and bpftool")
ORACLE=$(scripts/setup/oracle.sh vmlinux-6.1.0-57-cloud-amd64.pahole-1.32.btf)
SKIPS=$PWD/tests/data/vmlinux-6.1.0-57-cloud-amd64.pahole-1.32.skipped.txt
if [ "$(readelf -n "$VMLINUX" | awk '/Build ID/ {print $3; exit}')" = "$(scripts/setup/fetch-kernel.sh --build-id)" ]; then
  if cmp -s <(sections "$OUT") <(sections "$ORACLE"); then
    summary+=("pahole 1.32's output: type and string sections byte-identical")
  else
    summary+=("pahole 1.32's output: DIFFERS, $(cmp <(sections "$OUT") <(sections "$ORACLE") | head -n 1)")
  fi
  if "$BIN" diff --only funcs,vars "$OUT" "$ORACLE" > "$CACHE/diff.txt"; then
    summary+=("functions and variables: the same as pahole 1.32's")
  else
    summary+=("functions and variables: differ from pahole 1.32's ($CACHE/diff.txt)")
  fi
  grep ' : skipping BTF encoding of function due to ' "$CACHE/dwarf2btf.log" | sort > "$CACHE/skipped.txt" || true
  if diff -q <(grep ' : skipping BTF encoding' "$SKIPS" | sort) "$CACHE/skipped.txt" > /dev/null; then
    summary+=("functions skipped (-V): the same $(wc -l < "$CACHE/skipped.txt") functions and reasons as pahole 1.32")
  else
    summary+=("functions skipped (-V): differ from pahole 1.32's log ($CACHE/skipped.txt)")
  fi
else
  summary+=("pahole 1.32's output: not compared (tests/data has it for the pinned image only; this is a fallback kernel)")
fi
summary+=("$ours")
if command -v pahole > /dev/null; then
  # Debian's pahole (1.24) takes the legacy spelling of the kernel's flags.
  summary+=("$(measure "pahole-$(pahole --version)" pahole -J "$JOBS" --btf_gen_floats \
    --lang_exclude=rust "--btf_encode_detached=$CACHE/vmlinux.pahole.btf" "$VMLINUX")")
fi
echo "== summary"
printf '%s\n' "${summary[@]}"
