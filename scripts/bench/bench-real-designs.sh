#!/usr/bin/env bash
# The real function-sharing designs head to head: encodes the reference vmlinux with each
# pahole binary named on the command line and with dwarf2btf under each --func-table design,
# at each -j, in alternating rounds; writes every run to a CSV, counts each tool's FUNC records
# (bpftool) and prints the medians as a Markdown table. It does not build any pahole: pass
# binaries built elsewhere, each as LABEL=PATH (the label names it in the CSV and the table).
#
#   scripts/bench/bench-real-designs.sh save-merge=/tmp/p1/pahole shared-v2=/tmp/p2/pahole \
#       "pahole-1.32=$(scripts/setup/fetch-pahole-1.32.sh)"
#   JOBS="1 2 8" RUNS=3 OUT=docs/bench/runs/DATE-TOPIC scripts/bench/bench-real-designs.sh ...
#   DESIGNS= scripts/bench/bench-real-designs.sh ...       # the pahole binaries only
#   VMLINUX=M.ko BASE=vmlinux.btf scripts/bench/bench-real-designs.sh ...   # a module, split
#
# One round runs, at each -j, every pahole and then every dwarf2btf design once, so that the
# shared machine's drift falls on all of them alike; each cell is the median of RUNS rounds.
# Every pahole runs with the kernel's --btf_features (all the binaries compared here know them)
# and --lang_exclude=rust, as scripts/bench/bench-matrix.sh runs pahole; dwarf2btf runs with
# the same flags. `uptime` before and after goes to OUT/load.txt.
set -euo pipefail
cd "$(dirname "$0")/../.."

[ $# -gt 0 ] || { sed -n '2,13p' "$0" >&2; exit 2; }
JOBS=${JOBS:-"1 2 8"}
RUNS=${RUNS:-3}
DESIGNS=${DESIGNS-"shared dashmap save-merge private"}
OUT=${OUT:-docs/bench}
CSV=$OUT/matrix.csv
mkdir -p "$OUT"
VMLINUX=${VMLINUX:-$(scripts/setup/fetch-kernel.sh)}
# BASE: the base BTF of a module given as VMLINUX (split BTF, as a kernel build encodes it).
BASE=${BASE:-}
SPLIT=() BPFTOOL_BASE=()
[ -z "$BASE" ] || { SPLIT=("--btf_base=$BASE"); BPFTOOL_BASE=(-B "$BASE"); }
FEATURES=encode_force,var,float,enum64,decl_tag,type_tag,optimized_func,consistent_func,decl_tag_kfuncs
scripts/setup/apt-install.sh time bpftool
cargo build --release --quiet
BIN=${CARGO_TARGET_DIR:-target}/release/dwarf2btf
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

declare -A PAHOLES
LABELS=()
for arg in "$@"; do
  label=${arg%%=*} path=${arg#*=}
  [ "$label" != "$arg" ] && [ -x "$path" ] || { echo "not LABEL=EXECUTABLE: $arg" >&2; exit 2; }
  PAHOLES[$label]=$path
  LABELS+=("$label")
done

# measure TOOL DESIGN J ROUND OUTFILE CMD...: one timed run, one CSV row; the BTF stays in OUTFILE
measure() {
  local tool=$1 design=$2 j=$3 round=$4 btf=$5; shift 5
  if ! /usr/bin/time -f "%e %U %S %M" -o "$TMP/time" "$@" "${SPLIT[@]}" \
    "--btf_encode_detached=$btf" "$VMLINUX" \
    > "$TMP/log" 2>&1; then
    echo "failed ($tool $design -j$j): $*" >&2
    cat "$TMP/log" >&2
    exit 1
  fi
  awk -v row="$tool,$design,$j,$round" '{printf "%s,%.2f,%.2f,%d\n", row, $1, $2 + $3, $4}' \
    "$TMP/time" >> "$CSV"
}

uptime > "$OUT/load.txt"
echo "tool,design,jobs,round,wall_s,cpu_s,peak_rss_kib" > "$CSV"
for r in $(seq "$RUNS"); do
  for j in $JOBS; do
    echo "round $r/$RUNS, -j$j" >&2
    for label in "${LABELS[@]}"; do
      measure "$label" - "$j" "$r" "$TMP/$label.btf" "${PAHOLES[$label]}" -J "-j$j" \
        --btf_features=$FEATURES --lang_exclude=rust
    done
    for d in $DESIGNS; do
      measure dwarf2btf "$d" "$j" "$r" "$TMP/dwarf2btf-$d.btf" "$BIN" -J "-j$j" \
        --btf_features=$FEATURES --lang_exclude=rust --func-table "$d"
    done
  done
done
uptime >> "$OUT/load.txt"

# FUNC records in each tool's last output (the last round's largest -j)
{
  echo "tool,design,funcs"
  for label in "${LABELS[@]}"; do
    echo "$label,-,$(bpftool btf dump file "$TMP/$label.btf" "${BPFTOOL_BASE[@]}" | grep -c '] FUNC ')"
  done
  for d in $DESIGNS; do
    echo "dwarf2btf,$d,$(bpftool btf dump file "$TMP/dwarf2btf-$d.btf" "${BPFTOOL_BASE[@]}" | grep -c '] FUNC ')"
  done
} > "$OUT/funcs.csv"

# cell TOOL DESIGN J COLUMN: the median of that column over the rounds
cell() {
  awk -F, -v t="$1" -v d="$2" -v j="$3" -v c="$4" '$1 == t && $2 == d && $3 == j {print $c}' "$CSV" |
    sort -n | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'
}
echo "vmlinux: $VMLINUX, $(nproc) CPUs, median of $RUNS alternating rounds"
echo
echo "| tool | design | FUNCs |$(for j in $JOBS; do printf ' -j%s wall s | CPU s | RSS MiB |' "$j"; done)"
echo "|---|---|---:|$(for _ in $JOBS; do printf -- '---:|---:|---:|'; done)"
tail -n +2 "$OUT/funcs.csv" | while IFS=, read -r tool design funcs; do
  printf '| %s | %s | %s |' "$tool" "$design" "$funcs"
  for j in $JOBS; do
    printf ' %s | %s | %d |' "$(cell "$tool" "$design" "$j" 5)" "$(cell "$tool" "$design" "$j" 6)" \
      $(($(cell "$tool" "$design" "$j" 7) / 1024))
  done
  echo
done
echo
echo "wrote $CSV, $OUT/funcs.csv, $OUT/load.txt"
