#!/usr/bin/env bash
# The whole test suite, from a fresh Debian machine: installs the test dependencies, fetches
# the reference kernel and its modules (cached), runs the unit/integration tests (the
# `testing` profile, release code with thin LTO: the kernel tests encode a real vmlinux and 24
# modules), the loom model-checking suite, and builds and boots real kernels (Debian's 6.12
# and 6.1, unstable's 7.2 and experimental's 7.3, whose vmlinux BTF must equal pahole's
# committed one) with dwarf2btf as PAHOLE.
#
#   scripts/test.sh                       # everything (about 25-30 minutes on 2 cores)
#   KERNEL_BUILDS="" scripts/test.sh      # without the kernel builds
#   scripts/test.sh --quick               # the house rules and the tests that need no kernel
set -euo pipefail
cd "$(dirname "$0")/.."

# The house rules: formatted, and no clippy warning in any crate of the workspace (Cargo.toml's
# lints included: every unsafe block documented, no unsafe operation outside an unsafe block,
# every public item documented and none public that cannot be reached).
house_rules() {
  cargo fmt --all -- --check
  cargo clippy --workspace --all-targets -- -D warnings
  # Every test's scratch files live under its own directory (tests/common's `scratch`): a path
  # two tests share races when they run at once, as they do from a fresh clone.
  if grep -rn 'CARGO_TARGET_TMPDIR' tests --include='*.rs' | grep -v '^tests/common/mod.rs:'; then
    echo "test.sh: the lines above bypass tests/common's per-test scratch(); use scratch()" >&2
    exit 1
  fi
  # The layering (docs/architecture.md) is tests/architecture.rs, run with the other tests: an
  # import up the order of modules, or a circle between files, fails it.
}

# The quick tier, for the edit-test loop: the house rules, then every test of the workspace
# but those of the real kernel's binary (tests/real_kernel), with the reference inputs pointed
# nowhere (so the tests that would encode the reference vmlinux skip, saying so). No loom, sanitizers, Miri or
# kernel builds: the full run has them.
if [ "${1-}" = --quick ]; then
  house_rules
  export DWARF2BTF_VMLINUX=/nonexistent DWARF2BTF_MODULES=/nonexistent
  cargo nextest run --cargo-profile testing --workspace -E 'not binary(real_kernel)'
  exit 0
fi

scripts/setup/install-test-deps.sh
DWARF2BTF_VMLINUX=$(scripts/setup/fetch-kernel.sh)
DWARF2BTF_MODULES=$(scripts/setup/fetch-kernel.sh --modules)
# pahole 1.32 (Debian unstable's binary and libraries, run through unstable's loader): the
# release whose output the tests compare with where they run pahole live.
DWARF2BTF_PAHOLE_1_32=$(scripts/setup/fetch-pahole-1.32.sh)
export DWARF2BTF_VMLINUX DWARF2BTF_MODULES DWARF2BTF_PAHOLE_1_32
# As root on Linux (CI), nothing may be skipped: DWARF2BTF_REQUIRE_KERNEL=1 turns a missing
# reference input, a kernel refusing BPF_BTF_LOAD (EPERM/EACCES; tests/real_kernel/btf_load.rs,
# tests/real_kernel/verify_kernel.rs) and a 6.1 boot giving no verdict (tests/real_kernel/kernel_61.rs) into failures
# instead of SKIP lines. Without root the refusal is expected, and those tests skip, saying so.
if [ "$(uname -s)" = Linux ] && [ "$(id -u)" -eq 0 ]; then
  export DWARF2BTF_REQUIRE_KERNEL=1
fi
# On the pinned image (not a fallback kernel, see scripts/setup/fetch-kernel.sh), the checks against
# pahole HEAD's output for it must run: DWARF2BTF_REQUIRE_PINNED=1 makes a mismatch a failure.
if [ "$(readelf -n "$DWARF2BTF_VMLINUX" | awk '/Build ID/ {print $3; exit}')" = "$(scripts/setup/fetch-kernel.sh --build-id)" ]; then
  export DWARF2BTF_REQUIRE_PINNED=1
fi

# What the tests could not check (tests/common's record_skip) is listed at the end, pass or
# fail; under CI=true a skip that is not an accepted limit fails the run
# (scripts/check/skip-verdict.sh).
SKIPPED=${CARGO_TARGET_DIR:-target}/tmp/skipped.txt
rm -f "$SKIPPED"
report_skips() {
  local status=$?
  scripts/check/skip-verdict.sh "$SKIPPED" || status=1
  exit "$status"
}
trap report_skips EXIT

house_rules
# cargo-nextest runs each test in its own process under a time limit (.config/nextest.toml):
# a test that hangs is killed and fails, naming itself, instead of stalling the run. It does
# not run doctests; cargo test does.
cargo nextest run --cargo-profile testing --workspace
cargo test --profile testing --workspace --doc
# The fuzzers' crash inputs once more with overflow checks on (a debug build): the arithmetic
# overflows they found wrap silently in release, so only this run could see them return.
cargo nextest run --test fuzz_regressions
# loom models of the lock-free function table and the dedup hand-over (own target dir:
# --cfg dwarf2btf_loom rebuilds everything), each in its own process under nextest's time
# limit (.config/nextest.toml, profile loom); then the limit's negative control: a test made
# to hang must be killed by nextest (TIMEOUT) and fail the run (`timeout` ends the check if
# the limit does not fire, and the check fails).
loom_target=target/loom
loom() {
  RUSTFLAGS="--cfg dwarf2btf_loom" CARGO_TARGET_DIR=$loom_target "$@"
}
loom cargo nextest run --cargo-profile testing -p loom-tests --profile loom
if DWARF2BTF_LOOM_HANG=1 loom timeout ${LOOM_HANG_CHECK_SECONDS:-300} cargo nextest run --cargo-profile testing \
    -p loom-tests --profile loom-time-limit-check --test time_limit \
    >"$loom_target/hang-check.log" 2>&1; then
  echo "test.sh: the loom time limit did not stop a hanging test ($loom_target/hang-check.log)" >&2
  exit 1
