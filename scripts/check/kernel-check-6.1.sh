#!/usr/bin/env bash
# Asks Debian's 6.1 kernel whether it accepts BTF files: boots the cloud kernel image
# (linux-image-6.1.0-57-cloud-amd64, the build of the reference vmlinux) under qemu with
# software emulation, on an initramfs holding the files and a static /init
# (scripts/check/kernel-check/init.c) that loads each with bpf(BPF_BTF_LOAD), one boot for all.
# Prints one verdict line per file, and after a rejection the verifier log's last lines:
#
#   FILE: accepted by Linux 6.1.0-57-cloud-amd64
#   FILE: rejected by Linux 6.1.0-57-cloud-amd64: Invalid argument (errno 22)
#     verifier log, last lines: ...
#
#   scripts/check/kernel-check-6.1.sh [--base BASE] FILE... [--base BASE2 FILE...] [--no-base FILE...]
#
# FILE: raw BTF, or an ELF file with a .BTF section (objcopy extracts it). --base BASE makes
# the files after it split BTF on BASE (BPF_BTF_LOAD takes no base: each is loaded appended
# to its base, which keeps every type id and string offset), until the next --base or
# --no-base.
# Exit status: 0 every file accepted, 1 some file rejected or unreadable, 2 usage, 3 no
# verdict (the image could not be fetched, or the boot did not finish).
#
# Cache: ${DWARF2BTF_CACHE:-~/.cache/dwarf2btf}/kernel-check-6.1/: the package (apt-get
# download, apt-get update first when that fails), its vmlinuz (dpkg -x), and the last run's
# console.log; each run builds its initramfs in a run.* directory of its own, removed at the
# end. Needs qemu-system-x86, cpio and gcc (static libc), installed
# when missing. Knobs: KC_PACKAGE (another image package), KC_TIMEOUT (s, default 600).
# KVM is not used: on this VM nested KVM hangs; the boot takes well under a minute under TCG.
set -euo pipefail

REPO=$(cd "$(dirname "$0")/../.." && pwd)
PKG=${KC_PACKAGE:-linux-image-6.1.0-57-cloud-amd64}
TIMEOUT=${KC_TIMEOUT:-600}
CACHE=${DWARF2BTF_CACHE:-$HOME/.cache/dwarf2btf}/kernel-check-6.1
# shellcheck source=kernel-build/boot.sh
. "$REPO/scripts/check/kernel-build/boot.sh"

usage() { echo "usage: $0 [--base BASE] FILE... [--base BASE2 FILE...] [--no-base FILE...]" >&2; exit 2; }
fail() { echo "kernel-check-6.1: $*" >&2; exit 3; }

FILES=() BASES=()
base=-
while [ $# -gt 0 ]; do
  case $1 in
    --base) [ $# -ge 2 ] || usage; base=$2; shift 2 ;;
    --base=*) base=${1#--base=}; shift ;;
    --no-base) base=-; shift ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    -*) usage ;;
    *) [ -f "$1" ] || { echo "kernel-check-6.1: $1: no such file" >&2; exit 2; }
       [ "$base" = - ] || [ -f "$base" ] || { echo "kernel-check-6.1: $base: no such file" >&2; exit 2; }
       FILES+=("$1"); BASES+=("$base"); shift ;;
  esac
