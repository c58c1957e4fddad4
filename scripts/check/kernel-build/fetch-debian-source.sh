#!/usr/bin/env bash
# Fetches linux-source-VER from a Debian suite (7.2 from unstable, 7.3 from experimental)
# through a private apt configuration under DIR (the machine's own sources and package
# database are not touched, and nothing is installed), unpacks the .deb under DIR/deb/ and
# prints, on stdout, one line:
#
#   PACKAGE VERSION TARBALL        e.g. linux-source-7.2 7.2.13-1 DIR/deb/usr/src/linux-source-7.2.tar.xz
#
#   scripts/check/kernel-build/fetch-debian-source.sh DIR SUITE PACKAGE
#
# DIR/apt/ holds the suite's sources list, an empty dpkg status, the package lists and apt's
# cache. The lists are refreshed on every run (unstable and experimental move); the .deb is
# kept in DIR/debs/ and unpacked again only when the version changes. Needs apt-get and
# dpkg-deb; apt downloads as the caller (APT::Sandbox::User), since _apt may not reach DIR.
set -euo pipefail

USAGE="usage: fetch-debian-source.sh DIR SUITE PACKAGE"
DIR=${1:?$USAGE}
SUITE=${2:?$USAGE}
PKG=${3:?$USAGE}
die() { echo "fetch-debian-source: error: $*" >&2; exit 1; }
mkdir -p "$DIR/debs"
# shellcheck source=../private-apt.sh
. "$(dirname "$0")/../../setup/private-apt.sh"
private_apt "$DIR" "$SUITE" || die "apt-get update for $SUITE failed (is deb.debian.org reachable?)"
VERSION=$(apt-cache "${APT[@]}" show "$PKG" | awk '/^Version: / {print $2}' | sort -V | tail -n 1)
[ -n "$VERSION" ] || die "Debian $SUITE has no $PKG"

DEB=$(ls "$DIR/debs/${PKG}_${VERSION//:/%3a}_"*.deb 2>/dev/null | head -n 1 || true)
if [ -z "$DEB" ]; then
  echo "fetch-debian-source: downloading $PKG $VERSION from $SUITE" >&2
  (cd "$DIR/debs" && apt-get "${APT[@]}" download -qq "$PKG=$VERSION" >&2) \
    || die "apt-get download $PKG=$VERSION failed"
  DEB=$(ls "$DIR/debs/${PKG}_${VERSION//:/%3a}_"*.deb 2>/dev/null | head -n 1 || true)
  [ -n "$DEB" ] || die "apt-get download left no .deb for $PKG $VERSION in $DIR/debs"
  # only the newest .deb is kept
  find "$DIR/debs" -name 'linux-source-*.deb' ! -path "$DEB" -delete
fi
[ "$(dpkg-deb -f "$DEB" Version)" = "$VERSION" ] || die "$DEB is not version $VERSION"

TARBALL=$DIR/deb/usr/src/$PKG.tar.xz
if [ "$(cat "$DIR/deb/.unpacked" 2>/dev/null || true)" != "$PKG $VERSION" ] || [ ! -f "$TARBALL" ]; then
  rm -rf "$DIR/deb"
  dpkg-deb -x "$DEB" "$DIR/deb"
  [ -f "$TARBALL" ] || die "$DEB has no usr/src/$PKG.tar.xz"
  echo "$PKG $VERSION" > "$DIR/deb/.unpacked"
fi
echo "$PKG $VERSION $TARBALL"
