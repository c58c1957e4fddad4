#!/usr/bin/env bash
# Every figure and table of docs/concurrency.md that comes from the function-table lab and the
# committed trace (docs/bench/vmlinux-6.1.0-57-j2.saves), rebuilt by one command into dated
# run folders docs/bench/runs/DATE-TOPIC/, each with its CSVs, their provenance sidecars
# (FILE.provenance.txt), the printed tables and a README.md:
#
#   DATE-replay-saves    the replay, saves back to back (gap 0): the tables' own costs, at
#                        OWNERS owners and with an owner per CU (replay.csv, replay.md, .svg)
#   DATE-replay-gaps     the replay at GAP times the recorded work between saves, at
#                        GAP_OWNERS owners and with an owner per CU (REPLAYS=0 skips both)
#   DATE-replay-gap1     the replay at the recorded gaps, -j2, summary fold, GAP1_RUNS rounds
#                        (GAP1=1 runs it: about 7 minutes on 2 cores)
#   DATE-instructions    instructions per design (valgrind callgrind; INSTRUCTIONS=0 skips)
#   DATE-model           the contention model and its check (MODEL=0 skips)
#   DATE-memory          the counted memory per design on the kernel (MEMORY=0 skips)
#   DATE-end-to-end      the reference vmlinux encoded by every design and by pahole 1.32 at
#                        JOBS, alternating rounds: wall, CPU, peak RSS and the tables'
#                        counters (END_TO_END=0 skips); REAL_PAHOLES="LABEL=PATH ..." adds
#                        pahole binaries built elsewhere (scripts/bench/bench-real-designs.sh,
#                        at -j REAL_JOBS, into DATE-end-to-end/real/)
#   DATE-spread          generated many-owners traces, one thread per owner (SPREAD=0 skips);
#                        its plots are copied to docs/bench/spread64.svg and spread1.svg
#   DATE-pinning         pinned against unpinned replays (PINNING=0 skips)
#
# Then every generated table of docs/concurrency.md (its `<!-- table ... -->` blocks) is
# rewritten from the newest run folders (scripts/bench/doc-tables.py).
#
#   scripts/figures.sh                                  # RUNS=10 rounds, GAP=0.1
#   RUNS=40 GAP=1 OWNERS=1,2,4,8,16,32,64 GAP_OWNERS=2,8,64 scripts/figures.sh   # many cores
#
# Each replay round runs every cell once, the designs in a random order (SEED); the summaries
# pair the designs by round and test equivalence within MARGIN of save-merge's median.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/bench/provenance.sh
source scripts/bench/provenance.sh

RUNS=${RUNS:-10}
GAP=${GAP:-0.1}
OWNERS=${OWNERS:-1,2}
GAP_OWNERS=${GAP_OWNERS:-2}
SEED=${SEED:-1}
MARGIN=${MARGIN:-0.05}
INSTRUCTIONS=${INSTRUCTIONS:-1}
MODEL=${MODEL:-1}
MEMORY=${MEMORY:-1}
REPLAYS=${REPLAYS:-1}
GAP1=${GAP1:-0}
GAP1_RUNS=${GAP1_RUNS:-5}
END_TO_END=${END_TO_END:-1}
SPREAD=${SPREAD:-1}
PINNING=${PINNING:-1}
JOBS=${JOBS:-"1 2 8 64"}
REAL_PAHOLES=${REAL_PAHOLES:-}
REAL_JOBS=${REAL_JOBS:-"1 2 8"}
TRACE=${TRACE:-docs/bench/vmlinux-6.1.0-57-j2.saves}
DATE=$(date -u +%Y-%m-%d)
RUNS_DIR=${RUNS_DIR:-docs/bench/runs}
export TRACE
cargo build --release --quiet -p dwarf2btf-lab
LAB=${CARGO_TARGET_DIR:-target}/release/dwarf2btf-lab
"$LAB" inspect "$TRACE" >/dev/null # refuses a trace of another format or pipeline version

# readme DIR TITLE COMMAND TEXT: DIR/README.md
readme() {
  {
    echo "# $2 ($DATE)"
    echo
    echo "$4"
    echo
    echo "Made by \`$3\` (from \`scripts/figures.sh\`), on $(nproc) CPUs ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //')), load $(cut -d' ' -f1-3 /proc/loadavg) at the end. Every CSV has a \`.provenance.txt\` sidecar: commit, rustc, CPU, cores, load, date, command."
    echo
    echo "Files: $(cd "$1" && ls | grep -v README.md | tr '\n' ' ')"
  } >"$1/README.md"
}

