#!/usr/bin/env bash
# The counted memory of each function-table design on the reference kernel
# (docs/concurrency.md, "Memory per design, counted"): runs `dwarf2btf --stats` for every
# design at each -j, keeps the `function table memory` line, checks that every run wrote the
# same BTF, and writes docs/bench/memory.csv (MiB per part, with its provenance sidecar) and
# docs/bench/memory.svg.
#
#   scripts/bench/memory-figure.sh
#   JOBS="1 2 8 64" OUT=/tmp/fig scripts/bench/memory-figure.sh
#   RUN=0 scripts/bench/memory-figure.sh          # redraw the SVG from the existing memory.csv
set -euo pipefail
cd "$(dirname "$0")/../.."

JOBS=${JOBS:-1 2 64}
OUT=${OUT:-docs/bench}
FEATURES=encode_force,var,float,enum64,decl_tag,type_tag,optimized_func,consistent_func,decl_tag_kfuncs
RUN=${RUN:-1}
scripts/setup/apt-install.sh gnuplot-nox
mkdir -p "$OUT"
if [ "$RUN" = 1 ]; then
cargo build --release --quiet --bin dwarf2btf
BIN=${CARGO_TARGET_DIR:-target}/release/dwarf2btf
VMLINUX=${VMLINUX:-$(scripts/setup/fetch-kernel.sh)}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "jobs,design,total,shared_index,owner_index,records,slack,per_owner,fold_heap" \
  >"$OUT/memory.csv"
for j in $JOBS; do
  for design in shared dashmap save-merge private; do
    line=$("$BIN" --btf_features=$FEATURES --lang_exclude=rust -j"$j" --func-table=$design \
      --stats --btf_encode_detached="$tmp/$j-$design.btf" "$VMLINUX" 2>&1 |
      grep '^function table memory')
    # "function table memory (D): T MiB: shared index A, per-owner indexes B, records C,
    #  slack D, per-owner bookkeeping E, fold heap F"
    numbers=$(echo "$line" | sed 's/^[^:]*: //' | grep -o '[0-9][0-9.]*' | paste -sd,)
    echo "$j,$design,$numbers" >>"$OUT/memory.csv"
  done
done
if [ "$(md5sum "$tmp"/*.btf | cut -d' ' -f1 | sort -u | wc -l)" != 1 ]; then
  md5sum "$tmp"/*.btf >&2
  echo "memory-figure.sh: the designs wrote different BTF" >&2
  exit 1
fi
cargo build --release --quiet -p dwarf2btf-lab
# shellcheck source=scripts/bench/provenance.sh
source scripts/bench/provenance.sh
provenance "$OUT/memory.csv" "JOBS=\"$JOBS\" OUT=$OUT scripts/bench/memory-figure.sh"
fi
column -s, -t "$OUT/memory.csv"
{
  echo "set terminal svg size 1100,460 dynamic font 'sans,12'; set output '$OUT/memory.svg'"
  echo "set datafile separator ','; set style data histograms; set style histogram rowstacked"
  echo "set style fill solid 0.8 border -1; set boxwidth 0.8; set key outside right"
  echo "set ylabel 'MiB'; set xtics font ',9'; set bmargin 4; set grid y"
  echo "set title 'function table memory on the reference kernel, counted by each design (before finish)'"
  echo "plot '$OUT/memory.csv' every ::1 using 4:xtic(sprintf(\"%s\\n-j%s\", strcol(2), strcol(1))) title 'shared index', \
    '' every ::1 using 5 title 'per-owner indexes', '' every ::1 using 6 title 'records', \
    '' every ::1 using 7 title 'slack', '' every ::1 using 8 title 'per-owner bookkeeping', \
    '' every ::1 using 9 title 'fold heap'"
} | gnuplot
echo "wrote $OUT/memory.csv, $OUT/memory.svg"
