#!/usr/bin/env bash
# Installs what the test suite needs on a fresh Debian machine: the oracles (pahole, bpftool),
# the fixture compilers (gcc, clang), libbpf-sys's build inputs (libelf, zlib, pkg-config),
# binutils (readelf) and GNU time. Idempotent: skips apt when everything is present.
set -euo pipefail

"$(dirname "$0")/apt-install.sh" dwarves bpftool clang llvm gcc libelf-dev zlib1g-dev pkg-config \
  binutils time xz-utils