done
[ ${#FILES[@]} -gt 0 ] || usage

"$REPO/scripts/setup/apt-install.sh" qemu-system-x86 cpio gcc libc6-dev binutils >&2

# ---- the kernel image
mkdir -p "$CACHE"
VMLINUZ=$(ls "$CACHE/$PKG"/boot/vmlinuz-* 2>/dev/null | head -n 1 || true)
if [ -z "$VMLINUZ" ]; then
  echo "fetching $PKG..." >&2
  if ! (cd "$CACHE" && apt-get download "$PKG" >&2 2>/dev/null); then
    SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO=sudo
    $SUDO apt-get update -qq >&2 || true
    (cd "$CACHE" && apt-get download "$PKG" >&2) || fail "apt-get download $PKG failed"
  fi
  deb=$(ls "$CACHE/${PKG}"_*.deb | head -n 1)
  unpack=$(mktemp -d "$CACHE/$PKG.XXXXXX")
  dpkg -x "$deb" "$unpack"
  # another run may have unpacked it meanwhile: keep the first
  mv -T "$unpack" "$CACHE/$PKG" 2>/dev/null || rm -rf "$unpack"
  rm -f "$deb"
  VMLINUZ=$(ls "$CACHE/$PKG"/boot/vmlinuz-* | head -n 1)
fi

# ---- the initramfs: /init, the files under /check, and /check/list (in a directory of this
# run's own, so that runs can overlap)
RUN=$(mktemp -d "$CACHE/run.XXXXXX")
trap 'rm -rf "$RUN"' EXIT
R=$RUN/initramfs
mkdir -p "$R/check"
# copy_btf FILE DEST: raw BTF as is, an ELF file's .BTF section extracted
copy_btf() {
  if [ "$(head -c 4 "$1" | od -An -c | tr -d ' ')" = '177ELF' ]; then
    objcopy --dump-section ".BTF=$2" "$1" "$R/objcopy.out" 2>/dev/null || true
    rm -f "$R/objcopy.out"
    [ -f "$2" ] || { echo "kernel-check-6.1: $1: an ELF file without a .BTF section" >&2; exit 2; }
  else
    cp "$1" "$2"
  fi
}
declare -A BASE_AT=()
: > "$R/check/list"
for i in "${!FILES[@]}"; do
  copy_btf "${FILES[$i]}" "$R/check/$i.btf"
  b=-
  if [ "${BASES[$i]}" != - ]; then
    key=$(readlink -f "${BASES[$i]}")
    if [ -z "${BASE_AT[$key]:-}" ]; then
      BASE_AT[$key]=/check/base${#BASE_AT[@]}.btf
      copy_btf "${BASES[$i]}" "$R${BASE_AT[$key]}"
    fi
    b=${BASE_AT[$key]}
  fi
  echo "$i /check/$i.btf $b" >> "$R/check/list"
done
make_initramfs "$R" "$REPO/scripts/check/kernel-check/init.c" "$RUN/initramfs.cpio"

# ---- the boot
LOGF=$RUN/console.log
echo "booting $(basename "$VMLINUZ") under qemu (TCG) to check ${#FILES[@]} file(s)..." >&2
t0=$(date +%s)
qemu_boot "$VMLINUZ" "$RUN/initramfs.cpio" "$RUN/console.raw" "$TIMEOUT" -accel tcg -cpu max -m 1G \
  -append "console=ttyS0 panic=-1 quiet loglevel=3" >&2
echo "   boot and checks took $(( $(date +%s) - t0 ))s" >&2
tr -d '\r' < "$RUN/console.raw" > "$LOGF"
cp "$LOGF" "$CACHE/console.log.$$" && mv -f "$CACHE/console.log.$$" "$CACHE/console.log"
if ! grep -q '^DONE ' "$LOGF"; then
  echo "---- the last lines of the console ($CACHE/console.log)" >&2
  tail -n 30 "$LOGF" >&2
  fail "the boot did not finish the checks"
fi

# ---- the verdicts
KREL=$(sed -n 's/^.*KERNEL //p' "$LOGF" | head -n 1)
status=0
for i in "${!FILES[@]}"; do
  name=${FILES[$i]}
  [ "${BASES[$i]}" = - ] || name="$name (split, on ${BASES[$i]})"
  read -r verdict errno reason < <(sed -n "s/^VERDICT $i //p" "$LOGF" | head -n 1) || true
  case ${verdict:-} in
    accepted) echo "$name: accepted by Linux $KREL" ;;
    rejected)
      echo "$name: rejected by Linux $KREL: $reason (errno $errno)"
      echo "  verifier log, last lines:"
      sed -n "s/^LOG $i /    /p" "$LOGF" | tr '\t' ' '
      status=1 ;;
    unreadable) echo "$name: not checked: $errno $reason"; status=1 ;;
    *) echo "$name: no verdict on the console"; status=1 ;;
  esac
done
exit $status
