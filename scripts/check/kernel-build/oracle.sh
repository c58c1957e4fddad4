# Sourced by scripts/check/kernel-build.sh (7.2, 7.3): compares the build's vmlinux BTF with pahole's
# for the same build, committed under tests/data/kernel-build-VER/ (tests/data/README.md says
# how it was made), byte for byte. For each of
#
#   vmlinux          the .BTF section of vmlinux (what the kernel loads as
#                    /sys/kernel/btf/vmlinux: the encoder's output after resolve_btfids sorted
#                    it by name)
#   tmp_vmlinux1     the encoder's own output for .tmp_vmlinux1
#                    (--btf_encode_detached=.tmp_vmlinux1.BTF.1, before resolve_btfids), which
#                    the sort could not hide a change in
#
# the expected file is NAME.pahole-1.32.btf.xz's type and string sections (Debian's pahole
# 1.32, built against libbpf 1.7.0, has no `layout`) inside the 32-byte header and kind layout
# section of pahole HEAD's output for the 7.2 build (LAYOUT_REFERENCE below), laid out as libbpf 1.8 lays them (types, layout, strings):
# the header and layout as pahole HEAD writes them, the types as the release does.
#
# The committed oracle holds only for the inputs in its source.txt (the linux-source package
# and version, gcc and ld). When this machine's differ (Debian moved on), pahole 1.32 itself
# ($DWARF2BTF_PAHOLE_1_32, scripts/setup/fetch-pahole-1.32.sh) is run on this build's $TMPV with
# the arguments the build gave the encoder (pahole-calls.log), and tmp_vmlinux1 is compared
# with that; vmlinux's .BTF (resolve_btfids' sort of the same bytes) has no oracle then, which
# is said. Without pahole 1.32 the comparison is skipped, said on stdout and written to
# $KB_SKIPPED when set (scripts/test.sh lists it, and CI fails on it). KB_ORACLE=0 skips it
# too (the run that makes the oracle). Uses $B, $VER, $TMPV, $DETACHED, $SRC_PKG, $SRC_VERSION and $RUN / $REPO
# from kernel-build.sh; sets ORACLE (one line for the summary) and ORACLE_OK (0: a difference).

# The current value of each input that source.txt names (same format: "key value").
oracle_inputs() {
  echo "package $SRC_PKG $SRC_VERSION"
  echo "gcc $(gcc --version | head -n 1)"
  echo "ld $(ld --version | head -n 1)"
}

# pahole HEAD's output for the 7.2 build: its header and kind layout section (the same for
# every kernel: one record per BTF kind libbpf 1.8 knows) are the reference for every 7.x.
LAYOUT_REFERENCE=$REPO/tests/data/kernel-build-7.2/vmlinux.pahole-head.btf.xz

# expected_btf RELEASE_XZ HEAD_XZ OUT: writes the expected file (see the top of this file).
expected_btf() {
  python3 - "$1" "$2" "$3" <<'EOF'
import lzma, struct, sys
rel = lzma.open(sys.argv[1]).read()
head = lzma.open(sys.argv[2]).read()
def section(d, off_at):
    hdr = struct.unpack_from('<I', d, 4)[0]
    off, length = struct.unpack_from('<II', d, off_at)
    return d[hdr + off:hdr + off + length]
types, strings = section(rel, 8), section(rel, 16)
hdr_len, type_off, type_len, str_off, _, layout_off, layout_len = struct.unpack_from('<7I', head, 4)
assert (hdr_len, type_off, layout_off, str_off) == (32, 0, type_len, type_len + layout_len), \
    'pahole HEAD oracle is not laid out as types, layout, strings'
layout = head[32 + layout_off:32 + layout_off + layout_len]
t = len(types)
out = head[:8] + struct.pack('<6I', 0, t, t + layout_len, len(strings), t, layout_len)
open(sys.argv[3], 'wb').write(out + types + layout + strings)
EOF
}

