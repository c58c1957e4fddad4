#!/usr/bin/env bash
# Pinned against unpinned replays (docs/concurrency.md, "Pinned and unpinned"): the reference
# trace at 2 owners, shared and save-merge, summary fold, saves back to back, ROUNDS rounds of
# one pinned and one unpinned replay (which goes first alternates), each replay one warm-up
# and one timed run per design. Writes OUT/pinning.csv (the replay's columns; `pinned` is
# the last, the round is put in `run`) with its provenance sidecar and OUT/pinning.md (the
# lab's summary of it).
#
#   OUT=/tmp/pin scripts/bench/pin-figure.sh
#   ROUNDS=20 OUT=/tmp/pin scripts/bench/pin-figure.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
source scripts/bench/provenance.sh

ROUNDS=${ROUNDS:-10}
OUT=${OUT:-docs/bench}
TRACE=${TRACE:-docs/bench/vmlinux-6.1.0-57-j2.saves}
cargo build --release --quiet -p dwarf2btf-lab
LAB=${CARGO_TARGET_DIR:-target}/release/dwarf2btf-lab
mkdir -p "$OUT"
CSV=$OUT/pinning.csv
ONE=$(mktemp)
trap 'rm -f "$ONE"' EXIT
rm -f "$CSV"
for i in $(seq 1 "$ROUNDS"); do
  if [ $((i % 2)) = 1 ]; then order="--pin -"; else order="- --pin"; fi
  for flag in $order; do
    [ "$flag" = - ] && flag=
    echo "round $i/$ROUNDS ${flag:-unpinned}" >&2
    rm -f "$ONE"
    # shellcheck disable=SC2086 # $flag is one flag or none
    "$LAB" replay "$TRACE" --csv "$ONE" --owners 2 --designs shared,save-merge \
      --folds summary --runs 1 --gap-scale 0 $flag > /dev/null
    [ -f "$CSV" ] || head -1 "$ONE" > "$CSV"
    tail -n +2 "$ONE" | awk -F, -v OFS=, -v i="$i" '{ $7 = i; print }' >> "$CSV"
  done
done
LAB=$LAB provenance "$CSV" "ROUNDS=$ROUNDS OUT=$OUT TRACE=$TRACE scripts/bench/pin-figure.sh"
"$LAB" summary "$CSV" | tee "$OUT/pinning.md"
