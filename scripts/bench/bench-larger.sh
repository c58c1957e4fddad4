#!/usr/bin/env bash
# Does the peak grow with the output more than with the input? Fetches Debian 13's newest 6.12 debug images (generic and cloud; trixie,
# through a private apt configuration: nothing installed) beside the reference vmlinux,
# encodes each with the kernel's flags at -j2, alternating kernels for ROUNDS rounds, and
# prints a Markdown table: pre-dedup types and median peak RSS (GNU time), each ÷ the
# reference's, and the peak interpolated between the two larger images at a third more
# types than the reference. Every run's output is checked to be the same bytes as the first.
#
#   scripts/bench/bench-larger.sh                      # 5 rounds
#   ROUNDS=3 BIN=/path/to/dwarf2btf scripts/bench/bench-larger.sh
#
# The images (1.4 GB of packages, 0.7 GB unpacked) stay in $DWARF2BTF_CACHE/larger.
set -euo pipefail
cd "$(dirname "$0")/../.."

ROUNDS=${ROUNDS:-5}
CACHE=${DWARF2BTF_CACHE:-$HOME/.cache/dwarf2btf}
DIR=$CACHE/larger
FLAGS=(--btf_features=encode_force,var,float,enum64,decl_tag,type_tag,optimized_func,consistent_func,decl_tag_kfuncs
  --lang_exclude=rust -j2)
die() { echo "bench-larger: error: $*" >&2; exit 1; }
scripts/setup/apt-install.sh time
if [ -z "${BIN:-}" ]; then
  cargo build --release --quiet --bin dwarf2btf
  BIN=${CARGO_TARGET_DIR:-target}/release/dwarf2btf
fi
REF=$(scripts/setup/fetch-kernel.sh)

# The newest 6.12 generic and cloud debug vmlinux of trixie, unpacked once.
# shellcheck source=private-apt.sh
. scripts/setup/private-apt.sh
private_apt "$DIR" trixie || die "apt-get update for trixie failed"
latest() {
  apt-cache "${APT[@]}" search --names-only "^linux-image-6\.12\.[0-9]+\+deb13-$1-dbg\$" |
    awk '{print $1}' | sort -V | tail -n 1
}
KERNELS=("$REF")
for flavour in amd64 cloud-amd64; do
  pkg=$(latest "$flavour")
  [ -n "$pkg" ] || die "trixie has no linux-image-6.12.*-$flavour-dbg"
  kver=${pkg#linux-image-}
  kver=${kver%-dbg}
  vmlinux=$DIR/vmlinux-$kver
  if [ ! -s "$vmlinux" ]; then
    echo "bench-larger: downloading $pkg" >&2
    (cd "$DIR" && apt-get "${APT[@]}" download -qq "$pkg" >&2) || die "apt-get download $pkg failed"
    dpkg-deb --fsys-tarfile "$DIR/${pkg}_"*.deb |
      tar -xO "./usr/lib/debug/boot/vmlinux-$kver" >"$vmlinux.tmp" || die "$pkg has no vmlinux"
    mv "$vmlinux.tmp" "$vmlinux"
    rm -f "$DIR/${pkg}_"*.deb
  fi
  KERNELS+=("$vmlinux")
done

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
declare -A TYPES
for k in "${KERNELS[@]}"; do
  n=$(basename "$k")
  # The dedup's record store holds every pre-dedup type and `void`.
  records=$("$BIN" "${FLAGS[@]}" --stats --btf_encode_detached="$tmp/$n.btf" "$k" 2>&1 |
    sed -n "s/.*dedup's record store: \([0-9]*\) records.*/\1/p")
  [ -n "$records" ] || die "no record count in --stats for $k"
  TYPES[$n]=$((records - 1))
done
for r in $(seq "$ROUNDS"); do
  for k in "${KERNELS[@]}"; do
    n=$(basename "$k")
    /usr/bin/time -f "$n %M" -a -o "$tmp/peaks" "$BIN" "${FLAGS[@]}" \
      --btf_encode_detached="$tmp/run.btf" "$k" >/dev/null
    cmp -s "$tmp/run.btf" "$tmp/$n.btf" || die "$n: round $r wrote other bytes than the first run"
  done
done
median() { grep "^$1 " "$tmp/peaks" | awk '{print $2 / 1024}' | sort -n |
  awk '{v[NR] = $1} END {printf "%.1f", (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
ref=$(basename "$REF")
ref_types=${TYPES[$ref]}
ref_peak=$(median "$ref")
echo "| vmlinux | pre-dedup types | ÷ reference | peak MiB (median of $ROUNDS, -j2) | ÷ reference |"
echo "|---|---:|---:|---:|---:|"
points=()
for k in "${KERNELS[@]}"; do
  n=$(basename "$k")
  peak=$(median "$n")
  x=$(awk -v a="${TYPES[$n]}" -v b="$ref_types" 'BEGIN {printf "%.3f", a / b}')
  y=$(awk -v a="$peak" -v b="$ref_peak" 'BEGIN {printf "%.3f", a / b}')
  printf '| %s | %d | %s | %s | %s |\n' "${n#vmlinux-}" "${TYPES[$n]}" "$x" "$peak" "$y"
  [ "$n" = "$ref" ] || points+=("$x $y")
done
# Linear between the two larger images (or beyond them), at 4/3 of the reference's types.
read -r x1 y1 <<<"${points[0]}"
read -r x2 y2 <<<"${points[1]}"
awk -v x1="$x1" -v y1="$y1" -v x2="$x2" -v y2="$y2" 'BEGIN {
  x = 4 / 3; y = y1 + (y2 - y1) * (x - x1) / (x2 - x1)
  printf "\nAt a third more pre-dedup types than the reference (interpolated): %.3f × its peak.\n", y }'