replay() { # replay TOPIC GAP OWNERS TITLE
  local dir=$RUNS_DIR/$DATE-$1
  mkdir -p "$dir"
  NAME=replay OUT=$dir GAP=$2 OWNERS=$3 PER_CU=1 RUNS=$RUNS SEED=$SEED MARGIN=$MARGIN \
    scripts/bench/replay-figure.sh
  readme "$dir" "$4" "NAME=replay OUT=$dir GAP=$2 OWNERS=$3 PER_CU=1 RUNS=$RUNS SEED=$SEED MARGIN=$MARGIN scripts/bench/replay-figure.sh" \
    "The reference trace replayed under the pipeline's owner/batch semantics (owner = batch mod N, a batch's saves one burst, each owner's batches in order) and with an owner per CU, recorded work between saves scaled by $2, $RUNS rounds, designs in a random order per round (seed $SEED). \`replay.md\` has the per-cell medians with bootstrap 95 % intervals, the paired differences (shared minus each other design, per round) with a ±$(echo "$MARGIN * 100" | bc | sed 's/\.0*$//') % equivalence margin and TOST verdicts, and the memory counted."
}

if [ "$REPLAYS" = 1 ]; then
  replay replay-saves 0 "$OWNERS" "Replay, saves back to back"
  replay replay-gaps "$GAP" "$GAP_OWNERS" "Replay at $GAP × the recorded gaps"
fi
if [ "$GAP1" = 1 ]; then
  dir=$RUNS_DIR/$DATE-replay-gap1
  mkdir -p "$dir"
  command="NAME=replay OUT=$dir GAP=1 OWNERS=2 FOLDS=summary RUNS=$GAP1_RUNS SEED=$SEED MARGIN=$MARGIN scripts/bench/replay-figure.sh"
  NAME=replay OUT=$dir GAP=1 OWNERS=2 FOLDS=summary RUNS=$GAP1_RUNS SEED=$SEED MARGIN=$MARGIN \
    scripts/bench/replay-figure.sh
  readme "$dir" "Replay at the recorded gaps" "$command" \
    "The reference trace replayed at the recorded work between saves (gap 1, about 12.7 s of CPU per run), -j2, summary fold, $GAP1_RUNS rounds, designs in a random order per round (seed $SEED): \`replay.md\` has the medians and the paired differences against a ±$(echo "$MARGIN * 100" | bc | sed 's/\.0*$//') % margin."
fi

if [ "$INSTRUCTIONS" = 1 ]; then
  dir=$RUNS_DIR/$DATE-instructions
  mkdir -p "$dir"
  OUT=$dir OWNERS=$GAP_OWNERS PER_CU=1 scripts/bench/replay-instructions.sh | tee "$dir/instructions.txt"
  readme "$dir" "Instructions per design" "OUT=$dir OWNERS=$GAP_OWNERS PER_CU=1 scripts/bench/replay-instructions.sh" \
    "Instructions each design executes in the replay's saves and \`finish\` (valgrind callgrind, \`--toggle-collect\` on \`measured_burst\` and \`measured_finish\`), saves back to back: a deterministic cost, unlike wall and CPU time. The VM has no hardware counters (\`perf stat\` cannot count instructions here)."
fi
if [ "$MODEL" = 1 ]; then
  dir=$RUNS_DIR/$DATE-model
  mkdir -p "$dir"
  RUNS=3 OUT=$dir LAB=$LAB scripts/bench/model-figure.sh | tee "$dir/model-check.txt"
  readme "$dir" "The contention model" "RUNS=3 OUT=$dir scripts/bench/model-figure.sh" \
    "The contention model over the reference trace (1-64 cores, recorded schedule), over generated many-owner workloads, and its check against counted CAS failures and shard lock waits of replays on this machine."
fi
if [ "$MEMORY" = 1 ]; then
  dir=$RUNS_DIR/$DATE-memory
  mkdir -p "$dir"
  OUT=$dir scripts/bench/memory-figure.sh | tee "$dir/memory.txt"
  readme "$dir" "Memory per design, counted" "OUT=$dir scripts/bench/memory-figure.sh" \
    "The function table's memory each design counts (\`dwarf2btf --stats\`) on the reference kernel at -j1, -j2 and -j64, MiB per part."
