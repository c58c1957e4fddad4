# shellcheck shell=bash
# What the benchmark scripts share: source this file. `bench_setup` (below) prepares a run;
# `timed LOG CMD...` runs CMD once under GNU time with its output in LOG, and writes
# "wall_s,cpu_s,peak_rss_kib" (CPU = user + system) to LOG.row. A failing CMD prints LOG and
# ends the script.
timed() {
  local log=$1
  shift
  if ! /usr/bin/time -f "%e %U %S %M" -o "$log.time" "$@" > "$log" 2>&1; then
    echo "failed: $* (see below)" >&2
    cat "$log" >&2
    exit 1
  fi
  awk '{printf "%.2f,%.2f,%d\n", $1, $2 + $3, $4}' "$log.time" > "$log.row"
}

# bench_setup: what a timing script starts with, from the repository's root: GNU time and
# gnuplot installed, the release binary built ($BIN), a scratch directory ($TMP, removed at
# exit), and $OUT created.
bench_setup() {
  scripts/setup/apt-install.sh time gnuplot-nox
  cargo build --release --quiet
  BIN=${CARGO_TARGET_DIR:-target}/release/dwarf2btf
  TMP=$(mktemp -d)
  trap 'rm -rf "$TMP"' EXIT
  mkdir -p "$OUT"
}
