#!/usr/bin/env bash
# Compares dwarf2btf with pahole 1.32 on Debian's big -dbg vmlinux images, each encoded with its
# own kernel's flags at -j1 and -j2, and prints one line per image and -j: "equal" (type and
# string sections byte for byte, and the sorted -V skip lines) or the first difference.
#
#   scripts/check/compare-images.sh                 # the reference 6.1, unstable's 7.2, experimental's 7.3
#   scripts/check/compare-images.sh 7.3             # one of them
#
# Images: 6.1 is the reference (scripts/setup/fetch-kernel.sh); 7.2 the newest
# linux-image-7.2*-cloud-amd64-dbg of Debian unstable, 7.3 the newest
# linux-image-7.3*-cloud-amd64-dbg of experimental, each fetched through a private apt
# configuration (scripts/setup/private-apt.sh; nothing installed) into
# ${DWARF2BTF_CACHE:-~/.cache/dwarf2btf}/images/<ver>/, of which only vmlinux is kept.
# pahole 1.32 is Debian unstable's (scripts/setup/fetch-pahole-1.32.sh). It has no `layout` (libbpf
# 1.7.0), which 7.x's scripts/Makefile.btf passes: the header differs by design, so the type
# and string sections are compared, not the whole file.
#
# Flags, from each kernel's scripts/Makefile.btf for a pahole of version 1.32:
#   6.1: the 6.1 flags as pahole ≥ 1.26 takes them (--btf_features=…,decl_tag_kfuncs)
#   7.2: … --btf_features=attributes --btf_features=layout
#   7.3: decl_tag_kfuncs and attributes are no longer passed (resolve_btfids adds kfunc tags);
#        layout still is
# Exit status: 0 when every line says equal, 1 otherwise.
set -euo pipefail
shopt -s inherit_errexit
cd "$(dirname "$0")/../.."

CACHE=${DWARF2BTF_CACHE:-$HOME/.cache/dwarf2btf}
BASE_FEATURES=encode_force,var,float,enum64,decl_tag,type_tag,optimized_func,consistent_func
die() { echo "compare-images: error: $*" >&2; exit 2; }

# flags VER: the encoder flags VER's kernel build passes (without -j and the output).
flags() {
  case $1 in
    6.1) echo "--btf_features=$BASE_FEATURES,decl_tag_kfuncs --lang_exclude=rust" ;;
    7.2) echo "--btf_features=$BASE_FEATURES,decl_tag_kfuncs --btf_features=attributes --btf_features=layout --lang_exclude=rust" ;;
    7.3) echo "--btf_features=$BASE_FEATURES --btf_features=layout --lang_exclude=rust" ;;
    *) die "no flags known for $1" ;;
  esac
}

# image VER: prints the path of VER's vmlinux, fetching it once.
image() {
  local ver=$1 suite dir pkg deb
  if [ "$ver" = 6.1 ]; then
    scripts/setup/fetch-kernel.sh
    return
  fi
  case $ver in
    7.2) suite=unstable ;;
    7.3) suite=experimental ;;
    *) die "no image known for $ver" ;;
  esac
  dir=$CACHE/images/$ver
  mkdir -p "$dir/debs"
  if [ -s "$dir/vmlinux" ] && [ -s "$dir/package.txt" ]; then
    echo "$dir/vmlinux"
    return
  fi
  # shellcheck source=private-apt.sh
  . scripts/setup/private-apt.sh
  private_apt "$dir" "$suite" || die "apt-get update for $suite failed"
  pkg=$(apt-cache "${APT[@]}" search --names-only "^linux-image-${ver//./\\.}[^ ]*-cloud-amd64-dbg\$" \
    | awk '{print $1}' | sort -V | tail -n 1)
  [ -n "$pkg" ] || die "Debian $suite has no linux-image-$ver*-cloud-amd64-dbg"
  echo "compare-images: downloading $pkg from $suite (several hundred MB)" >&2
  (cd "$dir/debs" && apt-get "${APT[@]}" download -qq "$pkg" >&2) || die "apt-get download $pkg failed"
  deb=$(ls "$dir"/debs/"${pkg}"_*.deb | head -n 1)
  # 7.x packages make boot/vmlinux-* a symbolic link into lib/modules/*/
  dpkg-deb --fsys-tarfile "$deb" \
    | tar -x -C "$dir" --wildcards './usr/lib/debug/boot/vmlinux-*' './usr/lib/debug/lib/modules/*/vmlinux' \
      2>/dev/null || true
  local found
  found=$(readlink -f "$dir"/usr/lib/debug/boot/vmlinux-*)
  [ -f "$found" ] || die "$deb has no vmlinux under usr/lib/debug"
  mv "$found" "$dir/vmlinux.tmp"
  rm -rf "$dir/usr" "$dir/debs"
  mv "$dir/vmlinux.tmp" "$dir/vmlinux"
  dpkg-deb --showformat='${Package} ${Version}\n' -W "$deb" > "$dir/package.txt" 2>/dev/null \
    || echo "$pkg" > "$dir/package.txt"
  echo "$dir/vmlinux"
}

# sections FILE: the type and string sections of raw BTF (whatever the header's length).
sections() {
  python3 - "$1" <<'EOF'
import struct, sys
d = open(sys.argv[1], 'rb').read()
hdr, toff, tlen, soff, slen = struct.unpack_from('<IIIII', d, 4)
sys.stdout.buffer.write(d[hdr + toff:hdr + toff + tlen] + d[hdr + soff:hdr + soff + slen])
EOF
}

cargo build --release --quiet
D2B=${CARGO_TARGET_DIR:-$PWD/target}/release/dwarf2btf
PAHOLE=$(scripts/setup/fetch-pahole-1.32.sh)
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

status=0
for ver in "${@:-6.1 7.2 7.3}"; do
  for ver in $ver; do
    vmlinux=$(image "$ver")
    read -r -a f <<< "$(flags "$ver")"
    for j in 1 2; do
      p=$WORK/$ver-j$j.pahole
      d=$WORK/$ver-j$j.dwarf2btf
      "$PAHOLE" -J -j$j -V "${f[@]}" --btf_encode_detached="$p.btf" "$vmlinux" > "$p.log" 2>&1 \
        || die "pahole 1.32 failed on $vmlinux ($p.log)"
      "$D2B" -J -j$j -V "${f[@]}" --btf_encode_detached="$d.btf" "$vmlinux" > "$d.log" 2>&1 \
        || { echo "$ver -j$j: dwarf2btf FAILED: $(tail -n 1 "$d.log")"; status=1; continue; }
      for x in "$p" "$d"; do
        grep 'skipping BTF encoding of function' "$x.log" | LC_ALL=C sort > "$x.skipped" || true
      done
      what="$ver -j$j ($(basename "$(dirname "$vmlinux")")/$(basename "$vmlinux"), $(wc -l < "$p.skipped") skip lines)"
      if ! cmp -s <(sections "$p.btf") <(sections "$d.btf"); then
        echo "$what: types/strings DIFFER: $("$D2B" diff "$p.btf" "$d.btf" 2>&1 | grep -m1 -E '^[-+] ' | cut -c1-160)"
        status=1
      elif ! cmp -s "$p.skipped" "$d.skipped"; then
        echo "$what: skip lines DIFFER: $(diff "$p.skipped" "$d.skipped" | grep -m1 '^[<>]')"
        status=1
      else
        echo "$what: equal ($(sections "$d.btf" | wc -c) bytes of types and strings)"
      fi
    done
  done
done
exit $status
