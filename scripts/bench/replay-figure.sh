#!/usr/bin/env bash
# The replay figure of docs/concurrency.md: replays a save trace of the reference vmlinux
# (docs/bench/vmlinux-6.1.0-57-j2.saves, scripts/bench/record-trace.sh) under the pipeline's
# owner/batch semantics at each owner count in OWNERS (and, with PER_CU=1, with an owner per
# compile unit) against the four function-table designs, with the FuncSummary fold and the
# trivial one, RUNS rounds (designs in a random order per round, SEED), the recorded work
# between saves scaled by GAP (0: saves back to back); writes the raw CSV with its provenance
# sidecar, the summary (medians, paired differences with TOST against MARGIN) as Markdown, and
# draws the wall time per design (SVG, gnuplot).
#
#   scripts/bench/replay-figure.sh
#   OWNERS=1,2,4,8 RUNS=40 GAP=0.1 scripts/bench/replay-figure.sh
#   OUT=/tmp/fig scripts/bench/replay-figure.sh          # where replay.csv, .md, .dat, .svg go
#   REPLAY=0 scripts/bench/replay-figure.sh              # summary and plot of the existing replay.csv
#   NAME=spread64 TRACE=/tmp/spread64.saves FOLDS=trivial OWNERS=1,4,16,64 RUNS=10 \
#     EXTRA=--thread-per-owner LOGY=1 scripts/bench/replay-figure.sh
#                         # a generated trace (dwarf2btf-lab generate), one thread per owner,
#                         # wall time on a log scale
set -euo pipefail
cd "$(dirname "$0")/../.."

OWNERS=${OWNERS:-1,2,4}
GAP=${GAP:-0}
SEED=${SEED:-1}
MARGIN=${MARGIN:-0.05}
PER_CU=${PER_CU:-0}
EXTRA=${EXTRA:-}
FOLDS=${FOLDS:-summary,trivial}
NAME=${NAME:-replay}
LOGY=${LOGY:-0}
RUNS=${RUNS:-20}
REPLAY=${REPLAY:-1}
OUT=${OUT:-docs/bench}
TRACE=${TRACE:-docs/bench/vmlinux-6.1.0-57-j2.saves}
scripts/setup/apt-install.sh gnuplot-nox
cargo build --release --quiet --bin dwarf2btf
cargo build --release --quiet -p dwarf2btf-lab
TARGET=${CARGO_TARGET_DIR:-target}
mkdir -p "$OUT"
if [ "$REPLAY" = 1 ] && [ ! -e "$TRACE" ]; then
  OUT=$TRACE scripts/bench/record-trace.sh
fi
if [ "$REPLAY" = 1 ]; then
  cu=()
  [ "$PER_CU" = 1 ] && cu=(--per-cu)
  # shellcheck disable=SC2086
  "$TARGET/release/dwarf2btf-lab" replay "$TRACE" --csv "$OUT/$NAME.csv" --owners "$OWNERS" \
    "${cu[@]}" --folds "$FOLDS" --runs "$RUNS" --gap-scale "$GAP" --seed "$SEED" $EXTRA
fi
"$TARGET/release/dwarf2btf-lab" summary "$OUT/$NAME.csv" --margin "$MARGIN" \
  --plot-data "$OUT/$NAME.dat" | tee "$OUT/$NAME.md"
{
  echo "set terminal svg size 900,420 dynamic font 'sans,12'; set output '$OUT/$NAME.svg'"
  echo "set multiplot layout 1,$(echo "$FOLDS" | tr ',' '\n' | wc -l) title 'replay of $(basename "$TRACE") ($(nproc) CPUs): gap scale $GAP: median and bootstrap 95 % interval of $RUNS rounds'"
  for fold in ${FOLDS//,/ }; do
    echo "set title 'fold: $fold'; set xlabel 'owners'; set ylabel 'wall ms (saves + finish)'"
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
echo "wrote $OUT/$NAME.csv (and .provenance.txt), $OUT/$NAME.md, $OUT/$NAME.dat, $OUT/$NAME.svg"
