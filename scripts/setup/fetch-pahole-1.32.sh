#!/usr/bin/env bash
# Fetches Debian unstable's pahole 1.32 binary and the shared libraries it needs, by package
# name through a private apt configuration (scripts/setup/private-apt.sh: the machine's sources and
# package database are not touched, nothing is installed), unpacks them into a cache and
# prints, on stdout, the path of a wrapper that runs that pahole through unstable's own loader:
#
#   scripts/setup/fetch-pahole-1.32.sh          # -> $DWARF2BTF_CACHE/pahole-1.32/pahole
#   "$(scripts/setup/fetch-pahole-1.32.sh)" --version    # v1.32
#
# The package's other tools (pfunct, btfdiff, ...) are in the same cache, under bin/, as
# pahole's own test suite wants them (scripts/check/pahole-tests.sh).
# The wrapper runs `ld-linux-x86-64.so.2 --library-path LIBS usr/bin/pahole "$@"` from the
# unpacked tree, so the binary and every library it loads are unstable's, whatever the machine
# runs (a Debian 12 machine's glibc is too old for it). Debian builds pahole 1.32 against its
# libbpf 1.7.0 package, so this pahole has no `layout` feature and writes the 24-byte header.
#
# The pahole package is pinned (PAHOLE_VERSION, default 1.32-1); the libraries are whatever
# unstable has. When unstable no longer carries the pinned version the script says so and
# fails. Cache: $DWARF2BTF_CACHE, default ~/.cache/dwarf2btf; a stamp holding the versions
# marks a complete unpack.
set -euo pipefail

PAHOLE_VERSION=${PAHOLE_VERSION:-1.32-1}
CACHE=${DWARF2BTF_CACHE:-$HOME/.cache/dwarf2btf}
DIR=$CACHE/pahole-1.32
ROOT=$DIR/root
WRAPPER=$DIR/pahole
STAMP=$DIR/.unpacked
LIBS=(libdwarves1 libbpf1 libdw1t64 libelf1t64 libc6 zlib1g libzstd1 liblzma5 libbz2-1.0 libgcc-s1)
die() { echo "fetch-pahole-1.32: error: $*" >&2; exit 1; }

if [ -x "$WRAPPER" ] && [ "$(head -n 1 "$STAMP" 2>/dev/null || true)" = "pahole $PAHOLE_VERSION" ]; then
  echo "$WRAPPER"
  exit 0
fi

mkdir -p "$DIR/debs"
# shellcheck source=private-apt.sh
. "$(dirname "$0")/private-apt.sh"
private_apt "$DIR" unstable || die "apt-get update for unstable failed (is deb.debian.org reachable?)"
apt-cache "${APT[@]}" show "pahole=$PAHOLE_VERSION" >/dev/null 2>&1 \
  || die "Debian unstable no longer has pahole $PAHOLE_VERSION (it has: $(apt-cache "${APT[@]}" policy pahole | awk '/Candidate/ {print $2}'))"

rm -f "$DIR"/debs/*.deb
echo "fetch-pahole-1.32: downloading pahole $PAHOLE_VERSION and ${LIBS[*]}" >&2
(cd "$DIR/debs" && apt-get "${APT[@]}" download -qq "pahole=$PAHOLE_VERSION" "${LIBS[@]}" >&2) \
  || die "apt-get download failed"
rm -rf "$ROOT"
mkdir -p "$ROOT"
for deb in "$DIR"/debs/*.deb; do
  dpkg-deb -x "$deb" "$ROOT"
done
LOADER=$ROOT/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2
[ -e "$LOADER" ] || LOADER=$ROOT/lib64/ld-linux-x86-64.so.2
[ -e "$LOADER" ] || die "libc6 from unstable has no ld-linux-x86-64.so.2"
[ -x "$ROOT/usr/bin/pahole" ] || die "the pahole package has no usr/bin/pahole"

# bin/: a wrapper per ELF program of the package (pahole, pfunct, ...) and its scripts as they
# are (btfdiff runs the pahole it finds on PATH: put bin/ first).
rm -rf "${DIR:?}/bin"
mkdir -p "$DIR/bin"
for tool in "$ROOT"/usr/bin/*; do
  name=$(basename "$tool")
  if [ "$(head -c 4 "$tool" | od -An -tx1 | tr -d ' ')" = 7f454c46 ]; then
    cat > "$DIR/bin/$name" <<EOF
#!/bin/sh
# Debian unstable's $name (pahole $PAHOLE_VERSION) through unstable's loader (scripts/setup/fetch-pahole-1.32.sh).
exec "$LOADER" --library-path "$ROOT/usr/lib/x86_64-linux-gnu:$ROOT/lib/x86_64-linux-gnu" "$tool" "\$@"
EOF
    chmod 0755 "$DIR/bin/$name"
  else
    cp "$tool" "$DIR/bin/$name"
  fi
done
got=$("$DIR/bin/pahole" --version) || die "the unpacked pahole does not run"
[ "$got" = "v${PAHOLE_VERSION%%-*}" ] || die "the unpacked pahole reports $got, not v${PAHOLE_VERSION%%-*}"
ln -sfn bin/pahole "$WRAPPER"
{
  echo "pahole $PAHOLE_VERSION"
  for deb in "$DIR"/debs/*.deb; do dpkg-deb --showformat='${Package} ${Version}\n' -W "$deb"; done
} > "$STAMP"
echo "$WRAPPER"