fi
if [ "$END_TO_END" = 1 ]; then
  dir=$RUNS_DIR/$DATE-end-to-end
  mkdir -p "$dir"
  pahole_1_32=$(scripts/setup/fetch-pahole-1.32.sh)
  command="JOBS=\"$JOBS\" RUNS=3 DESIGNS=\"shared dashmap save-merge private\" OUT=$dir scripts/bench/bench-matrix.sh"
  JOBS=$JOBS RUNS=3 DESIGNS="shared dashmap save-merge private" OUT=$dir \
    PAHOLE=$pahole_1_32 scripts/bench/bench-matrix.sh | tee "$dir/tables.md"
  LAB=$LAB provenance "$dir/matrix.csv" "$command"
  real_text=
  if [ -n "$REAL_PAHOLES" ]; then
    # shellcheck disable=SC2086 # one LABEL=PATH word each
    JOBS=$REAL_JOBS RUNS=3 OUT=$dir/real scripts/bench/bench-real-designs.sh $REAL_PAHOLES \
      "pahole-1.32=$pahole_1_32" | tee "$dir/real-tables.md"
    LAB=$LAB provenance "$dir/real/matrix.csv" "JOBS=\"$REAL_JOBS\" RUNS=3 OUT=$dir/real scripts/bench/bench-real-designs.sh $REAL_PAHOLES pahole-1.32=\$(scripts/setup/fetch-pahole-1.32.sh)"
    real_text=" \`real-tables.md\` and \`real/\` (scripts/bench/bench-real-designs.sh at -j $REAL_JOBS): the upstream pahole builds $REAL_PAHOLES beside pahole 1.32 and the four designs, with each output's FUNC count."
  fi
  readme "$dir" "End to end: every design and pahole 1.32 on the reference vmlinux" "$command" \
    "The reference vmlinux encoded with the kernel's flags by each function-table design and by Debian unstable's pahole 1.32 at -j $JOBS, 3 alternating rounds: \`tables.md\` has the medians (wall, CPU, peak RSS, ratios) and the tables' counters (per-owner folds, contention, instances held, the final pass).$real_text"
fi
if [ "$SPREAD" = 1 ]; then
  dir=$RUNS_DIR/$DATE-spread
  mkdir -p "$dir"
  for spread in 64 1; do
    "$LAB" generate --out "$dir/spread$spread.saves" --functions 4096 --saves 200000 \
      --spread "$spread" --batch-saves 100
    NAME=spread$spread TRACE=$dir/spread$spread.saves FOLDS=trivial OWNERS=1,4,16,64 RUNS=10 \
      SEED=$SEED MARGIN=$MARGIN EXTRA=--thread-per-owner LOGY=1 OUT=$dir scripts/bench/replay-figure.sh
    rm "$dir/spread$spread.saves" # 11 MB, deterministic in the command
  done
  readme "$dir" "Many owners per function (generated)" \
    "dwarf2btf-lab generate --out T --functions 4096 --saves 200000 --spread S --batch-saves 100; NAME=spreadS TRACE=T FOLDS=trivial OWNERS=1,4,16,64 RUNS=10 SEED=$SEED MARGIN=$MARGIN EXTRA=--thread-per-owner LOGY=1 OUT=$dir scripts/bench/replay-figure.sh (S = 64, then 1)" \
    "200,000 saves into 4,096 functions, each function's instances spread over up to 64 batches of 100 saves (spread64: 4, 15 and 34 owners per function at 4, 16 and 64 threads) or in one batch (spread1: one owner), one thread per owner, trivial fold, 10 rounds. The traces are regenerated by the command (deterministic), not kept."
  cp "$dir/spread64.svg" "$dir/spread1.svg" docs/bench/
fi
if [ "$PINNING" = 1 ]; then
  dir=$RUNS_DIR/$DATE-pinning
  mkdir -p "$dir"
  OUT=$dir LAB=$LAB scripts/bench/pin-figure.sh
  readme "$dir" "Pinned and unpinned" "OUT=$dir scripts/bench/pin-figure.sh" \
    "The reference trace at 2 owners, shared and save-merge, summary fold, saves back to back: 10 rounds, each one pinned and one unpinned replay (which goes first alternates)."
fi
scripts/bench/doc-tables.py docs/concurrency.md
echo "wrote $RUNS_DIR/$DATE-*"
