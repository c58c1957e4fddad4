#!/usr/bin/env bash
# Builds Debian's linux-source-<ver> with a small config (tinyconfig + BPF + DWARF 5 + BTF for
# vmlinux and modules + four modules, five for 7.x) using an encoder as PAHOLE, then boots it
# under qemu (scripts/check/kernel-build/boot.sh) with an initramfs whose /init
# (scripts/check/kernel-build/init.c) checks that the kernel accepts its own BTF:
# /sys/kernel/btf/vmlinux loads back through bpf(BPF_BTF_LOAD), every module loads with
# finit_module (the kernel refuses a module whose BTF it cannot parse), each module's
# /sys/kernel/btf/<module> is there, registered and loads (merged with vmlinux's), and the
# kernel log has no BTF error. Before booting it also checks what the encoder wrote into the
# ELF it read: 6.x encodes in place, and .tmp_vmlinux* must have changed in nothing but .BTF;
# 7.x (scripts/gen-btf.sh) encodes detached (--btf_encode_detached=.tmp_vmlinux1.BTF.1), then
# resolve_btfids sorts that BTF and objcopy embeds it, so .tmp_vmlinux1 must be unchanged and
# the detached file there. The build log must have no "not implemented" line (a feature the
# kernel asked for that the encoder lacks: 7.1 and later ask pahole 1.31 for `layout`). For
# 7.x, vmlinux's .BTF and the encoder's detached output must equal pahole's committed ones
# byte for byte (pahole 1.32's types and strings in pahole HEAD's header and layout section:
# kernel-build/oracle.sh, tests/data/kernel-build-VER/). Exits 0 only
# when all that holds, the console shows "RESULT: PASS", the kernel's BPF_BTF_LOAD verdict on
# each probe of tests/data/probes (loaded by the same /init after its checks) equals
# `dwarf2btf verify --kernel-version <release>`'s, and a second boot, with one module's
# BTF corrupted (kernel-build/corrupt-btf.py), shows "RESULT: FAIL" naming that module.
#
#   scripts/check/kernel-build.sh [--clean] [6.12|6.1|7.2|7.3]  # default 6.12
#   PAHOLE=pahole scripts/check/kernel-build.sh 6.1               # the comparison run with pahole
#
# Sources: 6.12 and 6.1 are the machine's linux-source-<ver> package (installed when missing);
# 7.2 is Debian unstable's linux-source-7.2, 7.3 experimental's linux-source-7.3, fetched with
# a private apt configuration under the work dir (kernel-build/fetch-debian-source.sh: nothing
# installed, the machine's apt sources untouched); the package and version are printed and in
# summary.txt.
# PAHOLE: the encoder, a name on PATH or a path; unset, dwarf2btf built here with cargo build
# --release (in $CARGO_TARGET_DIR when set). Kconfig reads `$PAHOLE --version` (v1.NN).
# Work dir: ${DWARF2BTF_CACHE:-~/.cache/dwarf2btf}/kernel-build/<ver>/: the source extracted
# once from its linux-source tarball (again when the package version changes; 7.x: unstable/ or
# experimental/ holds
# the apt state, the .deb and its unpacked tarball), and build-<basename of PAHOLE>/ (O= build
# dir) holding pahole-wrapper (the PAHOLE that make sees; it runs encoder/<name>, a copy of the
# encoder binary taken at the start of the run), pahole-calls.log (every call with its
# exit status and time), encoder-inputs/ (a copy of every ELF before the encoder rewrote it,
# at its path in the build dir; the --btf_base vmlinux of the module calls in btf_base/),
# encoder-outputs/ (7.x: a copy of each detached output, which gen-btf.sh deletes),
# vmlinux.BTF (7.x), build.log, initramfs.cpio, console.log and summary.txt.
# Each run redoes the config, deletes vmlinux and the .ko files so that the encoder runs
# again on all of them, and reuses the compiled objects; --clean starts the build dir afresh.
# Time on 2 cores (measured): a first build 8-14 minutes for 6.12 and 6-10 for 6.1 (more when
# other work shares the cores); 7.2 about 5-6 minutes of make with the cores to itself (666 s
# of CPU; 298 s measured), 20.5 minutes with other work holding half the cores, plus 12 s to
# fetch sid's lists and the .deb and 41 s to extract it once (docs/benchmarks.md); a rerun
# about 15 s of make and 30 s in all; the boot a few seconds under TCG. Where nested
# KVM hangs (it does on this VM), auto mode spends its 20 s timeout on KVM first: KB_ACCEL=tcg
# skips that.
# Knobs: KB_ACCEL=auto|kvm|tcg (auto: KVM when /dev/kvm opens, under KB_KVM_TIMEOUT, default
# 20 s, then TCG if no RESULT line came: nested KVM can hang right after "Booting from ROM"),
# KB_TCG_TIMEOUT (s, default 300), KB_JOBS (default nproc), KB_LLVM=1 (build with LLVM=1 and
# CONFIG_LTO_CLANG_THIN, in build-<encoder>-llvm/: every module is then linked with thin LTO
# and its DWARF references other CUs, DW_FORM_ref_addr; needs clang, lld and llvm).
set -euo pipefail

