#!/usr/bin/env bash
# Before/after of one change, interleaved: replays a trace with two dwarf2btf-lab binaries in
# alternation (ROUNDS rounds, RUNS runs each per round), renames the design column of each
# binary's rows to DESIGN-LABEL, and writes one CSV that `dwarf2btf-lab summary` reads.
# Build the two binaries from the two source states first (docs/concurrency.md, "Padding,
# shards and backoff", says which).
#
#   A=/tmp/lab-packed B=/tmp/lab-padded LABELS=packed,padded DESIGN=shared \
#     OUT=docs/bench/padding.csv scripts/bench/replay-ab.sh
#   A=/tmp/lab-default B=/tmp/lab-explicit LABELS=default,explicit DESIGN=dashmap \
#     TRACE=/tmp/spread64.saves THREADS=2,16,64 FOLDS=trivial ROUNDS=5 RUNS=2 \
#     OUT=docs/bench/shards.csv scripts/bench/replay-ab.sh
set -euo pipefail
cd "$(dirname "$0")/../.."

TRACE=${TRACE:-docs/bench/vmlinux-6.1.0-57-j2.saves}
THREADS=${THREADS:-1,2}
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
    "$bin" replay "$TRACE" --csv "$tmp/$label-$i.csv" --threads "$THREADS" --folds "$FOLDS" \
      --designs "$DESIGN" --runs "$RUNS" 2>/dev/null
  done
done
{
  head -1 "$tmp/$label_a-1.csv"
  for label in "$label_a" "$label_b"; do
    for f in "$tmp/$label"-*.csv; do tail -n +2 "$f" | sed "s/^$DESIGN,/$DESIGN-$label,/"; done
  done
} >"$OUT"
"$A" summary "$OUT"
