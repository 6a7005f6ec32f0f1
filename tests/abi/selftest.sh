#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The abi.check test: scripts/abi.sh tells a compatible library from an
# incompatible one. Over the build's own libcmr.so (no committed baseline
# involved): a baseline made from it passes; a baseline with a function the
# library lacks (as if the library had removed it) fails `check`, and
# `update` refuses it while the soname is unchanged but takes it with a
# bumped one. Skipped (77) without libabigail.
#
#   selftest.sh SOURCE_DIR BUILD_DIR
set -uo pipefail
source_dir=$1
build=$(cd "$2" && pwd)
command -v abidw >/dev/null && command -v abidiff >/dev/null || {
  echo "no abidw/abidiff (Debian: abigail-tools): skipped"
  exit 77
}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
abi() { CMR_ABI_BASELINE=$1 bash "$source_dir/scripts/abi.sh" "$2" "$build"; }
failures=0
expect() { # expect STATUS WHAT COMMAND...
  local want=$1 what=$2 status=0
  shift 2
  "$@" >"$work/out" 2>&1 || status=$?
  if [[ $status == "$want" ]]; then
    echo "ok: $what"
  else
    echo "FAIL: $what: exit $status, not $want"
    cat "$work/out"
    failures=$((failures + 1))
  fi
}

expect 0 "a baseline made from the library" abi "$work/same.abi" update
expect 0 "the library checks against its own baseline" abi "$work/same.abi" check
# cmr_version renamed in the baseline: the library "removed" cmr_version_gone.
sed "s/'cmr_version'/'cmr_version_gone'/g" "$work/same.abi" >"$work/removed.abi"
grep -q cmr_version_gone "$work/removed.abi" || { echo "FAIL: the baseline has no cmr_version to rename"; exit 1; }
expect 1 "a removed function fails the check" abi "$work/removed.abi" check
grep -q "cmr_version_gone" "$work/out" || { echo "FAIL: the report does not name the removed function"; failures=$((failures + 1)); }
cp "$work/removed.abi" "$work/update.abi"
expect 1 "update refuses an incompatible baseline with the same soname" abi "$work/update.abi" update
cmp -s "$work/update.abi" "$work/removed.abi" || { echo "FAIL: the refused update changed the baseline"; failures=$((failures + 1)); }
sed "s/soname='libcmr[.]so[.][0-9]*'/soname='libcmr.so.999'/" "$work/removed.abi" >"$work/bumped.abi"
expect 0 "update takes an incompatible change once the soname was bumped" abi "$work/bumped.abi" update
((failures == 0))