REPO=$(cd "$(dirname "$0")/../.." && pwd)
CLEAN=0
VER=6.12
for a in "$@"; do
  case $a in
    --clean) CLEAN=1 ;;
    6.12|6.1|7.2|7.3) VER=$a ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "usage: $0 [--clean] [6.12|6.1|7.2|7.3]" >&2; exit 2 ;;
  esac
done
JOBS=${KB_JOBS:-$(nproc)}
LLVM_LTO=${KB_LLVM:-0}
ACCEL=${KB_ACCEL:-auto}
TCG_TIMEOUT=${KB_TCG_TIMEOUT:-300}
KVM_TIMEOUT=${KB_KVM_TIMEOUT:-20}

# shellcheck source=kernel-build/boot.sh
. "$REPO/scripts/check/kernel-build/boot.sh"
say() { echo "== $*"; }
die() { echo "kernel-build: error: $*" >&2; exit 1; }

W=${DWARF2BTF_CACHE:-$HOME/.cache/dwarf2btf}/kernel-build/$VER
# Where the source comes from: the machine's apt sources (6.x), Debian unstable (7.2) or
# experimental (7.3); 7.x builds use the gen-btf.sh flow and have an oracle.
case $VER in
  7.2) SUITE=unstable ;;
  7.3) SUITE=experimental ;;
  *) SUITE=machine ;;
esac
SEVEN=0; [ "$SUITE" = machine ] || SEVEN=1
mkdir -p "$W"

# ---- tools (installed when missing), and the source: 6.x from the machine's apt sources,
# 7.x from Debian unstable or experimental (a private apt configuration under $W/$SUITE,
# nothing installed)
TOOLS=(build-essential bc bison flex libssl-dev libelf-dev cpio kmod dwarves qemu-system-x86
  xz-utils binutils bpftool)
if [ "$SUITE" != machine ]; then
  "$REPO/scripts/setup/apt-install.sh" "${TOOLS[@]}"
  read -r SRC_PKG SRC_VERSION TARBALL < <("$REPO/scripts/check/kernel-build/fetch-debian-source.sh" \
    "$W/$SUITE" "$SUITE" "linux-source-$VER") || die "could not fetch linux-source-$VER from Debian $SUITE"
else
  "$REPO/scripts/setup/apt-install.sh" "${TOOLS[@]}" "linux-source-$VER"
  SRC_PKG=linux-source-$VER
  SRC_VERSION=$(dpkg-query -W -f='${Version}' "$SRC_PKG")
  TARBALL=/usr/src/linux-source-$VER.tar.xz
fi
[ -f "$TARBALL" ] || die "$TARBALL is missing (package $SRC_PKG)"
say "source: $SRC_PKG $SRC_VERSION ($TARBALL)"

# ---- the encoder
if [ -z "${PAHOLE:-}" ]; then
  say "building dwarf2btf (cargo build --release)"
  (cd "$REPO" && cargo build --release)
  PAHOLE=$(cd "$REPO" && readlink -f "${CARGO_TARGET_DIR:-target}")/release/dwarf2btf
