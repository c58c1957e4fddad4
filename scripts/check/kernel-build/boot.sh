# Sourced by scripts/check/kernel-build.sh and scripts/check/kernel-check-6.1.sh: an initramfs around a
# static /init (one C file, built with gcc -static), and a qemu boot of a kernel on it with
# the console on the serial port, under a timeout.

# make_initramfs ROOT INIT_C OUT: compiles INIT_C into ROOT/init and packs ROOT as the newc
# cpio archive OUT (everything owned by root, in a stable order).
make_initramfs() {
  gcc -static -O2 -Wall -o "$1/init" "$2"
  (cd "$1" && find . | LC_ALL=C sort | cpio -o -H newc -R 0:0 --quiet) > "$3"
}

# qemu_boot KERNEL INITRD LOG TIMEOUT QEMU-ARGS...: boots KERNEL on INITRD (qemu exits when
# the guest reboots), the console in LOG; says qemu's exit status (124: timed out).
qemu_boot() {
  local kernel=$1 initrd=$2 log=$3 t=$4
  shift 4
  set +e
  timeout -k 10 "$t" qemu-system-x86_64 -kernel "$kernel" -initrd "$initrd" -nographic -no-reboot \
    "$@" < /dev/null > "$log" 2>&1
  local rc=$?
  set -e
  echo "   qemu exit status $rc$([ $rc -eq 124 ] && echo " (timed out after ${t}s)")"
}
