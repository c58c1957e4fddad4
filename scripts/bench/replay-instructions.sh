#!/usr/bin/env bash
# Deterministic costs of the function-table designs: the instructions each design executes
# replaying the reference trace, counted by valgrind's callgrind (this machine's VM has no
# hardware performance counters, so `perf stat` cannot count instructions here). Only the
# replay's saves (`measured_burst`: each burst under its owner's lock) and `finish`
# (`measured_finish`) are counted (`--toggle-collect`), saves back to back (gap 0), one
# warm-up and one timed run, so the count is halved. Writes OUT/instructions.csv (design,
# fold, mapping, owners, saves, instructions, per save) with its provenance sidecar.
#
#   scripts/bench/replay-instructions.sh
#   OUT=/tmp/fig OWNERS=2,64 PER_CU=0 scripts/bench/replay-instructions.sh
set -euo pipefail
cd "$(dirname "$0")/../.."

OUT=${OUT:-docs/bench}
TRACE=${TRACE:-docs/bench/vmlinux-6.1.0-57-j2.saves}
OWNERS=${OWNERS:-2}
PER_CU=${PER_CU:-1}
FOLDS=${FOLDS:-summary,trivial}
DESIGNS=${DESIGNS:-shared,dashmap,save-merge,private}
command -v valgrind >/dev/null || scripts/setup/apt-install.sh valgrind
cargo build --release --quiet -p dwarf2btf-lab
LAB=$(realpath "${CARGO_TARGET_DIR:-target}/release/dwarf2btf-lab")
# shellcheck source=scripts/bench/provenance.sh
source scripts/bench/provenance.sh
"$LAB" inspect "$TRACE" >/dev/null # refuses a trace of another format or pipeline version
saves=$("$LAB" inspect "$TRACE" | sed -n 's/^\([0-9]*\) saves into.*/\1/p')
mkdir -p "$OUT"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
csv=$OUT/instructions.csv
echo "design,fold,mapping,owners,saves,instructions,per_save" >"$csv"
regimes=()
for n in ${OWNERS//,/ }; do regimes+=("--owners $n"); done
[ "$PER_CU" = 1 ] && regimes+=("--owners 0 --per-cu")
for regime in "${regimes[@]}"; do
  for fold in ${FOLDS//,/ }; do
    for design in ${DESIGNS//,/ }; do
      # shellcheck disable=SC2086
      valgrind --tool=callgrind --callgrind-out-file="$tmp/cg.out" --collect-atstart=no \
        --toggle-collect='*measured_burst*' --toggle-collect='*measured_finish*' \
        "$LAB" replay "$TRACE" --csv "$tmp/r.csv" $regime --designs "$design" --folds "$fold" \
        --runs 1 --gap-scale 0 --no-latency 2>"$tmp/log" || { cat "$tmp/log" >&2; exit 1; }
      ir=$(sed -n 's/^summary: //p' "$tmp/cg.out" | tr -d ' ')
      mapping=$(awk -F, 'NR == 2 { print $3 }' "$tmp/r.csv")
      owners=$(awk -F, 'NR == 2 { print $4 }' "$tmp/r.csv")
      per_run=$((ir / 2))
      echo "$design,$fold,$mapping,$owners,$saves,$per_run,$(echo "scale=1; $per_run / $saves" | bc)" >>"$csv"
      echo "$design $fold $mapping $owners: $per_run instructions" >&2
    done
  done
done
provenance "$csv" "OUT=$OUT TRACE=$TRACE OWNERS=$OWNERS PER_CU=$PER_CU FOLDS=$FOLDS DESIGNS=$DESIGNS scripts/bench/replay-instructions.sh (valgrind $(valgrind --version))"
column -s, -t "$csv"