fi
if ! grep -q 'TIMEOUT' "$loom_target/hang-check.log"; then
  cat "$loom_target/hang-check.log" >&2
  echo "test.sh: the hanging loom test failed, but not by the time limit" >&2
  exit 1
fi
# shuttle's randomized schedulers (PCT and uniform random, fixed seeds and iterations) over the
# shared table and the pipeline's owner hand-over at production's sizes, 8, 16 and 64 owners
# (loom-tests/tests/shuttle_tables.rs; own target dir and a quickly built optimized profile:
# --cfg dwarf2btf_shuttle rebuilds the library). Then the negative control: with a mutant
# switched on (a racy push, an owner saving its batches out of order), the run must fail on
# the invariant it breaks.
shuttle_target=target/shuttle
shuttle() {
  RUSTFLAGS="--cfg dwarf2btf_shuttle" CARGO_TARGET_DIR=$shuttle_target cargo nextest run \
    --profile shuttle --cargo-profile checks -p loom-tests -E 'binary(shuttle_tables)' "$@"
}
shuttle
for mutant in racy_push unordered_saves; do
  if DWARF2BTF_MUTANT=$mutant shuttle >"$shuttle_target/$mutant.log" 2>&1; then
    echo "test.sh: shuttle did not catch the $mutant mutant ($shuttle_target/$mutant.log)" >&2
    exit 1
  fi
  if ! grep -qE 'a node was lost from its list|an instance is lost or misplaced' \
      "$shuttle_target/$mutant.log"; then
    cat "$shuttle_target/$mutant.log" >&2
    echo "test.sh: the $mutant mutant failed, but not on the folds' invariant" >&2
    exit 1
  fi
done
# ThreadSanitizer over the function tables' unit tests (a reduced run: a debug build of the
# library's tests, only `functions::table::`, one test at a time; own target dir). std is not
# instrumented: the tests join their threads explicitly, and .config/tsan-suppressions.txt
# silences libtest's own hand-offs (each line says why). Then the negative control: with an
# ordering mutant switched on (`--cfg dwarf2btf_mutants`, DWARF2BTF_MUTANT), TSan must report
# the race on a node's link. docs/concurrency.md, "Verification".
tsan_target=target/tsan
tsan() {
  RUSTC_BOOTSTRAP=1 CARGO_TARGET_DIR=$tsan_target \
    RUSTFLAGS="-Zsanitizer=thread -Cunsafe-allow-abi-mismatch=sanitizer --cfg dwarf2btf_mutants" \
    TSAN_OPTIONS="halt_on_error=1 suppressions=$PWD/.config/tsan-suppressions.txt" \
    cargo test --target x86_64-unknown-linux-gnu --lib "$@"
}
tsan -- functions::table:: --test-threads=1
for mutant in relaxed_find relaxed_publish; do
  if DWARF2BTF_MUTANT=$mutant tsan -- contract_under_the_mutant_in_the_environment \
      --test-threads=1 >"$tsan_target/$mutant.log" 2>&1; then
    echo "test.sh: ThreadSanitizer did not fail the $mutant mutant ($tsan_target/$mutant.log)" >&2
    exit 1
  fi
  if ! grep -q 'WARNING: ThreadSanitizer: data race' "$tsan_target/$mutant.log"; then
    cat "$tsan_target/$mutant.log" >&2
    echo "test.sh: the $mutant mutant failed, but not by a ThreadSanitizer report" >&2
    exit 1
  fi
done
# Miri over the shared table's unit tests: the arena's raw pointers under Stacked Borrows,
# every access against Miri's data-race detector, the atomics under its weak-memory
# emulation (a reduced run: the other designs share nothing unsafe; own target dir).
CARGO_TARGET_DIR=target/miri cargo +nightly miri test --lib -- functions::table::shared::
# real kernels built with dwarf2btf as PAHOLE, booted under qemu, accepting their own BTF;
# a 7.x comparison with pahole's output that cannot run (Debian moved on) is listed with the
# skips
ALL_BUILDS="6.12 6.1 7.2 7.3"
for version in ${KERNEL_BUILDS-$ALL_BUILDS}; do
  KB_SKIPPED=$SKIPPED scripts/check/kernel-build.sh "$version"
done
for version in $ALL_BUILDS; do
  case " ${KERNEL_BUILDS-$ALL_BUILDS} " in
    *" $version "*) ;;
    *) mkdir -p "$(dirname "$SKIPPED")"
       echo "scripts/test.sh: kernel build $version not run (KERNEL_BUILDS=\"${KERNEL_BUILDS-}\")" >> "$SKIPPED" ;;
  esac
done
