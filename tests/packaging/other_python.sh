#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# cmr configured with whatever python3 comes first on PATH: here a bare venv
# (no pytest, no jinja2, no numpy), as a pyenv or venv user has. The Python
# package builds for it, install.consumer imports the installed package with
# it, and the tests that need a module it lacks report themselves skipped
# (never fail, never vanish): every python.* and generator.* test must be
# registered and none may fail.
#
#   bash tests/packaging/other_python.sh [BUILD_DIR]   (default build/other-python)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
build=${1:-build/other-python}
venv=$(mktemp -d /tmp/cmr-venv.XXXXXX)
trap 'rm -rf "$venv"' EXIT
/usr/bin/python3 -m venv "$venv"
export PATH="$venv/bin:$PATH"
[[ $(command -v python3) == "$venv/bin/python3" ]]
! python3 -c "import pytest" 2>/dev/null || { echo "the venv should lack pytest"; exit 1; }
rm -rf "$build"
# No -DPython3_EXECUTABLE: CMake takes the python3 on PATH.
cmake -S . -B "$build" -G Ninja -DCMR_WITH_CUDA=OFF -DCMR_BUILD_DEMO=OFF -DCMR_BUILD_BENCH=OFF -DCMR_BUILD_TOOLS=OFF \
  -DCMR_BUILD_PYTHON=ON >"$build.configure.log" || { cat "$build.configure.log"; exit 1; }
grep -F "Python package for Python" "$build.configure.log"
cmake --build "$build" -j "$(nproc)" --target cmr cmr_static cmr_python_package >/dev/null
ctest --test-dir "$build" -R '^(python|generator|install)[.]' --output-on-failure | tee "$build.ctest.log"
registered=$(grep -cE '^ *[0-9]+/[0-9]+ Test +#[0-9]+: (python|generator)[.]' "$build.ctest.log")
# The hand-written suites, those generated per resource (python.resource.*),
# python.bench_host_ratio, python.stubtest and python.mypy_strict (the
# package's types), and generator.unit and generator.fresh.
python_files=$(ls tests/python/test_*.py generated/tests/python/test_resource_*.py | wc -l)
if ((registered != python_files + 5)); then
  echo "other_python.sh: $registered python.* and generator.* tests ran, not $((python_files + 5))" >&2
  exit 1
fi
echo "other_python.sh: configured with $venv/bin/python3, every test passed or reported skipped"
