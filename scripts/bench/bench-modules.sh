#!/usr/bin/env bash
# Encodes every module of the reference kernel (Debian 6.1.0-57 cloud -dbg, 1,121 .ko with
# DWARF) as split BTF against the vmlinux BTF, two processes at a time as `make -j2` runs them
# (`xargs -P2`, one process per module, -j1, the kernel's module flags), with dwarf2btf and
# with pahole, in turn (A B A B ...) so that drift cancels. Prints wall, user, sys and peak RSS
# (the largest of any one process) per run, the medians, and the ratios dwarf2btf / pahole.
#
#   PAHOLE=/path/to/pahole scripts/bench/bench-modules.sh     # default: pahole from PATH
#   RUNS=3 MODULES_STEP=4 scripts/bench/bench-modules.sh      # 3 runs each, every 4th module
#
# Output files go to a temporary directory that is removed at the end.
set -euo pipefail
cd "$(dirname "$0")/../.."

PAHOLE=${PAHOLE:-pahole}
RUNS=${RUNS:-2}
STEP=${MODULES_STEP:-1}
MODULES=${MODULES:-$(scripts/setup/fetch-kernel.sh --modules)}
BASE=${BASE:-$(scripts/setup/oracle.sh vmlinux-6.1.0-57-cloud-amd64.pahole-1.32.btf)}
cargo build --release --quiet
BIN=$PWD/target/release/dwarf2btf
FLAGS="-j1 --btf_features=encode_force,var,float,enum64,decl_tag,type_tag,optimized_func,consistent_func,decl_tag_kfuncs --lang_exclude=rust"
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

(cd "$MODULES" && find . -name '*.ko' | sort) | awk -v s="$STEP" 'NR % s == 0' > "$WORK/list"
echo "== $(wc -l < "$WORK/list") modules, $RUNS runs per tool, pahole: $("$PAHOLE" --version)"

# One run of TOOL over every module: "wall user sys maxrss_kb" on stdout.
run() {
  local tool=$1 out=$WORK/out
  rm -rf "$out" && mkdir -p "$out"
  export TOOL=$tool FLAGS BASE MODULES out
  /usr/bin/time -f "%e %U %S" -o "$WORK/time" \
    xargs -P2 -I{} sh -c '/usr/bin/time -f %M -a -o "$out/rss" $TOOL $FLAGS --btf_base="$BASE" \
      --btf_encode_detached="$out/$(echo {} | tr / _).btf" "$MODULES/{}" > /dev/null 2>&1 || true' \
    < "$WORK/list"
  echo "$(cat "$WORK/time") $(sort -n "$out/rss" | tail -1)"
}

median() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

: > "$WORK/d2b"; : > "$WORK/pahole"
for i in $(seq "$RUNS"); do
  r=$(run "$BIN"); echo "dwarf2btf run $i: wall/user/sys s, peak KB: $r"; echo "$r" >> "$WORK/d2b"
  r=$(run "$PAHOLE"); echo "pahole    run $i: wall/user/sys s, peak KB: $r"; echo "$r" >> "$WORK/pahole"
done

summary() {
  local f=$1
  local wall cpu rss
  wall=$(awk '{ print $1 }' "$f" | median)
  cpu=$(awk '{ print $2 + $3 }' "$f" | median)
  rss=$(awk '{ print $4 }' "$f" | median)
  echo "$wall $cpu $rss"
}
read -r dw dc dr < <(summary "$WORK/d2b")
read -r pw pc pr < <(summary "$WORK/pahole")
awk -v dw="$dw" -v dc="$dc" -v dr="$dr" -v pw="$pw" -v pc="$pc" -v pr="$pr" 'BEGIN {
  printf "%-10s %8s %8s %12s\n", "tool", "wall s", "CPU s", "peak MiB"
  printf "%-10s %8.1f %8.1f %12.0f\n", "dwarf2btf", dw, dc, dr / 1024
  printf "%-10s %8.1f %8.1f %12.0f\n", "pahole", pw, pc, pr / 1024
  printf "ratios dwarf2btf/pahole: wall %.2f, CPU %.2f, peak %.2f\n", dw / pw, dc / pc, dr / pr
}'
