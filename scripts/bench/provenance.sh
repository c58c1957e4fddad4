# shellcheck shell=bash
# The provenance sidecar of every CSV (and trace) the lab's scripts write: source this file,
# then `provenance FILE "COMMAND"` writes FILE.provenance.txt (date, commit, rustc, CPU model,
# cores, load, pipeline version, command) through `dwarf2btf-lab provenance`, the same code
# that writes the sidecar of `dwarf2btf-lab replay --csv`. The commit is the one the lab was
# built from, so without $LAB (a lab binary to use as it is) the lab is built first: a lab
# left from an older checkout would name that checkout's commit.
provenance() {
  local lab=${LAB:-}
  if [ -z "$lab" ]; then
    cargo build --release --quiet -p dwarf2btf-lab
    lab=${CARGO_TARGET_DIR:-target}/release/dwarf2btf-lab
  fi
  "$lab" provenance "$1" --command "$2"
}
