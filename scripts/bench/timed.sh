# shellcheck shell=bash
# The benchmark scripts' one way to time a run: source this file, then
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
