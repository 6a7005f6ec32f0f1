#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The tools.cli test: every command-line program given follows tools/cli.h:
# --help prints its usage on stdout and exits 0, --version prints its name
# and VERSION and exits 0, an unknown option exits 2 with the usage on stderr.
#
#   conventions.sh VERSION PROGRAM...
set -uo pipefail
version=$1
shift
failures=0
fail() {
  echo "FAIL: $*" >&2
  failures=$((failures + 1))
}
for program in "$@"; do
  name=$(basename "$program")
  out=$("$program" --help 2>&1)
  status=$?
  [[ $status == 0 ]] || fail "$name --help exited $status"
  [[ $out == "usage: $name "* ]] || fail "$name --help did not start with its usage: $out"
  out=$("$program" --version 2>&1)
  status=$?
  [[ $status == 0 ]] || fail "$name --version exited $status"
  [[ $out == "$name $version ("*" build)" ]] || fail "$name --version printed '$out', not its name and $version"
  out=$("$program" --no-such-option 2>&1 >/dev/null)
  status=$?
  [[ $status == 2 ]] || fail "$name --no-such-option exited $status, not 2"
  [[ $out == *"usage: $name "* ]] || fail "$name --no-such-option gave no usage on stderr: $out"
  echo "ok: $name"
done
((failures == 0)) || exit 1
echo "conventions.sh: $# programs answer --help, --version and a bad option"
