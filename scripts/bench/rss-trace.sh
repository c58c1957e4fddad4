#!/usr/bin/env bash
# Resident memory over time: runs each encoder on the reference vmlinux with the kernel's
# flags, samples its VmRSS from /proc every 20 ms (plus the sampler's own overhead), writes
# one CSV per run (seconds, MiB) and draws them in one SVG (gnuplot), so that where each MiB
# goes can be read against the phases.
#
#   scripts/bench/rss-trace.sh                          # target/release/dwarf2btf and Debian's pahole, -j2
#   BINS="old=/tmp/dwarf2btf-old new=target/release/dwarf2btf" scripts/bench/rss-trace.sh
#   PAHOLE=/opt/pahole-head/bin/pahole JOBS=4 OUT=docs/bench scripts/bench/rss-trace.sh
#
# BINS lists dwarf2btf binaries as LABEL=PATH; PAHOLE="" leaves pahole out. Writes
# $OUT/rss-trace-LABEL.csv and $OUT/rss-trace.svg (OUT defaults to docs/bench).
set -euo pipefail
cd "$(dirname "$0")/../.."

JOBS=${JOBS:-2}
OUT=${OUT:-docs/bench}
PAHOLE=${PAHOLE-pahole}
VMLINUX=${VMLINUX:-$(scripts/setup/fetch-kernel.sh)}
if [ -z "${BINS:-}" ]; then
  cargo build --release --quiet
  BINS="dwarf2btf=target/release/dwarf2btf"
fi
scripts/setup/apt-install.sh gnuplot-nox
FEATURES=encode_force,var,float,enum64,decl_tag,type_tag,optimized_func,consistent_func,decl_tag_kfuncs
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
mkdir -p "$OUT"

# trace LABEL CMD...: runs CMD, sampling its resident set until it exits.
trace() {
  local label=$1 csv="$OUT/rss-trace-$1.csv"
  shift
  "$@" > /dev/null 2>&1 &
  local pid=$! start
  start=$(date +%s.%N)
  echo "seconds,rss_mib" > "$csv"
  while kb=$(awk '/^VmRSS:/ {print $2}' "/proc/$pid/status" 2>/dev/null) && [ -n "$kb" ]; do
    awk -v t="$(date +%s.%N)" -v s="$start" -v kb="$kb" 'BEGIN {printf "%.3f,%.1f\n", t - s, kb / 1024}' >> "$csv"
    sleep 0.02
  done
  wait "$pid"
  local peak
  peak=$(sort -t, -k2 -n "$csv" | tail -n 1 | cut -d, -f2)
  echo "$label: peak sampled RSS $peak MiB, $(($(wc -l < "$csv") - 1)) samples -> $csv"
}

labels=()
for b in $BINS; do
  label=${b%%=*} bin=${b#*=}
  trace "$label" "$bin" -J "-j$JOBS" "--btf_features=$FEATURES" --lang_exclude=rust \
    "--btf_encode_detached=$TMP/$label.btf" "$VMLINUX"
  labels+=("$label")
done
if [ -n "$PAHOLE" ]; then
  # Debian's pahole (1.24) knows neither --btf_features nor these spellings of every flag:
  # the kernel's flags for its version, as scripts/bench/bench-matrix.sh passes them.
  flags=(--lang_exclude=rust)
  if "$PAHOLE" --help 2>&1 | grep -q -- --btf_features; then
    flags+=("--btf_features=$FEATURES")
  else
    flags+=(--btf_gen_floats)
  fi
  label="pahole-$("$PAHOLE" --version | tr -d ' ')"
  trace "$label" "$PAHOLE" -J "-j$JOBS" "${flags[@]}" "--btf_encode_detached=$TMP/pahole.btf" "$VMLINUX"
  labels+=("$label")
fi

{
  echo "set terminal svg size 760,440 dynamic font 'sans,12'; set output '$OUT/rss-trace.svg'"
  echo "set datafile separator ','; set key outside right; set grid"
  echo "set xlabel 'seconds'; set ylabel 'resident (MiB)'; set yrange [0:*]"
  echo "set title '$(basename "$VMLINUX"), -j$JOBS, $(nproc) CPUs, VmRSS sampled every 20-40 ms'"
  printf "plot "
  sep=""
  for label in "${labels[@]}"; do
    printf "%s'%s' using 1:2 every ::1 with lines title '%s'" "$sep" "$OUT/rss-trace-$label.csv" "$label"
    sep=", "
  done
  echo
} | gnuplot
echo "wrote $OUT/rss-trace.svg"