# oracle_cmp NAME DIR FILE: 0 when FILE equals the expected file for NAME; else prints the
# first differing byte and dwarf2btf's first type-level differences and returns 1.
oracle_cmp() {
  local name=$1 dir=$2 file=$3 want=$B/oracle/$1.btf d2b
  mkdir -p "$B/oracle"
  expected_btf "$dir/$name.pahole-1.32.btf.xz" "$LAYOUT_REFERENCE" "$want"
  if cmp -s "$want" "$file"; then
    echo "   $name: equal to pahole's ($(stat -c %s "$file") bytes)"
    return 0
  fi
  echo "   $name: DIFFERS from pahole's: $(stat -c %s "$file") bytes against $(stat -c %s "$want")" >&2
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
    [ -z "${KB_SKIPPED:-}" ] || echo "kernel-build.sh $VER: vmlinux BTF vs pahole not compared (KB_ORACLE=0)" >> "$KB_SKIPPED"
    return
  fi
  [ -f "$dir/source.txt" ] || die "no oracle for $VER: $dir/source.txt is missing"
  have=$(oracle_inputs)
  if [ "$have" != "$(cat "$dir/source.txt")" ]; then
    echo "   inputs differ from $dir/source.txt:"
    diff <(cat "$dir/source.txt") <(echo "$have") | sed 's/^/     /' || true
    compare_with_live_pahole
    return
  fi
  ORACLE_OK=1
  oracle_cmp vmlinux "$dir" "$B/vmlinux.BTF" || ORACLE_OK=0
  oracle_cmp tmp_vmlinux1 "$dir" "$DETACHED" || ORACLE_OK=0
  if [ "$ORACLE_OK" = 1 ]; then
    ORACLE="byte-identical to pahole's (pahole 1.32's types and strings, pahole HEAD's header and layout; vmlinux .BTF $(stat -c %s "$B/vmlinux.BTF") bytes, $TMPV.BTF.1 $(stat -c %s "$DETACHED") bytes)"
  else
    ORACLE="DIFFERS (lines above; this build's files: $B/vmlinux.BTF, $DETACHED; the oracle's: $B/oracle/)"
  fi
}

# The arguments the build gave the encoder for $TMPV, from the wrapper's pahole-calls.log
# ("TIME DIR: ARGS -> exit 0, N s").
tmpv_args() {
  grep -F " $TMPV -> exit 0" "$B/pahole-calls.log" | tail -n 1 | sed -e 's/^[^ ]* [^ ]*: //' -e 's/ -> exit 0.*//'
}

# Runs pahole 1.32 on this build's $TMPV as the build ran the encoder (its detached output
# moved to $B/oracle/live/) and compares tmp_vmlinux1 with that: the oracle for a machine the
# committed one was not made on.
compare_with_live_pahole() {
  local pahole=${DWARF2BTF_PAHOLE_1_32:-} args live=$B/oracle/live arg
  if [ -z "$pahole" ] || [ ! -x "$pahole" ]; then
    ORACLE="skipped: the committed oracle is for other inputs and DWARF2BTF_PAHOLE_1_32 is not set (scripts/setup/fetch-pahole-1.32.sh)"
    echo "   SKIP vmlinux BTF vs pahole: $ORACLE"
    [ -z "${KB_SKIPPED:-}" ] || echo "kernel-build.sh $VER: vmlinux BTF vs pahole $ORACLE" >> "$KB_SKIPPED"
    return
  fi
  args=$(tmpv_args)
  [ -n "$args" ] || die "pahole-calls.log has no successful call on $TMPV"
  rm -rf "$live" && mkdir -p "$live"
  local -a call=()
  for arg in $args; do
    case $arg in
      --btf_encode_detached=*) call+=("--btf_encode_detached=$live/$TMPV.BTF.1") ;;
      "$TMPV") call+=("$B/encoder-inputs/$TMPV") ;;
      *) call+=("$arg") ;;
    esac
  done
  echo "   pahole 1.32 on this build's $TMPV: $pahole ${call[*]}"
  (cd "$live" && "$pahole" "${call[@]}") > "$live/pahole.log" 2>&1 \
    || die "pahole 1.32 failed on $TMPV ($live/pahole.log)"
  xz -0 -T1 -c "$live/$TMPV.BTF.1" > "$live/tmp_vmlinux1.pahole-1.32.btf.xz"
  ORACLE_OK=1
  oracle_cmp tmp_vmlinux1 "$live" "$DETACHED" || ORACLE_OK=0
  if [ "$ORACLE_OK" = 1 ]; then
    ORACLE="byte-identical to pahole 1.32 run here on $TMPV (types and strings; pahole HEAD's header and layout; $TMPV.BTF.1 $(stat -c %s "$DETACHED") bytes); vmlinux's .BTF has no oracle for these inputs"
  else
    ORACLE="DIFFERS from pahole 1.32 run here (lines above; this build's $DETACHED, the oracle's $B/oracle/)"
  fi
}
