#!/usr/bin/env bash
# The replay figure of docs/concurrency.md: replays a save trace of the reference vmlinux
# (recorded with `dwarf2btf --trace-saves` at -j2 if TRACE does not exist yet) at 1, 2 and 4
# threads against the four function-table designs, with the FuncSummary fold and the trivial
# one, RUNS interleaved runs each; writes the raw CSV, prints the summary (medians with
# bootstrap 95 % intervals) as Markdown, and draws the wall time per design (SVG, gnuplot).
#
#   scripts/bench/replay-figure.sh                       # TRACE=docs/bench/vmlinux-6.1.0-57-j2.saves
#   THREADS=1,2,4,8 RUNS=40 scripts/bench/replay-figure.sh
#   OUT=/tmp/fig scripts/bench/replay-figure.sh          # where replay.csv, replay.dat, replay.svg go
#   REPLAY=0 scripts/bench/replay-figure.sh              # summary and plot of the existing replay.csv
#   NAME=spread64 TRACE=/tmp/spread64.saves FOLDS=trivial THREADS=1,4,16,64 RUNS=10 \
#     LOGY=1 scripts/bench/replay-figure.sh              # a generated trace (dwarf2btf-lab generate),
#                                                  # wall time on a log scale
set -euo pipefail
cd "$(dirname "$0")/../.."

THREADS=${THREADS:-1,2,4}
FOLDS=${FOLDS:-summary,trivial}
NAME=${NAME:-replay}
LOGY=${LOGY:-0}
RUNS=${RUNS:-20}
REPLAY=${REPLAY:-1}
OUT=${OUT:-docs/bench}
TRACE=${TRACE:-docs/bench/vmlinux-6.1.0-57-j2.saves}
FEATURES=encode_force,var,float,enum64,decl_tag,type_tag,optimized_func,consistent_func,decl_tag_kfuncs
scripts/setup/apt-install.sh gnuplot-nox
cargo build --release --quiet --bin dwarf2btf
cargo build --release --quiet -p dwarf2btf-lab
TARGET=${CARGO_TARGET_DIR:-target}
mkdir -p "$OUT"
if [ "$REPLAY" = 1 ] && [ ! -e "$TRACE" ]; then
  VMLINUX=${VMLINUX:-$(scripts/setup/fetch-kernel.sh)}
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  "$TARGET/release/dwarf2btf" --btf_features=$FEATURES --lang_exclude=rust -j2 \
    --btf_encode_detached="$tmp/vmlinux.btf" --trace-saves="$TRACE" "$VMLINUX"
fi
if [ "$REPLAY" = 1 ]; then
  "$TARGET/release/dwarf2btf-lab" replay "$TRACE" --csv "$OUT/$NAME.csv" --threads "$THREADS" \
    --folds "$FOLDS" --runs "$RUNS"
fi
"$TARGET/release/dwarf2btf-lab" summary "$OUT/$NAME.csv" --plot-data "$OUT/$NAME.dat"
{
  echo "set terminal svg size 900,420 dynamic font 'sans,12'; set output '$OUT/$NAME.svg'"
  echo "set multiplot layout 1,$(echo "$FOLDS" | tr ',' '\n' | wc -l) title 'replay of $(basename "$TRACE") ($(nproc) CPUs): median and bootstrap 95 % interval of $RUNS runs'"
  for fold in ${FOLDS//,/ }; do
    echo "set title 'fold: $fold'; set xlabel 'threads'; set ylabel 'wall ms (saves + finish)'"
    [ "$LOGY" = 1 ] && echo "set logscale y" || echo "set yrange [0:*]"
    echo "set logscale x 2; set grid; set key below horizontal; set offsets graph 0.05, graph 0.05, 0, 0"
    printf "plot "
    first=1
    for d in shared dashmap save-merge private; do
      [ $first = 1 ] || printf ", "
      printf "'< grep \"^%s [0-9]* %s \" %s' using 2:4:5:6 with yerrorlines title '%s'" \
        "$fold" "$d" "$OUT/$NAME.dat" "$d"
      first=0
    done
    echo
  done
  echo "unset multiplot"
} | gnuplot
echo "wrote $OUT/$NAME.csv, $OUT/$NAME.dat, $OUT/$NAME.svg"
