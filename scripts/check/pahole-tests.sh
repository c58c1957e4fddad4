#!/usr/bin/env bash
# Runs pahole's own test suite (the `tests/` directory of a dwarves checkout) twice: once with
# pahole as it is, once with dwarf2btf as the BTF encoder — a `pahole` wrapper first in PATH
# hands every command that encodes BTF (-J, --btf_encode, --btf_encode_detached) to
# dwarf2btf and everything else (reading BTF back, pretty-printing) to the real pahole. Prints
# each test's result both ways; fails when a test that passes with pahole does not pass with
# dwarf2btf.
#
#   scripts/check/pahole-tests.sh DWARVES_TESTS_DIR PAHOLE_BIN_DIR [VMLINUX]
#
# DWARVES_TESTS_DIR: `tests/` of the dwarves source the pahole in PAHOLE_BIN_DIR was built
# from (pahole, pfunct and btfdiff are taken from there). VMLINUX: the kernel image the tests
# read (default: the reference kernel, fetched by scripts/setup/fetch-kernel.sh). Nothing of
# dwarves is built or fetched here.
set -euo pipefail
cd "$(dirname "$0")/../.."

[ $# -ge 2 ] || { sed -n 2,16p "$0" >&2; exit 2; }
TESTS=$(cd "$1" && pwd)
PAHOLE_BIN=$(cd "$2" && pwd)
VMLINUX=${3:-$(scripts/setup/fetch-kernel.sh)}
[ -x "$PAHOLE_BIN/pahole" ] || { echo "no pahole in $PAHOLE_BIN" >&2; exit 2; }
# Some tests use gawk's awk (mawk fails them whichever tool encodes).
awk --version 2>/dev/null | grep -q 'GNU Awk' || { echo "pahole's tests need awk to be GNU awk (apt-get install gawk)" >&2; exit 2; }
cargo build --release --quiet
DWARF2BTF=${CARGO_TARGET_DIR:-$PWD/target}/release/dwarf2btf

WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
cp -r "$TESTS" "$WORK/tests"
mkdir -p "$WORK/wrapper" "$WORK/encoder"
# Under the name pahole, so that tests that look for the encoder's process (`ps -C pahole`,
# reproducible_build counts its threads) find it.
ln -s "$DWARF2BTF" "$WORK/encoder/pahole"
cat > "$WORK/wrapper/pahole" <<EOF
#!/bin/sh
for arg in "\$@"; do
  case "\$arg" in
    -J|--btf_encode|--btf_encode_detached|--btf_encode_detached=*) exec "$WORK/encoder/pahole" "\$@" ;;
  esac
done
exec "$PAHOLE_BIN/pahole" "\$@"
EOF
chmod +x "$WORK/wrapper/pahole"
# The clang_parm tests need DW_CC_nocall, which clang writes from version 15 on (Debian 12's
# clang is 14, with which pahole fails them too): clang 16, when installed
# (scripts/setup/install-test-deps.sh), is the `clang` of both runs.
if command -v clang-16 >/dev/null; then
  mkdir -p "$WORK/clang"
  ln -s "$(command -v clang-16)" "$WORK/clang/clang"
  PATH=$WORK/clang:$PATH
fi

# One run of the suite: "NAME RESULT" lines (pass, skip, FAIL) in file $2.
run_suite() {
  local path=$1 out=$2
  : > "$out"
  for test in "$WORK"/tests/*.sh; do
    local name
    name=$(basename "$test" .sh)
    [ "$name" = test_lib ] && continue
    local status=0
    (cd "$WORK/tests" && PATH="$path" timeout 1800 ./"$name".sh "$VMLINUX") \
      > "$WORK/$name.$(basename "$out").log" 2>&1 || status=$?
    case $status in
      0) echo "$name pass" >> "$out" ;;
      2) echo "$name skip" >> "$out" ;;
      *) echo "$name FAIL($status)" >> "$out" ;;
    esac
  done
}

echo "== pahole $("$PAHOLE_BIN/pahole" --version) alone"
run_suite "$PAHOLE_BIN:$PATH" "$WORK/pahole"
echo "== dwarf2btf encoding, pahole $("$PAHOLE_BIN/pahole" --version) reading back"
run_suite "$WORK/wrapper:$PAHOLE_BIN:$PATH" "$WORK/dwarf2btf"

printf '%-32s %-10s %-10s\n' test pahole dwarf2btf
regressions=0
while read -r name p; do
  d=$(awk -v n="$name" '$1 == n { print $2 }' "$WORK/dwarf2btf")
  printf '%-32s %-10s %-10s\n' "$name" "$p" "$d"
  if [ "$p" = pass ] && [ "$d" != pass ]; then
    regressions=$((regressions + 1))
    echo "--- $name with dwarf2btf (last lines):"
    tail -15 "$WORK/$name.dwarf2btf.log" | sed 's/^/    /'
  fi
done < "$WORK/pahole"
echo "== $regressions test(s) pass with pahole and not with dwarf2btf"
[ "$regressions" -eq 0 ]
