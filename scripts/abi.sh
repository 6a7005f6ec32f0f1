#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The C ABI of libcmr.so against its committed baseline, abi/libcmr.abi
# (libabigail's XML, public headers only).
#
#   bash scripts/abi.sh check  [BUILD_DIR]   CI: fails on an incompatible change
#   bash scripts/abi.sh update [BUILD_DIR]   regenerates the baseline
#
# BUILD_DIR (default build/host) holds a built libcmr.so with debug
# information (RelWithDebInfo or Debug). The rule (README, "The C ABI"):
# additions are compatible and need nothing; an incompatible change (a
# function or variable removed, a type or signature changed) needs, in the
# same commit, a SOVERSION bump (CMR_SOVERSION in CMakeLists.txt), the
# baseline regenerated from that build, and a CHANGELOG.md entry naming the
# new soname (libcmr.so.N). `check` enforces it: the build must be
# compatible with the baseline and carry its soname; and when the last
# commit changed the baseline incompatibly, it must also have changed the
# soname and named it in CHANGELOG.md. `update` refuses an incompatible
# baseline whose soname was not bumped.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

# CMR_ABI_BASELINE names another baseline file (the abi.check self-test's).
baseline=${CMR_ABI_BASELINE:-abi/libcmr.abi}
headers=(runtime/include/cmr generated/include/cmr)
mode=${1:-}
build=${2:-build/host}
library=$build/libcmr.so
if [[ $mode != check && $mode != update ]] || (($# > 2)); then
  echo "usage: scripts/abi.sh check|update [BUILD_DIR]" >&2
  exit 2
fi
if [[ ! -e $library ]]; then
  echo "abi.sh: no $library: build cmr first (cmake --build $build)" >&2
  exit 2
fi

# soname_of FILE: the soname an abixml file records.
soname_of() { sed -n "s/^<abi-corpus [^>]*soname='\([^']*\)'.*/\1/p;T;q" "$1"; }

# incompatible OLD NEW: whether abidiff finds an incompatible change (its
# status bit 8; bit 4 is a compatible change such as an addition). Prints the report.
incompatible() {
  local status=0
  abidiff --no-added-syms --headers-dir2 "${headers[0]}" --headers-dir2 "${headers[1]}" "$1" "$2" || status=$?
  if ((status & 3)); then
    echo "abi.sh: abidiff $1 $2 failed (status $status)" >&2
    exit 2
  fi
  ((status & 8))
}

current=$(mktemp --suffix=.abi)
previous=$(mktemp --suffix=.abi)
trap 'rm -f "$current" "$previous"' EXIT
abidw --no-corpus-path --no-comp-dir-path --no-show-locs --headers-dir "${headers[0]}" --headers-dir "${headers[1]}" \
  --out-file "$current" "$library"
soname=$(soname_of "$current")

if [[ $mode == update ]]; then
  if [[ -e $baseline ]] && incompatible "$baseline" "$current" && [[ $(soname_of "$baseline") == "$soname" ]]; then
    echo "abi.sh: the change above is incompatible, yet the soname is still $soname:" >&2
    echo "  bump CMR_SOVERSION in CMakeLists.txt, rebuild, and add a CHANGELOG.md entry naming the new soname" >&2
    exit 1
  fi
  cp "$current" "$baseline"
  echo "abi.sh: $baseline regenerated from $library ($soname)"
  exit 0
fi

# ---- check ------------------------------------------------------------------------
if [[ ! -e $baseline ]]; then
  echo "abi.sh: no $baseline: run scripts/abi.sh update" >&2
  exit 1
fi
if [[ $(soname_of "$baseline") != "$soname" ]]; then
  echo "abi.sh: the build's soname is $soname, the baseline's $(soname_of "$baseline"): regenerate the baseline" >&2
  exit 1
fi
if incompatible "$baseline" "$library"; then
  echo "abi.sh: $library is incompatible with $baseline (the report above). Either undo the change, or bump" >&2
  echo "  CMR_SOVERSION, run scripts/abi.sh update and add a CHANGELOG.md entry, all in one commit" >&2
  exit 1
fi
echo "abi.sh: $library ($soname) is compatible with $baseline"

# The last commit: did it change the baseline incompatibly, and if so bump the soname and say so?
if [[ -n ${CMR_ABI_BASELINE:-} ]]; then
  exit 0
fi
if ! git rev-parse -q --verify HEAD~1 >/dev/null 2>&1; then
  echo "abi.sh: no parent commit here (a shallow clone?): the baseline's own change is not checked"
  exit 0
fi
if git diff --quiet HEAD~1 HEAD -- "$baseline" || ! git cat-file -e "HEAD~1:$baseline" 2>/dev/null; then
  exit 0
fi
git show "HEAD~1:$baseline" >"$previous"
if incompatible "$previous" "$baseline" >/dev/null; then
  if [[ $(soname_of "$previous") == "$soname" ]]; then
    echo "abi.sh: the last commit changed $baseline incompatibly without bumping the soname ($soname)" >&2
    exit 1
  fi
  if ! grep -q "^+.*$soname" <<<"$(git diff HEAD~1 HEAD -- CHANGELOG.md)"; then
    echo "abi.sh: the last commit bumped the soname to $soname without a CHANGELOG.md entry naming it" >&2
    exit 1
  fi
  echo "abi.sh: the last commit changed the ABI incompatibly, with the soname bumped to $soname and a CHANGELOG entry"
fi
