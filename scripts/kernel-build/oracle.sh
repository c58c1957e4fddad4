# Sourced by scripts/kernel-build.sh (7.2): compares the build's vmlinux BTF with pahole HEAD's
# for the same build, committed under tests/data/kernel-build-7.2/ (tests/data/README.md says
# how it was made), byte for byte, header and layout section included. Two files:
#
#   vmlinux.pahole-head.btf.xz       the .BTF section of vmlinux (what the kernel loads as
#                                    /sys/kernel/btf/vmlinux: the encoder's output after
#                                    resolve_btfids sorted it by name)
#   tmp_vmlinux1.pahole-head.btf.xz  the encoder's own output for .tmp_vmlinux1
#                                    (--btf_encode_detached=.tmp_vmlinux1.BTF.1, before
#                                    resolve_btfids), which the sort could not hide a change in
#
# The oracle holds only for the inputs in its source.txt (the linux-source package and
# version, gcc and ld): when this machine's differ (sid moved on), the comparison is skipped,
# said on stdout and written to $KB_SKIPPED when set (scripts/test.sh lists it; CI accepts it
# as a limit, scripts/skip-verdict.sh). KB_ORACLE=0 skips it too (the run that makes the
# oracle). Uses $B, $VER, $TMPV, $DETACHED, $SRC_PKG, $SRC_VERSION and $RUN / $REPO from
# kernel-build.sh; sets ORACLE (one line for the summary) and ORACLE_OK (0: a difference).

# The current value of each input that source.txt names (same format: "key value").
oracle_inputs() {
  echo "package $SRC_PKG $SRC_VERSION"
  echo "gcc $(gcc --version | head -n 1)"
  echo "ld $(ld --version | head -n 1)"
}

# oracle_cmp NAME ORACLE_XZ FILE: 0 when FILE equals the decompressed oracle; else prints the
# first differing byte and dwarf2btf's first type-level differences and returns 1.
oracle_cmp() {
  local name=$1 xz=$2 file=$3 want=$B/oracle/$1.btf d2b
  mkdir -p "$B/oracle"
  xz -dc "$xz" > "$want"
  if cmp -s "$want" "$file"; then
    echo "   $name: equal to pahole HEAD's ($(stat -c %s "$file") bytes)"
    return 0
  fi
  echo "   $name: DIFFERS from pahole HEAD's: $(stat -c %s "$file") bytes against $(stat -c %s "$want")" >&2
  echo "   first difference: $(cmp "$want" "$file" 2>&1 | head -n 1) (oracle first)" >&2
  d2b=$RUN
  "$d2b" diff --help 2>&1 | grep -q 'Compare two BTFs' || d2b=${CARGO_TARGET_DIR:-$REPO/target}/release/dwarf2btf
  if [ -x "$d2b" ]; then
    echo "   $d2b diff (oracle, this build), from the first differing item:" >&2
    "$d2b" diff "$want" "$file" 2>&1 | sed -n '/differing item/,$p' | head -n 12 | cut -c1-300 \
      | sed 's/^/     /' >&2 || true
  fi
  return 1
}

compare_with_oracle() {
  local dir=$1 have
  objcopy --dump-section .BTF="$B/vmlinux.BTF" "$B/vmlinux" "$B/oracle-dump.tmp" 2>/dev/null \
    || die "objcopy could not dump vmlinux's .BTF"
  rm -f "$B/oracle-dump.tmp"
  if [ "${KB_ORACLE:-1}" = 0 ]; then
    ORACLE="skipped (KB_ORACLE=0)"
    return
  fi
  [ -f "$dir/source.txt" ] || die "no oracle for $VER: $dir/source.txt is missing"
  have=$(oracle_inputs)
  if [ "$have" != "$(cat "$dir/source.txt")" ]; then
    ORACLE="skipped: needs pahole HEAD's output for these inputs (the oracle is for $(head -n 1 "$dir/source.txt" | cut -d' ' -f2-); regenerate it, tests/data/README.md)"
    echo "   SKIP vmlinux BTF vs pahole HEAD: inputs differ from $dir/source.txt:"
    diff <(cat "$dir/source.txt") <(echo "$have") | sed 's/^/     /' || true
    if [ -n "${KB_SKIPPED:-}" ]; then
      mkdir -p "$(dirname "$KB_SKIPPED")"
      echo "kernel-build.sh $VER: vmlinux BTF vs pahole HEAD $ORACLE" >> "$KB_SKIPPED"
    fi
    return
  fi
  ORACLE_OK=1
  oracle_cmp vmlinux "$dir/vmlinux.pahole-head.btf.xz" "$B/vmlinux.BTF" || ORACLE_OK=0
  oracle_cmp tmp_vmlinux1 "$dir/tmp_vmlinux1.pahole-head.btf.xz" "$DETACHED" || ORACLE_OK=0
  if [ "$ORACLE_OK" = 1 ]; then
    ORACLE="byte-identical to pahole HEAD's (vmlinux .BTF $(stat -c %s "$B/vmlinux.BTF") bytes, $TMPV.BTF.1 $(stat -c %s "$DETACHED") bytes)"
  else
    ORACLE="DIFFERS (lines above; this build's files: $B/vmlinux.BTF, $DETACHED; the oracle's: $B/oracle/)"
  fi
}
