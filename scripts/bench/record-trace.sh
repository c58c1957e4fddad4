#!/usr/bin/env bash
# Records the reference kernel's save trace with today's pipeline: the Debian 6.1.0-57 cloud
# vmlinux at -j2 with the kernel's flags (as scripts/bench/*.sh), `--trace-saves`, to
# docs/bench/vmlinux-6.1.0-57-j2.saves (or OUT), with its provenance sidecar (the input's
# hash, the trace's format and pipeline version, the recording run's wall time and load).
# Record again whenever functions::trace::PIPELINE_VERSION or FORMAT_VERSION changes: the lab
# refuses a trace of another version.
#
#   scripts/bench/record-trace.sh
#   JOBS=64 OUT=/tmp/j64.saves scripts/bench/record-trace.sh
set -euo pipefail
cd "$(dirname "$0")/../.."

JOBS=${JOBS:-2}
OUT=${OUT:-docs/bench/vmlinux-6.1.0-57-j$JOBS.saves}
FEATURES=encode_force,var,float,enum64,decl_tag,type_tag,optimized_func,consistent_func,decl_tag_kfuncs
VMLINUX=${VMLINUX:-$(scripts/setup/fetch-kernel.sh)}
cargo build --release --quiet --bin dwarf2btf
cargo build --release --quiet -p dwarf2btf-lab
TARGET=${CARGO_TARGET_DIR:-target}
# shellcheck source=scripts/bench/provenance.sh
source scripts/bench/provenance.sh
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
load=$(cut -d' ' -f1-3 /proc/loadavg)
start=$(date +%s.%N)
"$TARGET/release/dwarf2btf" --btf_features=$FEATURES --lang_exclude=rust -j"$JOBS" \
  --btf_encode_detached="$tmp/vmlinux.btf" --trace-saves="$OUT" "$VMLINUX"
wall=$(echo "$(date +%s.%N) - $start" | bc)
provenance "$OUT" "JOBS=$JOBS OUT=$OUT scripts/bench/record-trace.sh ($TARGET/release/dwarf2btf --btf_features=$FEATURES --lang_exclude=rust -j$JOBS --trace-saves=$OUT $(basename "$VMLINUX"))"
{
  echo "input: $(basename "$VMLINUX") (scripts/setup/fetch-kernel.sh), sha256 $(sha256sum "$VMLINUX" | cut -c1-64)"
  echo "recording run: $(printf %.1f "$wall") s wall, load before $load"
  echo "trace sha256: $(sha256sum "$OUT" | cut -c1-64)"
  "$TARGET/release/dwarf2btf-lab" inspect "$OUT" --threads "$JOBS"
} >>"$OUT.provenance.txt"
cat "$OUT.provenance.txt"