fi
REAL=$(command -v "$PAHOLE") || die "encoder '$PAHOLE' not found"
REAL=$(readlink -f "$REAL")
ENC=$(basename "$PAHOLE")
ENC_VERSION=$("$REAL" --version 2>&1 | head -n 1 || true)
say "encoder: $REAL ($ENC_VERSION)"

# ---- source, build dir, wrapper
SRC=$W/$SRC_PKG
B=$W/build-$ENC
[ "$LLVM_LTO" = 1 ] && B=$B-llvm
if [ "$(cat "$SRC/.kernel-build-extracted" 2>/dev/null || true)" != "$SRC_PKG $SRC_VERSION" ]; then
  say "extracting $TARBALL into $W"
  rm -rf "$SRC"
  tar -xf "$TARBALL" -C "$W"
  echo "$SRC_PKG $SRC_VERSION" > "$SRC/.kernel-build-extracted"
fi
if [ "$CLEAN" = 1 ]; then say "removing $B"; rm -rf "$B"; fi
mkdir -p "$B"
rm -rf "$B/encoder-inputs" "$B/encoder-outputs"
: > "$B/pahole-calls.log"

# Run a copy of the encoder binary, so that a cargo build during the kernel build cannot swap
# encoders between the vmlinux and the module calls (and the run can be redone later).
RUN=$REAL
if [ "$(head -c 4 "$REAL" | od -An -c | tr -d ' ')" = '177ELF' ]; then
  mkdir -p "$B/encoder"
  cp -f "$REAL" "$B/encoder/$ENC.tmp" && mv -f "$B/encoder/$ENC.tmp" "$B/encoder/$ENC"
  RUN=$B/encoder/$ENC
fi

