#!/usr/bin/env bash
# The whole test suite on a fresh Debian 12 machine: install what it needs,
# check that generated/ is fresh, then configure, build and ctest the host
# build (build/host) and, when a CUDA toolkit is installed, the CUDA build
# (build/cuda). Warnings are errors. Tests that need a GPU skip without one.
#
#   sudo bash scripts/test.sh
#
# Every step runs even after an earlier one failed; the last line sums up and
# the exit status is non-zero when any step failed. CMR_SKIP_APT=1 skips the
# package installation (outside CI).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

passed=()
failed=()

# step NAME COMMAND...: runs the command and records NAME as passed or failed.
step() {
  local name=$1
  shift
  echo "==> $name"
  if "$@"; then
    passed+=("$name")
  else
    failed+=("$name")
    echo "==> FAILED: $name" >&2
    return 1
  fi
}

# test_build NAME BUILD_DIR CMAKE_ARGS...: configure, build, ctest; stops at the first failure.
test_build() {
  local name=$1 dir=$2
  shift 2
  step "$name build: configure" cmake -S . -B "$dir" -G Ninja -DPython3_EXECUTABLE="$PYTHON" \
         -DCMR_WARNINGS_AS_ERRORS=ON "$@" &&
    step "$name build: compile" cmake --build "$dir" -j "$JOBS" &&
    step "$name build: ctest" ctest --test-dir "$dir" --output-on-failure -j "$JOBS" --timeout 600
}

install_dependencies

step "generated code is fresh" "$PYTHON" -m generator --check || true
test_build host build/host -DCMR_WITH_CUDA=OFF || true
if have_cuda_toolkit; then
  test_build CUDA build/cuda -DCMR_WITH_CUDA=ON || true
else
  echo "==> no CUDA toolkit: the CUDA build is not tested"
fi

# "a, b, c"
join() {
  local out
  out=$(printf '%s, ' "$@")
  echo "${out%, }"
}

total=$((${#passed[@]} + ${#failed[@]}))
if ((${#failed[@]} > 0)); then
  echo "test.sh: FAILED ${#failed[@]} of $total steps: $(join "${failed[@]}")"
  exit 1
fi
echo "test.sh: all $total steps passed: $(join "${passed[@]}")"
