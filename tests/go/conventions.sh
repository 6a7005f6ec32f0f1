#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The go.conventions test: `go doc` shows the package cmr's description
# (the license line is not its first line), and every generated Go file
# (go/, generated/tests/go/) carries the line Go's tools recognise,
# matching ^// Code generated .* DO NOT EDIT\.$.
#
#   conventions.sh SOURCE_DIR GO-COMMAND...
set -uo pipefail
source_dir=$1
shift
failures=0
doc=$(cd "$source_dir/go" && "$@" doc ./cmr 2>&1) || { echo "FAIL: go doc ./cmr: $doc"; exit 1; }
description=$(sed -n '2,3p' <<<"$doc")
echo "go doc ./cmr begins: $(head -n 3 <<<"$doc")"
if [[ $description != *"Package cmr is the Go binding of cmr"* || $doc == *SPDX* ]]; then
  echo "FAIL: go doc shows no package description (or shows the license line)"
  failures=$((failures + 1))
fi
for file in "$source_dir"/go/cmr/resources_generated.go "$source_dir"/generated/tests/go/*.go; do
  if ! grep -qE '^// Code generated .* DO NOT EDIT\.$' "$file"; then
    echo "FAIL: ${file#"$source_dir"/} lacks '// Code generated ... DO NOT EDIT.'"
    failures=$((failures + 1))
  fi
done
((failures == 0)) && echo "conventions.sh: the package description and the generated files' header line are Go's"
((failures == 0))