WRAPPER=$B/pahole-wrapper
cat > "$WRAPPER" <<EOF
#!/usr/bin/env bash
# Generated by scripts/check/kernel-build.sh: the PAHOLE that make sees. Logs every call to
# pahole-calls.log; for encoding (-J) calls, first copies the input ELF (the last argument)
# under encoder-inputs/ and the --btf_base file under encoder-inputs/btf_base/; then runs
# $RUN (a copy of $REAL) with the same arguments, copies a --btf_encode_detached output
# under encoder-outputs/ (the 7.x flow deletes it once resolve_btfids has read it) and exits
# with the encoder's status.
REAL='$RUN'
DIR='$B'
EOF
cat >> "$WRAPPER" <<'EOF'
LOG=$DIR/pahole-calls.log
encode=0; base=; out=
prev=
for a in "$@"; do
  case $a in
    -J) encode=1 ;;
    --btf_encode_detached=*) encode=1; out=${a#--btf_encode_detached=} ;;
    --btf_encode_detached) encode=1 ;;
    --btf_base=*) base=${a#--btf_base=} ;;
  esac
  [ "$prev" = --btf_base ] && base=$a
  [ "$prev" = --btf_encode_detached ] && out=$a
  prev=$a
done
if [ "$encode" = 0 ] || [ $# -eq 0 ]; then
  echo "$(date +%T) $PWD: $*" >> "$LOG"
  exec "$REAL" "$@"
fi
copy() { # copy FILE DEST, atomically, keeping an existing DEST when asked
  mkdir -p "$(dirname "$2")" && cp -f "$1" "$2.tmp.$$" && mv -f "$2.tmp.$$" "$2"
}
in=${!#}
rel=${in#"$DIR"/}; rel=${rel#/}
copy "$in" "$DIR/encoder-inputs/$rel" || echo "pahole-wrapper: could not copy $in" >&2
if [ -n "$base" ] && [ ! -e "$DIR/encoder-inputs/btf_base/$(basename "$base")" ]; then
  copy "$base" "$DIR/encoder-inputs/btf_base/$(basename "$base")" || true
fi
start=$EPOCHREALTIME
"$REAL" "$@"
rc=$?
end=$EPOCHREALTIME
if [ $rc -eq 0 ] && [ -n "$out" ] && [ -f "$out" ]; then
  rel=${out#"$DIR"/}; rel=${rel#/}
  copy "$out" "$DIR/encoder-outputs/$rel" || echo "pahole-wrapper: could not copy $out" >&2
fi
echo "$(date +%T) $PWD: $* -> exit $rc, $(awk -v a="$start" -v b="$end" 'BEGIN{printf "%.2f", b-a}') s" >> "$LOG"
exit $rc
EOF
chmod +x "$WRAPPER"

# The banner strings (linux_banner and its kin: "#1 SMP ... root@host ... date") end up as
# const char[N] arrays in vmlinux's BTF, N their length: pinned so that the BTF depends on
# neither the machine's user and hostname, nor the build count of this build dir (#1, #2, ...),
# nor the time zone. (KBUILD_BUILD_TIMESTAMP is left alone: setting it changes pahole's flags.)
export KBUILD_BUILD_USER=kernel-build KBUILD_BUILD_HOST=dwarf2btf KBUILD_BUILD_VERSION=1 TZ=UTC
MAKE=(make -C "$SRC" O="$B" PAHOLE="$WRAPPER" -j"$JOBS")
if [ "$LLVM_LTO" = 1 ]; then
  "$REPO/scripts/setup/apt-install.sh" clang lld llvm
  MAKE+=(LLVM=1)
fi

# ---- config
say "configuring (tinyconfig + BTF) in $B"
"${MAKE[@]}" -s tinyconfig >/dev/null
"$SRC/scripts/config" --file "$B/.config" \
  --enable 64BIT --enable EXPERT --enable DEBUG_KERNEL \
  --enable PRINTK --enable TTY --enable SERIAL_8250 --enable SERIAL_8250_CONSOLE \
  --enable BLK_DEV_INITRD --enable BINFMT_ELF --enable PROC_FS --enable SYSFS \
  --enable DEVTMPFS --enable KALLSYMS --enable BLOCK --enable BLK_DEV \
  --enable MODULES --enable MODULE_UNLOAD --disable MODULE_SIG --enable BPF_SYSCALL \
  --disable DEBUG_INFO_NONE --disable DEBUG_INFO_DWARF_TOOLCHAIN_DEFAULT --disable DEBUG_INFO_DWARF4 \
  --enable DEBUG_INFO_DWARF5 --disable DEBUG_INFO_REDUCED --disable DEBUG_INFO_SPLIT \
  --enable DEBUG_INFO_BTF --enable DEBUG_INFO_BTF_MODULES --disable MODULE_ALLOW_BTF_MISMATCH \
  --module EXT2_FS --enable EXT2_FS_XATTR --module CRC_ITU_T --module BLK_DEV_LOOP
# From 7.x CRC_ITU_T has no prompt: OMFS_FS (=m) selects it, a fifth module that needs another.
MODS_M=(EXT2_FS FS_MBCACHE CRC_ITU_T BLK_DEV_LOOP)
if [ "$SEVEN" = 1 ]; then
  "$SRC/scripts/config" --file "$B/.config" --enable MISC_FILESYSTEMS --module OMFS_FS
  MODS_M+=(OMFS_FS)
fi
if [ "$LLVM_LTO" = 1 ]; then
  "$SRC/scripts/config" --file "$B/.config" --disable LTO_NONE --enable LTO_CLANG_THIN
fi
"${MAKE[@]}" -s olddefconfig >/dev/null
if [ "$LLVM_LTO" = 1 ] && [ "$(sed -n 's/^CONFIG_LTO_CLANG_THIN=//p' "$B/.config")" != y ]; then
  die "CONFIG_LTO_CLANG_THIN is not =y after olddefconfig (clang $(clang --version | head -n 1))"
fi
cfg() { sed -n "s/^CONFIG_$1=//p" "$B/.config"; }
PAHOLE_VERSION=$(cfg PAHOLE_VERSION)
say "CONFIG_PAHOLE_VERSION=$PAHOLE_VERSION (Kconfig ran: $WRAPPER --version -> $ENC_VERSION)"
for o in 64BIT BPF_SYSCALL DEBUG_INFO_DWARF5 DEBUG_INFO_BTF DEBUG_INFO_BTF_MODULES MODULES BLK_DEV_INITRD SERIAL_8250_CONSOLE DEVTMPFS; do
  if [ "$(cfg $o)" != y ]; then
    grep -E "CONFIG_($o|PAHOLE_VERSION|PAHOLE_HAS_SPLIT_BTF)[= ]" "$B/.config" >&2 || true
    die "CONFIG_$o is not =y after olddefconfig; Kconfig saw CONFIG_PAHOLE_VERSION=$PAHOLE_VERSION from '$REAL --version' = '$ENC_VERSION' (DEBUG_INFO_BTF needs >= 116, and >= 121 with DWARF 5; DEBUG_INFO_BTF_MODULES needs >= 119)"
  fi
done
for o in "${MODS_M[@]}"; do
  [ "$(cfg $o)" = m ] || die "CONFIG_$o is not =m after olddefconfig"
done
KREL=$("${MAKE[@]}" -s kernelrelease)
say "kernel $KREL, config ok: DEBUG_INFO_BTF=y DEBUG_INFO_BTF_MODULES=y"

# ---- build
# (7.x links vmlinux.unstripped, then strips it into vmlinux: both go, so that BTF is redone)
rm -f "$B/vmlinux" "$B/vmlinux.unstripped" "$B"/.tmp_vmlinux* "$B/arch/x86/boot/bzImage"
find "$B" -name '*.ko' -delete
say "building bzImage and modules (make -j$JOBS, log in $B/build.log)"
t0=$(date +%s)
set +e
"${MAKE[@]}" bzImage modules > "$B/build.log" 2>&1
rc=$?
set -e
BUILD_SECS=$(( $(date +%s) - t0 ))
grep -E '^\s+(BTF|BTFIDS|KSYMS) |^\s+LD\s+(\[M\]|vmlinux|\.tmp_vmlinux)' "$B/build.log" | sed 's/^/   /' || true
if [ $rc -ne 0 ]; then
  echo "---- last lines of $B/build.log" >&2
  tail -n 40 "$B/build.log" >&2
  echo "---- encoder calls ($B/pahole-calls.log)" >&2
  tail -n 20 "$B/pahole-calls.log" >&2
  stage=compile
  grep -q 'link-vmlinux' "$B/build.log" && stage="link-vmlinux.sh (vmlinux BTF)"
  grep -qE 'Makefile.modfinal|\.ko\] Error' "$B/build.log" && stage="modfinal (module BTF)"
  die "build failed after ${BUILD_SECS}s, in $stage"
fi
say "build took ${BUILD_SECS}s wall"
# every feature the kernel asked for is implemented: the encoder says so otherwise
if grep -n 'not implemented' "$B/build.log" >&2; then
  die "the encoder said 'not implemented' in the build (lines above, $B/build.log)"
fi

btf_size() { # size of the .BTF section of an ELF file, 0 when none
  local h
  h=$(readelf -SW "$1" 2>/dev/null | sed -n 's/^ *\[ *[0-9]*\] //p' | awk '$1 == ".BTF" {print $5}')
  if [ -n "$h" ]; then echo $((16#$h)); else echo 0; fi
}
VMLINUX_BTF=$(btf_size "$B/vmlinux")
VMLINUX_TYPES=$(bpftool btf dump file "$B/vmlinux" 2>/dev/null | grep -c '^\[' || true)
SIZES="vmlinux .BTF: $VMLINUX_BTF bytes, $VMLINUX_TYPES types"
MODS=()
while IFS= read -r ko; do
  n=$(bpftool -B "$B/vmlinux" btf dump file "$ko" 2>/dev/null | grep -c '^\[' || true)
  MODS+=("${ko#"$B"/}: $(btf_size "$ko") bytes, $n types")
done < <(find "$B" \( -path "$B/encoder-inputs" -o -path "$B/initramfs" \) -prune -o -name '*.ko' -print | sort)
[ "$VMLINUX_BTF" -gt 0 ] || die "vmlinux has no .BTF section"
echo "   $SIZES"; for m in "${MODS[@]}"; do echo "   $m"; done
[ ${#MODS[@]} -ge 4 ] || die "expected at least 4 modules, found ${#MODS[@]}"

# ---- what the encoder wrote into the ELF it read. 6.x: link-vmlinux.sh leaves the ELF the
# encoder rewrote in place (.tmp_vmlinux1; 6.1: .tmp_vmlinux.btf); without .BTF it equals the
# kept input without .BTF (objcopy lays both out alike). 7.x (scripts/gen-btf.sh): the encoder
# writes a detached file (--btf_encode_detached=.tmp_vmlinux1.BTF.1) that resolve_btfids
# sorts by name and objcopy embeds; .tmp_vmlinux1 must be left byte for byte as it was.
TMPV=$(cd "$B/encoder-inputs" && ls -a | grep -m1 '^\.tmp_vmlinux' || true)
[ -n "$TMPV" ] || die "the encoder was not run on a .tmp_vmlinux file"
if [ "$SEVEN" = 1 ]; then
  DETACHED=$B/encoder-outputs/$TMPV.BTF.1
  [ -s "$DETACHED" ] || die "the encoder wrote no detached $TMPV.BTF.1 (is this the 7.x gen-btf.sh flow?)"
  cmp -s "$B/$TMPV" "$B/encoder-inputs/$TMPV" || die "$TMPV changed: a detached encoding must not write into its input"
  [ "$(btf_size "$B/$TMPV")" = 0 ] || die "$TMPV has a .BTF section: the encoder wrote into its input"
  INPLACE="$TMPV: left unchanged, BTF detached ($(stat -c %s "$DETACHED") bytes, kept as $DETACHED)"
else
  objcopy --remove-section .BTF "$B/$TMPV" "$B/in-place.out" 2>/dev/null
  objcopy --remove-section .BTF "$B/encoder-inputs/$TMPV" "$B/in-place.in" 2>/dev/null
  cmp -s "$B/in-place.out" "$B/in-place.in" \
    || die "$TMPV differs from the encoder's input in more than .BTF"
  rm -f "$B/in-place.out" "$B/in-place.in"
  INPLACE="$TMPV: .BTF ($(btf_size "$B/$TMPV") bytes) added in place, nothing else changed"
fi
echo "   $INPLACE"

# ---- 7.x: vmlinux's BTF equals pahole's, byte for byte, header and layout included
# (scripts/check/kernel-build/oracle.sh; the oracle and how it was made: tests/data/README.md)
ORACLE="not compared (only the 7.x builds have an oracle)"
ORACLE_OK=1
if [ "$SEVEN" = 1 ]; then
  # shellcheck source=kernel-build/oracle.sh
  . "$REPO/scripts/check/kernel-build/oracle.sh"
  compare_with_oracle "$REPO/tests/data/kernel-build-$VER"
fi

# ---- initramfs
say "initramfs"
R=$B/initramfs
rm -rf "$R"; mkdir -p "$R/etc" "$R/dev" "$R/proc" "$R/sys"
"${MAKE[@]}" -s modules_install INSTALL_MOD_PATH="$R" >/dev/null
# every module after its dependencies (modules.dep lists each module's closure, the last to
# load first, as modprobe reads it)
awk -F': *' '{ n = split($2, d, " "); for (i = n; i >= 1; i--) print d[i]; print $1 }' \
    "$R/lib/modules/$KREL/modules.dep" | awk 'NF && !seen[$0]++' | sed "s,^,/lib/modules/$KREL/," > "$R/etc/modules.list"
[ "$(wc -l < "$R/etc/modules.list")" -eq "$(find "$R" -name '*.ko' | wc -l)" ] || die "modules.list does not list every .ko"
# the probes (tests/data/probes: a minimal BTF and copies each adding one kind, flag or header
# form a release may lack), which /init loads after its checks, one PROBE line each
mkdir -p "$R/probes"
: > "$R/probes/list"
for p in "$REPO"/tests/data/probes/*.btf; do
  cp "$p" "$R/probes/"
  echo "$(basename "$p" .btf) /probes/$(basename "$p")" >> "$R/probes/list"
done
make_initramfs "$R" "$REPO/scripts/check/kernel-build/init.c" "$B/initramfs.cpio"
echo "   $(wc -l < "$R/etc/modules.list") modules, $(wc -l < "$R/probes/list") probes, $(stat -c %s "$B/initramfs.cpio") bytes"

# ---- boot
LOGF=$B/console.log
INITRD=$B/initramfs.cpio
boot() { # boot TIMEOUT ACCEL-ARGS...: boots $INITRD, the console goes to $LOGF
  local t=$1; shift
  qemu_boot "$B/arch/x86/boot/bzImage" "$INITRD" "$LOGF" "$t" -m 512M \
    -append "console=ttyS0 panic=-1 oops=panic loglevel=7" "$@"
}
ACCEL_USED=
BOOT_SECS=0
if [ "$ACCEL" != tcg ] && { exec 3<>/dev/kvm; } 2>/dev/null; then
  exec 3>&-
  say "booting under KVM (timeout ${KVM_TIMEOUT}s, console in $LOGF)"
  t0=$(date +%s); boot "$KVM_TIMEOUT" -enable-kvm -cpu host; BOOT_SECS=$(( $(date +%s) - t0 ))
  ACCEL_USED=kvm
  grep -q '^RESULT: ' "$LOGF" || { echo "   no RESULT line under KVM; falling back to TCG"; cp "$LOGF" "$LOGF.kvm"; ACCEL_USED=; }
elif [ "$ACCEL" = kvm ]; then
  die "KB_ACCEL=kvm but /dev/kvm cannot be opened"
fi
if [ -z "$ACCEL_USED" ] && [ "$ACCEL" != kvm ]; then
  say "booting under TCG (timeout ${TCG_TIMEOUT}s, console in $LOGF)"
  t0=$(date +%s); boot "$TCG_TIMEOUT" -accel tcg -cpu max; BOOT_SECS=$(( $(date +%s) - t0 ))
  ACCEL_USED=tcg
fi
tr -d '\r' < "$LOGF" > "$LOGF.txt" && mv "$LOGF.txt" "$LOGF"
grep -E '^(PASS|FAIL|RESULT): ' "$LOGF" | sed 's/^/   /' || true
if grep -q '^RESULT: PASS' "$LOGF"; then BOOT=PASS; else BOOT=FAIL; fi

# ---- the probes: the kernel's verdict on each must be `dwarf2btf verify --kernel-version
# $KREL`'s (exit 0 valid, 1 invalid); dwarf2btf is the one built here, whatever PAHOLE is
VERIFY=$(cd "$REPO" && readlink -f "${CARGO_TARGET_DIR:-target}")/release/dwarf2btf
if [ "$(basename "$REAL")" != dwarf2btf ] || [ ! -x "$VERIFY" ]; then
  (cd "$REPO" && cargo build --release)
fi
PROBES_OK=1 PROBE_LINES=()
while read -r name path; do
  read -r verdict errno reason < <(sed -n "s/^PROBE $name //p" "$LOGF" | head -n 1) || true
  set +e; "$VERIFY" verify --kernel-version "$KREL" "$REPO/tests/data/probes/$name.btf" > "$B/probe-$name.verify" 2>&1; vrc=$?; set -e
  case $vrc in 0) says=valid ;; 1) says=invalid ;; *) says="no verdict (exit $vrc)" ;; esac
  case ${verdict:-}:$says in
    accepted:valid|rejected:invalid) agree=agrees ;;
    *) agree=DISAGREES; PROBES_OK=0 ;;
  esac
  line="$name: ${verdict:-no PROBE line}${errno:+ (errno $errno${reason:+ $reason})}; verify --kernel-version $KREL: $says; $agree"
  PROBE_LINES+=("$line")
  echo "   probe $line"
  [ "$agree" = agrees ] || sed 's/^/     /' "$B/probe-$name.verify"
done < "$R/probes/list"
[ ${#PROBE_LINES[@]} -gt 0 ] || die "no probes in the initramfs"

# ---- negative control: the same boot with one module's BTF corrupted (a struct member
# pointing at a type id that does not exist) must give RESULT: FAIL naming that module, or
# the PASS above proves nothing. KB_NEGATIVE=0 skips it.
NEGATIVE="not run"
if [ "${KB_NEGATIVE:-1}" != 1 ] && [ -n "${KB_SKIPPED:-}" ]; then
  echo "kernel-build.sh $VER: negative control not run (KB_NEGATIVE=$KB_NEGATIVE)" >> "$KB_SKIPPED"
fi
if [ "$BOOT" = PASS ] && [ "${KB_NEGATIVE:-1}" = 1 ]; then
  say "negative control: one module's BTF corrupted"
  victim=
  while IFS= read -r ko; do
    objcopy --dump-section .BTF="$B/victim.btf" "$R$ko" "$B/victim.tmp.ko" 2>/dev/null || continue
    if python3 "$REPO/scripts/check/kernel-build/corrupt-btf.py" "$B/victim.btf" "$B/victim.bad.btf"; then
      victim=$ko
      break
    fi
  done < "$R/etc/modules.list"
  [ -n "$victim" ] || die "negative control: no module has a struct to corrupt"
  cp "$R$victim" "$B/victim.ko"
  objcopy --update-section .BTF="$B/victim.bad.btf" "$R$victim"
  make_initramfs "$R" "$REPO/scripts/check/kernel-build/init.c" "$B/initramfs-negative.cpio"
  cp "$B/victim.ko" "$R$victim"
  INITRD=$B/initramfs-negative.cpio LOGF=$B/console-negative.log
  if [ "$ACCEL_USED" = kvm ]; then boot "$KVM_TIMEOUT" -enable-kvm -cpu host; else boot "$TCG_TIMEOUT" -accel tcg -cpu max; fi
  tr -d '\r' < "$LOGF" > "$LOGF.txt" && mv "$LOGF.txt" "$LOGF"
  name=$(basename "$victim" .ko)
  grep -E '^(FAIL|RESULT): ' "$LOGF" | sed 's/^/   /' || true
  if grep -q '^RESULT: FAIL' "$LOGF" && grep -q "^FAIL: .*$name" "$LOGF"; then
    NEGATIVE="RESULT: FAIL with $name's BTF corrupted, as it must (console: $LOGF)"
  else
    die "negative control: the boot with $name's BTF corrupted did not fail ($LOGF)"
  fi
  INITRD=$B/initramfs.cpio LOGF=$B/console.log
fi

# ---- summary
{
  echo "kernel:              $SRC_PKG $SRC_VERSION ($KREL), tinyconfig + BTF, $(wc -l < "$R/etc/modules.list") modules"
  echo "compilers:           $(gcc --version | head -n 1); $(ld --version | head -n 1)"
  echo "encoder:             $REAL (run as $RUN)"
  echo "encoder --version:   $ENC_VERSION"
  echo "CONFIG_PAHOLE_VERSION=$PAHOLE_VERSION"
  echo "build (make -j$JOBS):   ${BUILD_SECS}s wall"
  echo "encoder calls:       $(awk '/ -> exit / { n++; t = $(NF-1); if (/--btf_base/) { m++; mt += t } else vt += t }
        END { printf "%d (vmlinux %.2f s; %d modules %.2f s)", n, vt, m, mt }' "$B/pahole-calls.log") (see $B/pahole-calls.log)"
  echo "$SIZES"
  for m in "${MODS[@]}"; do echo "  $m"; done
  echo "$INPLACE"
  echo "boot ($ACCEL_USED):          $BOOT in ${BOOT_SECS}s (console: $LOGF)"
  echo "negative control:    $NEGATIVE"
  echo "vs pahole:           $ORACLE"
  echo "probes (BPF_BTF_LOAD vs verify --kernel-version $KREL):"
  for l in "${PROBE_LINES[@]}"; do echo "  $l"; done
  echo "build dir:           $B"
  echo "encoder inputs:      $B/encoder-inputs"
} > "$B/summary.txt"
say "summary"
cat "$B/summary.txt"
if [ "$BOOT" != PASS ]; then
  echo "---- console log (BTF/BPF, module and check lines, and the last 40 lines)" >&2
  grep -nE 'BTF|BPF|btf|module|Kernel panic|RESULT|FAIL|PASS' "$LOGF" | head -n 80 >&2 || true
  echo "...." >&2
  tail -n 40 "$LOGF" >&2
  exit 1
fi
[ "$ORACLE_OK" = 1 ] || die "vmlinux's BTF differs from pahole's oracle: $ORACLE"
[ "$PROBES_OK" = 1 ] || die "the kernel and verify --kernel-version $KREL disagree on a probe (probes above)"
