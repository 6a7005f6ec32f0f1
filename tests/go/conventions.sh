#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The go.conventions test: `go doc` shows the package cmr's description
# (the license line is not its first line), and every generated Go file
# (go/, generated/tests/go/) carries the line Go's tools recognise,
# matching ^// Code generated .* DO NOT EDIT\.$; with CGO_ENABLED=0 the
# build fails saying that the binding needs cgo (go/internal/capi/cgo_required.go);
# each type's methods share one receiver name (per package folder of go/).
#
#   conventions.sh SOURCE_DIR GO-COMMAND...   (its last word the go tool, what comes before an env command)
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
go_tool=${*: -1}
with_environment=("${@:1:$#-1}")
if out=$(cd "$source_dir/go" && "${with_environment[@]}" CGO_ENABLED=0 "$go_tool" build ./cmr 2>&1); then
  echo "FAIL: CGO_ENABLED=0 go build ./cmr succeeded"
  failures=$((failures + 1))
elif [[ $out != *cmr_go_binding_needs_cgo__build_with_CGO_ENABLED_1_and_a_C_compiler* ]]; then
  echo "FAIL: CGO_ENABLED=0 go build ./cmr failed without saying that cgo is needed: $out"
  failures=$((failures + 1))
else
  echo "CGO_ENABLED=0 go build ./cmr: $out"
fi
for package in "$source_dir"/go/cmr "$source_dir"/go/internal/capi; do
  mixed=$(cat "$package"/*.go | sed -n 's/^func (\([A-Za-z_][A-Za-z0-9_]*\) \**\([A-Za-z_][A-Za-z0-9_]*\)).*/\2 \1/p' | sort -u |
    awk '{names[$1] = names[$1] " " $2; count[$1]++} END {for (t in count) if (count[t] > 1) print t ":" names[t]}')
  if [[ -n $mixed ]]; then
    echo "FAIL: types of ${package#"$source_dir"/} with more than one receiver name: $mixed"
    failures=$((failures + 1))
  fi
done
for file in "$source_dir"/go/cmr/resources_generated.go "$source_dir"/go/internal/capi/capi_swig.go "$source_dir"/generated/tests/go/*.go; do
  if ! grep -qE '^// Code generated .* DO NOT EDIT\.$' "$file"; then
    echo "FAIL: ${file#"$source_dir"/} lacks '// Code generated ... DO NOT EDIT.'"
    failures=$((failures + 1))
  fi
done
((failures == 0)) && echo "conventions.sh: the package description and the generated files' header line are Go's"
((failures == 0))
