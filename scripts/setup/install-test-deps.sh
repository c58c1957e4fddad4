#!/usr/bin/env bash
# Installs what the test suite needs on a fresh Debian machine: cargo-nextest (which runs the
# tests, each under a time limit: .config/nextest.toml), the oracles (pahole, bpftool, and
# python3 for scripts/check/btf-canon.py, which normalises bpftool's dumps for the tests),
# the fixture compilers (gcc, clang, with lld for LTO) and dwz, libbpf-sys's build inputs (libelf, zlib, pkg-config),
# binutils (readelf), GNU time, strace (tests/cli/write_safety.rs), man-db (the man page renders in
# tests/cli/cli_messages.rs), and what
# scripts/check/kernel-check-6.1.sh needs to boot Debian's 6.1 kernel (qemu, cpio, a static libc for
# its /init), and nightly Rust's Miri (the shared function table's unit tests run under it).
# Idempotent: skips apt and rustup when everything is present.
set -euo pipefail

"$(dirname "$0")/apt-install.sh" dwarves bpftool python3 clang clang-16 llvm lld dwz gcc libelf-dev zlib1g-dev pkg-config \
  binutils time xz-utils strace qemu-system-x86 cpio libc6-dev man-db

if ! cargo nextest --version >/dev/null 2>&1; then
  cargo install --locked cargo-nextest
fi

# Miri: nightly's miri and rust-src components (the machine's nightly toolchain when it has
# one, else a minimal one), and Miri's sysroot.
if ! cargo +nightly miri --version >/dev/null 2>&1; then
  rustup toolchain list | grep -q '^nightly' || rustup toolchain install nightly --profile minimal
  rustup +nightly component add miri rust-src
fi
cargo +nightly miri setup >/dev/null
