# shellcheck shell=bash
# The provenance sidecar of every CSV (and trace) the lab's scripts write: source this file,
# then `provenance FILE "COMMAND"` writes FILE.provenance.txt (date, commit, rustc, CPU model,
# cores, load, pipeline version, command) through `dwarf2btf-lab provenance`, the same code
# that writes the sidecar of `dwarf2btf-lab replay --csv`. Needs $LAB (the lab binary) or a
# release build of it in ${CARGO_TARGET_DIR:-target}.
provenance() {
  local lab=${LAB:-${CARGO_TARGET_DIR:-target}/release/dwarf2btf-lab}
  "$lab" provenance "$1" --command "$2"
}
