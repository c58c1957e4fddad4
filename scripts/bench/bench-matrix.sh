#!/usr/bin/env bash
# The -j matrix: encodes the reference vmlinux with dwarf2btf (each function-table design)
# and with pahole at every -j, and prints wall time, CPU time and peak RSS side by side, with
# dwarf2btf/pahole ratios, as a Markdown table; writes every run to a CSV file and draws
# peak RSS and wall time against -j (SVG, gnuplot).
#
#   scripts/bench/bench-matrix.sh                 # -j 1 2 4 8 16 32 64, 3 runs each
#   JOBS="2 8" RUNS=5 scripts/bench/bench-matrix.sh
#   PAHOLE=/path/to/pahole scripts/bench/bench-matrix.sh   # compare with another pahole build
#   OUT=docs/bench scripts/bench/bench-matrix.sh           # where matrix.csv, rss.svg, wall.svg go
#
# Runs alternate between the sides (pahole, then each design, then pahole again ...) so that
# the machine's drift falls on all of them alike; each cell is the median of RUNS runs. pahole
# runs with the kernel's flags for its version: --btf_features when it knows them (>= 1.26),
# the legacy equivalents otherwise (Debian's 1.24).
set -euo pipefail
cd "$(dirname "$0")/../.."
source scripts/bench/timed.sh

JOBS=${JOBS:-"1 2 4 8 16 32 64"}
RUNS=${RUNS:-3}
DESIGNS=${DESIGNS:-"shared dashmap save-merge"}
PAHOLE=${PAHOLE:-pahole}
OUT=${OUT:-docs/bench}
VMLINUX=${VMLINUX:-$(scripts/setup/fetch-kernel.sh)}
bench_setup
CSV=$OUT/matrix.csv

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
PAHOLE_NAME="pahole $("$PAHOLE" --version 2>/dev/null | head -n 1)"

# run1 TOOL DESIGN J CMD...: runs CMD once, appends "tool,design,j,wall,cpu,rss_kib" and, for
# dwarf2btf (run with --stats), its function table's figures to the CSV: the final pass's
# wall time, per-owner folds, contention (failed CAS / shard lock waits), instances held.
run1() {
  local tool=$1 design=$2 j=$3; shift 3
  timed "$TMP/log" "$@"
  local table=",,,,"
  if [ "$tool" = dwarf2btf ]; then
    table=$(awk '
      $1 == "functions" { pass = $2 }
      /^function table \(/ {
        for (i = 1; i <= NF; i++) {
          if ($(i + 1) == "per-owner") folds = $i
          if ($i == "contention") contention = $(i + 1)
          if ($(i + 1) == "instances" && $(i + 2) == "held") held = $i
        }
      }
      END { printf ",%s,%s,%s,%s", pass, folds, contention, held }' "$TMP/log")
  fi
  echo "$tool,$design,$j,$(cat "$TMP/log.row")$table" >> "$CSV"
}

echo "tool,design,jobs,wall_s,cpu_s,peak_rss_kib,final_pass_s,folds,contention,held" > "$CSV"
for j in $JOBS; do
  for r in $(seq "$RUNS"); do
    echo "-j$j run $r/$RUNS" >&2
    run1 "$PAHOLE_NAME" - "$j" "$PAHOLE" -J "-j$j" "${PAHOLE_FLAGS[@]}" "--btf_encode_detached=$TMP/p.btf" "$VMLINUX"
    for d in $DESIGNS; do
      run1 dwarf2btf "$d" "$j" "$BIN" -J "-j$j" --btf_features=$FEATURES --lang_exclude=rust \
        --func-table "$d" --stats "--btf_encode_detached=$TMP/d.btf" "$VMLINUX"
    done
  done
done

# median TOOL DESIGN J [COLUMNS]: each column's median over the runs (default: wall cpu rss_kib)
median() {
  local col
  for col in ${4:-4 5 6}; do
    awk -F, -v t="$1" -v d="$2" -v j="$3" -v c="$col" '$1 == t && $2 == d && $3 == j {print $c}' "$CSV" |
      sort -n | awk '{v[NR] = $1} END {printf "%s ", v[int((NR + 1) / 2)]}'
  done
  echo
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "-" }'; }

echo "vmlinux: $VMLINUX ($PAHOLE_NAME), $(nproc) CPUs, median of $RUNS alternating runs"
echo
echo "| -j | design | wall s | CPU s | peak RSS MiB | pahole wall s | pahole CPU s | pahole RSS MiB | wall ratio | CPU ratio | RSS ratio |"
echo "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
for j in $JOBS; do
  read -r pw pc pr < <(median "$PAHOLE_NAME" - "$j")
  for d in $DESIGNS; do
    read -r w c r < <(median dwarf2btf "$d" "$j")
    printf "| %s | %s | %s | %s | %d | %s | %s | %d | %s | %s | %s |\n" "$j" "$d" "$w" "$c" \
      $((r / 1024)) "$pw" "$pc" $((pr / 1024)) "$(ratio "$w" "$pw")" "$(ratio "$c" "$pc")" "$(ratio "$r" "$pr")"
  done
done

echo
echo "Function table per design (dwarf2btf --stats, medians): final pass wall, per-owner folds,"
echo "contention (shared: failed CAS; dashmap: shard lock waits), instances held for the final pass."
echo
echo "| -j | design | final pass s | folds | contention | instances held |"
echo "|---:|---|---:|---:|---:|---:|"
for j in $JOBS; do
  for d in $DESIGNS; do
    read -r fp fo co he < <(median dwarf2btf "$d" "$j" "7 8 9 10")
    printf "| %s | %s | %s | %s | %s | %s |\n" "$j" "$d" "$fp" "$fo" "$co" "$he"
  done
done

# The plots: one line per tool and design, medians, -j on a log scale.
for d in "$PAHOLE_NAME,-" $(printf 'dwarf2btf,%s ' $DESIGNS); do
  tool=${d%,*} design=${d##*,}
  label=$([ "$design" = - ] && echo "$tool" || echo "dwarf2btf $design")
  for j in $JOBS; do
    read -r w _ r < <(median "$tool" "$design" "$j")
    echo "$j $w $((r / 1024))"
  done > "$TMP/$label.dat"
done
plot() { # plot COLUMN YLABEL FILE
  {
    echo "set terminal svg size 720,440 dynamic font 'sans,12'; set output '$3'"
    echo "set logscale x 2; set xlabel '-j (worker threads)'; set ylabel '$2'; set key outside right"
    echo "set grid; set yrange [0:*]; set title 'vmlinux 6.1.0-57 cloud, $(nproc) CPUs, median of $RUNS'"
    printf "plot "
    local first=1 f
    for f in "$TMP"/*.dat; do
      [ $first = 1 ] || printf ", "
      printf "'%s' using 1:%s with linespoints title '%s'" "$f" "$1" "$(basename "$f" .dat)"
      first=0
    done
    echo
  } | gnuplot
}
plot 3 "peak RSS (MiB)" "$OUT/rss.svg"
plot 2 "wall time (s)" "$OUT/wall.svg"
echo
echo "wrote $CSV, $OUT/rss.svg, $OUT/wall.svg"
