#!/usr/bin/env bash
# The -j matrix: encodes the reference vmlinux with dwarf2btf (each function-table design)
# and with pahole at every -j, and prints wall time, CPU time and peak RSS side by side, with
# dwarf2btf/pahole ratios, as a Markdown table.
#
#   scripts/bench-matrix.sh                 # -j 2 4 8 16 32 64, 1 run each
#   JOBS="2 8" RUNS=3 scripts/bench-matrix.sh
#   PAHOLE=/path/to/pahole scripts/bench-matrix.sh   # compare with another pahole build
#
# Each cell is the median of RUNS runs. pahole runs with the kernel's flags for its version:
# --btf_features when it knows them (>= 1.26), the legacy equivalents otherwise (Debian's 1.24).
set -euo pipefail
cd "$(dirname "$0")/.."

JOBS=${JOBS:-"2 4 8 16 32 64"}
RUNS=${RUNS:-1}
DESIGNS=${DESIGNS:-"shared dashmap save-merge"}
PAHOLE=${PAHOLE:-pahole}
VMLINUX=${VMLINUX:-$(scripts/fetch-kernel.sh)}
cargo build --release --quiet
BIN=target/release/dwarf2btf
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT

FEATURES=encode_force,var,float,enum64,decl_tag,type_tag,optimized_func,consistent_func,decl_tag_kfuncs
# The kernel's flags for this pahole version (scripts/Makefile.btf): --btf_features from 1.26,
# --skip_encoding_btf_inconsistent_proto --btf_gen_optimized from 1.25, floats from 1.21.
HELP=$("$PAHOLE" --help 2>&1 || true)
PAHOLE_FLAGS=(--lang_exclude=rust)
if grep -q -- --btf_features <<< "$HELP"; then
  PAHOLE_FLAGS+=(--btf_features=$FEATURES)
else
  PAHOLE_FLAGS+=(--btf_gen_floats)
  if grep -q -- --skip_encoding_btf_inconsistent_proto <<< "$HELP"; then
    PAHOLE_FLAGS+=(--skip_encoding_btf_inconsistent_proto --btf_gen_optimized)
  fi
fi

# measure CMD...: prints "wall cpu rss_kib" (median of RUNS by wall time)
measure() {
  local i
  for i in $(seq "$RUNS"); do
    if ! /usr/bin/time -f "%e %U %S %M" -o "$OUT/t" "$@" > "$OUT/log" 2>&1; then
      echo "failed: $* (see below)" >&2
      cat "$OUT/log" >&2
      exit 1
    fi
    awk '{printf "%.2f %.2f %d\n", $1, $2 + $3, $4}' "$OUT/t"
  done | sort -n | awk -v n="$RUNS" 'NR == int((n + 1) / 2)'
}

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "-" }'; }

echo "vmlinux: $VMLINUX ($("$PAHOLE" --version 2>/dev/null | head -n 1) as pahole), $(nproc) CPUs, median of $RUNS"
echo
echo "| -j | design | wall s | CPU s | peak RSS MiB | pahole wall s | pahole CPU s | pahole RSS MiB | wall ratio | CPU ratio | RSS ratio |"
echo "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
for j in $JOBS; do
  read -r pw pc pr < <(measure "$PAHOLE" -J "-j$j" "${PAHOLE_FLAGS[@]}" "--btf_encode_detached=$OUT/p.btf" "$VMLINUX")
  for d in $DESIGNS; do
    read -r w c r < <(measure "$BIN" -J "-j$j" --btf_features=$FEATURES --lang_exclude=rust \
      --func-table "$d" "--btf_encode_detached=$OUT/d.btf" "$VMLINUX")
    printf "| %s | %s | %s | %s | %d | %s | %s | %d | %s | %s | %s |\n" "$j" "$d" "$w" "$c" \
      $((r / 1024)) "$pw" "$pc" $((pr / 1024)) "$(ratio "$w" "$pw")" "$(ratio "$c" "$pc")" "$(ratio "$r" "$pr")"
  done
done
