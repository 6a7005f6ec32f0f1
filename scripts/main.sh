#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The main job on a fresh Debian 12 machine: install what cmr needs,
# regenerate the generated code from spec/, build cmr and run cmr-demo.
#
#   bash scripts/main.sh [--iterations N]     (arguments go to cmr-demo; apt-get runs as root or through sudo)
#
# The CUDA build is made when a CUDA toolkit is installed, the host build
# otherwise; cmr-demo runs on a GPU when there is one. CMR_SKIP_APT=1 skips
# the package installation.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

install_dependencies

echo "==> regenerating generated/ from spec/"
"$PYTHON" -m generator

if have_cuda_toolkit; then
  with_cuda=AUTO
  echo "==> CUDA toolkit found: CUDA build"
else
  with_cuda=OFF
  echo "==> no CUDA toolkit: host build"
fi
build_dir=build/main
cmake -S . -B "$build_dir" -G Ninja -DPython3_EXECUTABLE="$PYTHON" -DCMR_WITH_CUDA="$with_cuda" \
      -DCMR_BUILD_TESTS=OFF --no-warn-unused-cli
cmake --build "$build_dir" -j "$JOBS"

echo "==> $build_dir/cmr-demo $*"
"$build_dir/cmr-demo" "$@"
