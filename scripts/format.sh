#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The hand-written C and its headers against .clang-format (clang-format 14,
# Debian 12's, as CI installs it; CMR_CLANG_FORMAT picks another binary).
# generated/ is left out: the generator formats what it writes, and
# `python3 -m generator --check` checks it.
#
#   bash scripts/format.sh check   # lists the files clang-format would change; exit 1 if any
#   bash scripts/format.sh apply   # formats them in place
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

usage() {
  echo "usage: bash scripts/format.sh check|apply" >&2
  exit 2
}
[[ $# -eq 1 ]] || usage

tool=${CMR_CLANG_FORMAT:-}
if [[ -z $tool ]]; then
  tool=$(command -v clang-format-14 || command -v clang-format || true)
fi
if [[ -z $tool ]] || ! command -v "$tool" >/dev/null; then
  echo "scripts/format.sh: clang-format not found (apt-get install clang-format, or set CMR_CLANG_FORMAT)" >&2
  exit 1
fi

# Tracked files and untracked ones git does not ignore, as scripts/spdx.py chooses them.
mapfile -t files < <(git ls-files --cached --others --exclude-standard -- '*.c' '*.h' '*.cpp' '*.hpp' '*.cu' ':!:generated/' ':!:go/internal/capi/capi_swig_wrap.c')

case $1 in
  check)
    unformatted=()
    for f in "${files[@]}"; do
      [[ -f $f ]] || continue # deleted in the working tree
      "$tool" --style=file "$f" | cmp -s - "$f" || unformatted+=("$f")
    done
    if [[ ${#unformatted[@]} -gt 0 ]]; then
      printf '%s: not formatted (bash scripts/format.sh apply)\n' "${unformatted[@]}" >&2
      exit 1
    fi
    echo "${#files[@]} C and C++ files formatted as .clang-format says"
    ;;
  apply)
    existing=()
    for f in "${files[@]}"; do [[ -f $f ]] && existing+=("$f"); done
    "$tool" --style=file -i "${existing[@]}"
    echo "formatted ${#existing[@]} C files"
    ;;
  *) usage ;;
esac
