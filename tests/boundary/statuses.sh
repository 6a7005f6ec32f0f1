#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Every status of cmr/core.h, with its number, is known wherever a list of
# them is kept by hand: its name in cmr_status_string (error.c), C#'s name
# for it (csharp/swig/cmr_csharp.swg), Go's sentinel (go/cmr/errors.go, same
# number) and the Cython declarations (python/cmr/libcmr/core.pxd). Java's
# Status enum is SWIG's, from core.h itself. A status added to core.h alone
# fails here, naming what lacks it.
#
#   bash tests/boundary/statuses.sh [SOURCE_DIR]
set -euo pipefail
root=${1:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
core=$root/runtime/include/cmr/core.h
error_c=$(find "$root/runtime/src" -name error.c -print -quit)
csharp=$root/csharp/swig/cmr_csharp.swg
go=$root/go/cmr/errors.go
pxd=$root/python/cmr/libcmr/core.pxd

# "NAME NUMBER" for each CMR_ERROR_* enumerator of core.h.
mapfile -t statuses < <(sed -n 's/^ *\(CMR_ERROR_[A-Z_]*\) *= *\([0-9]*\).*/\1 \2/p' "$core")
if ((${#statuses[@]} < 16)); then
  echo "statuses.sh: found ${#statuses[@]} statuses in $core: the enum's layout changed, so did this check's reading" >&2
  exit 2
fi

missing=()
for entry in "${statuses[@]}"; do
  name=${entry% *} number=${entry#* }
  grep -q "case $name: return \"$name\";" "$error_c" || missing+=("$name: no name in ${error_c#$root/}")
  grep -qE "^%rename\([A-Za-z]+\) $name;" "$csharp" || missing+=("$name: no C# name in ${csharp#$root/}")
  grep -qE "^[[:space:]]+$name\$" "$pxd" || missing+=("$name: not declared in ${pxd#$root/}")
  # Go's name is the C name's words in camel case after Err (CUDA and IO upper case).
  go_name=Err$(sed -E 's/^CMR_ERROR_//; s/_/ /g' <<<"$name" | tr 'A-Z' 'a-z' |
    sed -E 's/\b(cuda|io)\b/\U&/g; s/\b([a-z])/\U\1/g; s/ //g')
  grep -qE "^[[:space:]]+$go_name +Status = $number( |$)" "$go" ||
    missing+=("$name: no sentinel $go_name = $number in ${go#$root/}")
done
if ((${#missing[@]} > 0)); then
  printf 'statuses.sh: %s\n' "${missing[@]}" >&2
  exit 1
fi
echo "statuses.sh: ${#statuses[@]} statuses, each named in error.c, C#, Go and the Cython declarations"
