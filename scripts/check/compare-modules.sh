#!/usr/bin/env bash
# Encodes every module of the reference kernel (Debian 6.1.0-57 cloud -dbg, ~1,100 .ko with
# DWARF) as split BTF against the vmlinux BTF, two at a time as `make -j2` would, checks each
# with `dwarf2btf verify --base` and `bpftool btf -B base dump`, and compares it with pahole
# 1.32's output for the same module (Debian unstable's, scripts/setup/fetch-pahole-1.32.sh), made
# here once into $ORACLE/<path>.btf (or another encoder's, made beforehand into ORACLE). The
# base is pahole 1.32's vmlinux BTF (tests/data): modules must be encoded against a base from
# the same pahole release, or the types that reach multi-dimensional arrays are repeated.
#
#   scripts/check/compare-modules.sh                 # all modules
#   MODULES_LIMIT=50 scripts/check/compare-modules.sh
#
# Per module it reports one of: identical (type and string sections equal), funcs (types,
# variables and datasecs equal; functions differ, listed with dwarf2btf's -V reason), or
# TYPES (types differ: a defect). Prints the counts and the wall/CPU time of the encoding.
set -euo pipefail
cd "$(dirname "$0")/../.."

CACHE=${DWARF2BTF_CACHE:-$HOME/.cache/dwarf2btf}
MODULES=${MODULES:-$(scripts/setup/fetch-kernel.sh --modules)}
BASE=${BASE:-$(scripts/setup/oracle.sh vmlinux-6.1.0-57-cloud-amd64.pahole-1.32.btf)}
ORACLE=${ORACLE:-$CACHE/pahole-1.32-modules}
OUT=${OUT:-$CACHE/dwarf2btf-modules}
cargo build --release --quiet
BIN=$PWD/target/release/dwarf2btf
FLAGS="-J -j1 -V --btf_features=encode_force,var,float,enum64,decl_tag,type_tag,optimized_func,consistent_func,decl_tag_kfuncs --lang_exclude=rust"

if [ -z "${COMPARE_ONLY:-}" ]; then
rm -rf "$OUT"
mkdir -p "$OUT"
(cd "$MODULES" && find . -name '*.ko' | sed 's|^\./||' | sort) > "$OUT/list"
if [ -n "${MODULES_LIMIT:-}" ]; then   # an even sample across the tree
  step=$(( ($(wc -l < "$OUT/list") + MODULES_LIMIT - 1) / MODULES_LIMIT ))
  awk -v s="$step" 'NR % s == 1 || s == 1' "$OUT/list" > "$OUT/list.tmp"
  mv "$OUT/list.tmp" "$OUT/list"
fi
echo "== encoding $(wc -l < "$OUT/list") modules against $BASE (2 at a time)"
export BIN BASE MODULES OUT FLAGS
/usr/bin/time -f "%e s wall, %U s user, %S s sys" -o "$OUT/time" \
  xargs -P2 -I{} sh -c 'm={}; o="$OUT/${m%.ko}"; mkdir -p "$(dirname "$o")";
    $BIN $FLAGS --btf_base="$BASE" --btf_encode_detached="$o.btf" "$MODULES/$m" > "$o.log" 2> "$o.err" || echo "$m" >> "$OUT/failed"' \
  < "$OUT/list"
fi
echo "encoding: $(cat "$OUT/time")"

# pahole 1.32's outputs, made once (a stamp marks a complete set).
if [ ! -f "$ORACLE/.complete" ] && [ "$ORACLE" = "$CACHE/pahole-1.32-modules" ]; then
  PAHOLE=$(scripts/setup/fetch-pahole-1.32.sh)
  echo "== pahole 1.32 on the same modules, into $ORACLE"
  export PAHOLE ORACLE FLAGS BASE MODULES
  xargs -P2 -I{} sh -c 'm={}; p="$ORACLE/${m%.ko}"; mkdir -p "$(dirname "$p")";
      "$PAHOLE" $FLAGS --btf_base="$BASE" --btf_encode_detached="$p.btf" "$MODULES/$m" > "$p.log" 2>&1 || true' \
    < "$OUT/list"
  [ -n "${MODULES_LIMIT:-}" ] || touch "$ORACLE/.complete"
fi

# The type and string sections of a raw BTF file (headers differ in length by design).
body() { python3 -c 'import sys,struct; d=open(sys.argv[1],"rb").read(); sys.stdout.buffer.write(d[struct.unpack("<I",d[4:8])[0]:])' "$1"; }

identical=0; funcs=0; types=0; missing=0; invalid=0
: > "$OUT/report"
while read -r m; do
  o="$OUT/${m%.ko}"; p="$ORACLE/${m%.ko}"
  if [ ! -s "$o.btf" ]; then
    if [ -s "$p.btf" ]; then echo "MISSING $m: $(head -c 300 "$o.err")" >> "$OUT/report"; missing=$((missing+1)); fi
    continue
  fi
  if ! "$BIN" verify --base "$BASE" "$o.btf" > /dev/null || ! bpftool btf -B "$BASE" dump file "$o.btf" > /dev/null; then
    echo "INVALID $m" >> "$OUT/report"; invalid=$((invalid+1))
  fi
  [ -s "$p.btf" ] || { echo "ORACLE-MISSING $m" >> "$OUT/report"; continue; }
  if cmp -s <(body "$o.btf") <(body "$p.btf"); then
    identical=$((identical+1))
  elif "$BIN" diff --base "$BASE" --only types,vars,datasecs "$o.btf" "$p.btf" > /dev/null; then
    funcs=$((funcs+1))
    {
      echo "funcs $m"
      { "$BIN" diff --base "$BASE" --only funcs "$o.btf" "$p.btf" || true; } | { grep '^[-+] ' || true; } | while read -r sign _ _ name _; do
        why=$(grep -m1 "^$name : skipping" "$o.log" | sed 's/.*due to //' || true)
        echo "  $sign $name ${why:+(dwarf2btf: $why)}"
      done
    } >> "$OUT/report"
  else
    types=$((types+1)); echo "TYPES $m" >> "$OUT/report"
  fi
done < "$OUT/list"

echo "== $(wc -l < "$OUT/list") modules: $identical identical, $funcs differ in functions only, $types differ in types, $missing not encoded, $invalid invalid"
echo "   failures: $( [ -f "$OUT/failed" ] && wc -l < "$OUT/failed" || echo 0); report: $OUT/report"
[ "$types" -eq 0 ] && [ "$missing" -eq 0 ] && [ "$invalid" -eq 0 ]
