#!/usr/bin/env bash
# Every figure and table of docs/concurrency.md that comes from the function-table lab and the
# committed trace (docs/bench/vmlinux-6.1.0-57-j2.saves), rebuilt by one command into dated
# run folders docs/bench/runs/DATE-TOPIC/, each with its CSVs, their provenance sidecars
# (FILE.provenance.txt), the printed tables and a README.md:
#
#   DATE-replay-saves    the replay, saves back to back (gap 0): the tables' own costs, at
#                        OWNERS owners and with an owner per CU (replay.csv, replay.md, .svg)
#   DATE-replay-gaps     the replay at GAP times the recorded work between saves, at
#                        GAP_OWNERS owners and with an owner per CU
#   DATE-instructions    instructions per design (valgrind callgrind; INSTRUCTIONS=0 skips)
#   DATE-model           the contention model and its check (MODEL=0 skips)
#   DATE-memory          the counted memory per design on the kernel (MEMORY=0 skips)
#
#   scripts/figures.sh                                  # RUNS=10 rounds, GAP=0.1
#   RUNS=40 GAP=1 OWNERS=1,2,4,8,16,32,64 GAP_OWNERS=2,8,64 scripts/figures.sh   # many cores
#
# Each replay round runs every cell once, the designs in a random order (SEED); the summaries
# pair the designs by round and test equivalence within MARGIN of save-merge's median.
set -euo pipefail
cd "$(dirname "$0")/.."

RUNS=${RUNS:-10}
GAP=${GAP:-0.1}
OWNERS=${OWNERS:-1,2}
GAP_OWNERS=${GAP_OWNERS:-2}
SEED=${SEED:-1}
MARGIN=${MARGIN:-0.05}
INSTRUCTIONS=${INSTRUCTIONS:-1}
MODEL=${MODEL:-1}
MEMORY=${MEMORY:-1}
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

replay replay-saves 0 "$OWNERS" "Replay, saves back to back"
replay replay-gaps "$GAP" "$GAP_OWNERS" "Replay at $GAP × the recorded gaps"

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
echo "wrote $RUNS_DIR/$DATE-*"
