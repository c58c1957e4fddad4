#!/usr/bin/env bash
# Runs one cargo-fuzz target (docs/fuzzing.md) for a given time, installing cargo-fuzz if it is
# missing. New inputs go to fuzz/corpus-work/TARGET (ignored by git), seeded from the committed
# fuzz/corpus/TARGET; crashes land in fuzz/artifacts/TARGET.
#
#   scripts/check/fuzz.sh TARGET [SECONDS] [libFuzzer options...]
#   scripts/check/fuzz.sh list
#
# cargo-fuzz passes nightly-only flags (sanitizers); RUSTC_BOOTSTRAP=1 lets a stable toolchain
# take them. FUZZ_SANITIZER=none builds without AddressSanitizer (about twice as fast). Each
# sanitizer builds in a directory of its own, FUZZ_TARGET_DIR/SANITIZER (FUZZ_TARGET_DIR:
# fuzz/target by default), so that an ASan and a plain run, even at once, never overwrite each
# other's build.
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root/fuzz"
export RUSTC_BOOTSTRAP=1

if ! cargo fuzz --version >/dev/null 2>&1; then
    cargo install --locked cargo-fuzz
fi

target=${1:?usage: scripts/check/fuzz.sh TARGET|list [SECONDS] [libFuzzer options...]}
if [ "$target" = list ]; then
    exec cargo fuzz list
fi
seconds=${2:-600}
shift $(( $# >= 2 ? 2 : 1 ))

sanitizer=${FUZZ_SANITIZER:-address}
target_dir=${FUZZ_TARGET_DIR:-$root/fuzz/target}/$sanitizer

mkdir -p "corpus-work/$target" "corpus/$target"
exec nice -n 10 cargo fuzz run --release --debug-assertions \
    --sanitizer "$sanitizer" --target-dir "$target_dir" "$target" \
    "corpus-work/$target" "corpus/$target" -- \
    -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=10 -print_final_stats=1 "$@"
