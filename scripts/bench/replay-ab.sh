#!/usr/bin/env bash
# Before/after of one change, interleaved: replays a trace with two dwarf2btf-lab binaries in
# alternation (ROUNDS rounds, RUNS runs each per round), renames the design column of each
# binary's rows to DESIGN-LABEL, and writes one CSV that `dwarf2btf-lab summary` reads, with
# its provenance sidecar. Rounds are numbered across the script's rounds, so the summary pairs
# the two binaries' runs of the same round.
# Build the two binaries from the two source states first (docs/concurrency.md, "Padding,
# shards and backoff", says which).
#
#   A=/tmp/lab-packed B=/tmp/lab-padded LABELS=packed,padded DESIGN=shared \
#     OUT=/tmp/padding.csv scripts/bench/replay-ab.sh
#   A=/tmp/lab-default B=/tmp/lab-explicit LABELS=default,explicit DESIGN=dashmap \
#     TRACE=/tmp/spread64.saves OWNERS=2,16,64 FOLDS=trivial ROUNDS=5 RUNS=2 \
#     OUT=/tmp/shards.csv scripts/bench/replay-ab.sh
set -euo pipefail
cd "$(dirname "$0")/../.."

TRACE=${TRACE:-docs/bench/vmlinux-6.1.0-57-j2.saves}
OWNERS=${OWNERS:-1,2}
GAP=${GAP:-0}
FOLDS=${FOLDS:-trivial,summary}
ROUNDS=${ROUNDS:-8}
RUNS=${RUNS:-4}
IFS=, read -r label_a label_b <<<"${LABELS:-a,b}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for i in $(seq 1 "$ROUNDS"); do
  for side in a b; do
    bin=$A label=$label_a
    [ $side = b ] && bin=$B label=$label_b
    "$bin" replay "$TRACE" --csv "$tmp/$label-$i.csv" --owners "$OWNERS" --folds "$FOLDS" \
      --designs "$DESIGN" --runs "$RUNS" --gap-scale "$GAP" --seed "$i" 2>"$tmp/log" ||
      { cat "$tmp/log" >&2; exit 1; }
  done
done
{
  head -1 "$tmp/$label_a-1.csv"
  for label in "$label_a" "$label_b"; do
    for i in $(seq 1 "$ROUNDS"); do
      # round (column 7) numbered across the script's rounds: (i - 1) * RUNS + round
      tail -n +2 "$tmp/$label-$i.csv" | sed "s/^$DESIGN,/$DESIGN-$label,/" |
        awk -F, -v OFS=, -v i="$i" -v r="$RUNS" '{ $7 = (i - 1) * r + $7; print }'
    done
  done
} >"$OUT"
# shellcheck source=scripts/bench/provenance.sh
source scripts/bench/provenance.sh
LAB=$A provenance "$OUT" "A=$A B=$B LABELS=$label_a,$label_b DESIGN=$DESIGN TRACE=$TRACE OWNERS=$OWNERS FOLDS=$FOLDS ROUNDS=$ROUNDS RUNS=$RUNS GAP=$GAP OUT=$OUT scripts/bench/replay-ab.sh"
"$A" summary "$OUT"
