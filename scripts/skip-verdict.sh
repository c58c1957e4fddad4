#!/usr/bin/env bash
# What the tests could not check, and whether that fails the run: prints the skip list that
# tests/common's record_skip wrote (one line per check that did not run, and why), then
# exits 1 when CI=true and a line is not an accepted limit of the machine.
#
#   scripts/skip-verdict.sh target/tmp/skipped.txt
#
# Accepted (listed, not failed): the comparisons with pahole HEAD's output for the pinned
# reference image, when Debian's archive no longer has it and the suite runs on the newest
# cloud kernel instead (README, "What CI accepts"), and kernel-build.sh 7.2's comparison with
# pahole HEAD's vmlinux BTF when sid no longer has the linux-source version (or the machine
# not the gcc and ld) it was made from. Every other skip fails CI: a check that cannot run
# there is a check that did not pass.
set -euo pipefail

SKIPPED=$1
ACCEPTED=("needs pahole's output for the pinned image" "needs pahole's output for these inputs")

if [ ! -s "$SKIPPED" ]; then
  echo "== every check ran (nothing skipped)"
  exit 0
fi
echo "== not checked in this run ($(wc -l < "$SKIPPED")):"
sort "$SKIPPED"
refused=$(grep -vF -e "${ACCEPTED[0]}" -e "${ACCEPTED[1]}" "$SKIPPED" || true)
if [ "${CI:-}" = true ] && [ -n "$refused" ]; then
  echo "== CI=true: these checks did not run, which fails the run:" >&2
  echo "$refused" >&2
  exit 1
fi
