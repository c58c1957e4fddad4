#!/usr/bin/env bash
# The whole test suite, from a fresh Debian machine: installs the test dependencies, fetches
# the reference kernel (cached), runs the unit/integration tests (release mode: the kernel
# tests encode a real vmlinux) and the loom model-checking suite when it exists.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-test-deps.sh
DWARF2BTF_VMLINUX=$(scripts/fetch-kernel.sh)
export DWARF2BTF_VMLINUX DWARF2BTF_REQUIRE_KERNEL=1

cargo test --release --workspace
# loom models of the lock-free function table (own target dir: --cfg loom rebuilds everything)
RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom cargo test --release -p loom-tests --tests
