#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The install.programs test: the programs `cmake --install` puts into
# <prefix>/bin start from there in a clean environment (env -i: no
# LD_LIBRARY_PATH, no PATH), finding the libcmr installed beside them
# through their RUNPATH ($ORIGIN/../lib, or wherever the libdir is from the
# bindir). Each answers --version; cmr-demo runs on host memory and
# cmr-replay replays a log.
#
#   installed_programs.sh SOURCE_DIR BUILD_DIR PROGRAM...
set -euo pipefail
source_dir=$1 build_dir=$2
shift 2
source "$source_dir/tests/packaging/scratch.sh" "$source_dir" programs
prefix=$work/prefix
cmake --install "$build_dir" --prefix "$prefix" >"$work/install.log" 2>&1 || {
  echo "FAIL: cmake --install into $prefix:"; cat "$work/install.log"; exit 1; }
for name in "$@"; do
  program=$prefix/bin/$name
  [[ -x $program ]] || { echo "FAIL: $name is not installed in $prefix/bin"; exit 1; }
  readelf -d "$program" | grep -E 'R(UN)?PATH' || true
  out=$(env -i "$program" --version 2>&1) || { echo "FAIL: env -i $program --version: $out"; exit 1; }
  [[ $out == "$name $version "* ]] || { echo "FAIL: $name --version printed '$out'"; exit 1; }
  echo "ok: $out"
done
for name in "$@"; do
  case $name in
    cmr-demo) env -i "$prefix/bin/cmr-demo" --iterations 2 ;;
    cmr-replay) env -i "$prefix/bin/cmr-replay" "$source_dir/tests/replay/rmm_two_threads.csv" "pool(system, initial_pool_size=1MiB)" ;;
  esac
done
echo "installed_programs.sh: $* start from $prefix/bin with a clean environment"
