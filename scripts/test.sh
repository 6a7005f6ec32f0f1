#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The whole test suite on a fresh Debian 12 machine: install what it needs,
# check that generated/ is fresh and the C formatted (scripts/format.sh),
# then configure, build and ctest the host build (build/host) and, when a
# CUDA toolkit is installed, the CUDA build (build/cuda). Warnings are errors. Tests that need a GPU skip without one.
# A Release build of the library and tools is compiled too (build/release, no tests).
# Then the host build's C suites again under ASan+UBSan (build/asan), TSan
# (build/tsan) and valgrind memcheck with leaks as errors (build/valgrind):
# any finding fails the step. Last, the libFuzzer harnesses (build/fuzz),
# each over its seed corpus and then fuzzing for a bounded time.
#
#   bash scripts/test.sh     (apt-get runs as root or through sudo)
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

# checked_build NAME BUILD_DIR CC ENV CMAKE_ARGS...: the host build's C suites
# (not the generator's, the install tests or the ABI check, which run no cmr code, nor
# the README's programs, which link an installed libcmr without its flags) built by
# CC with a sanitizer or run under a tool; one process per suite
# (CK_FORK=no) so that a finding anywhere, a leak included, fails the suite.
checked_build() {
  local name=$1 dir=$2 cc=$3 env=$4
  shift 4
  # The C++ layer's test (tests/cpp) links the same instrumented libcmr: its
  # compiler and flags are the C ones' C++ twins.
  local args=() arg
  for arg in "$@"; do
    args+=("$arg")
    [[ $arg == -DCMAKE_C_FLAGS=* ]] && args+=("-DCMAKE_CXX_FLAGS=${arg#-DCMAKE_C_FLAGS=}")
  done
  local cxx=${cc/#gcc/g++}
  [[ $cc == clang ]] && cxx=clang++
  step "$name: configure" env CC="$cc" CXX="$cxx" cmake -S . -B "$dir" -G Ninja -DPython3_EXECUTABLE="$PYTHON" \
         -DCMR_WITH_CUDA=OFF -DCMR_BUILD_DEMO=OFF -DCMR_BUILD_BENCH=OFF -DCMR_CHECK_INVARIANTS=ON "${args[@]}" &&
    step "$name: compile" cmake --build "$dir" -j "$JOBS" &&
    step "$name: ctest" env CK_FORK=no $env ctest --test-dir "$dir" --output-on-failure -j "$JOBS" --timeout 1800 \
           -E '^(generator|install|abi|readme)[.]'
}

# The hand-written C as .clang-format says (generated/ is the freshness
# check's). Its own function, so that it can be enabled together with the
# commit that formats the tree.
check_format() {
  step "hand-written C is formatted (scripts/format.sh)" bash scripts/format.sh check || true
}

install_dependencies

step "generated code is fresh" "$PYTHON" -m generator --check || true
step "every source file has its SPDX line" "$PYTHON" scripts/spdx.py check || true
check_format
test_build host build/host -DCMR_WITH_CUDA=OFF -DCMR_BUILD_GO=ON -DCMR_BUILD_JAVA=ON -DCMR_BUILD_CSHARP=ON || true
# The library and tools compiled as a Release (-O3) build, whose flow
# analysis warns where a Debug build does not (every wheel is one): compile
# only, warnings as errors.
step "Release compile: configure" cmake -S . -B build/release -G Ninja -DPython3_EXECUTABLE="$PYTHON" \
  -DCMAKE_BUILD_TYPE=Release -DCMR_WARNINGS_AS_ERRORS=ON -DCMR_WITH_CUDA=OFF -DCMR_BUILD_PYTHON=OFF \
  -DCMR_BUILD_TESTS=OFF -DCMR_BUILD_BENCH=OFF &&
  step "Release compile: compile" cmake --build build/release -j "$JOBS" || true
# The C ABI against its committed baseline (README, "The C ABI").
step "C ABI: build/host against abi/libcmr.abi" bash scripts/abi.sh check build/host || true
# Each ecosystem's install path, used from outside the tree (tests/packaging/).
step "Python: the wheel and pip install ." bash tests/packaging/python_wheel.sh "$PYTHON" || true
step "Python: configured with a venv's python3 first on PATH" bash tests/packaging/other_python.sh || true
if have_cuda_toolkit; then
  test_build CUDA build/cuda -DCMR_WITH_CUDA=ON || true
else
  echo "==> no CUDA toolkit: the CUDA build is not tested"
fi
# The battery's out-of-memory case asks for 2^62 bytes: the sanitizers'
# allocators must say no rather than abort.
checked_build "ASan+UBSan" build/asan clang "ASAN_OPTIONS=allocator_may_return_null=1:detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1" \
  -DCMAKE_BUILD_TYPE=Debug \
  "-DCMAKE_C_FLAGS=-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer" || true
# The Python suites run under ASan (its runtime preloaded into the
# interpreter: python/CMakeLists.txt), not under TSan or valgrind, which
# report CPython's own workings.
checked_build "TSan" build/tsan clang "TSAN_OPTIONS=halt_on_error=1:allocator_may_return_null=1" \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_C_FLAGS=-fsanitize=thread" -DCMR_BUILD_PYTHON=OFF || true
# gcc for valgrind: valgrind 3.19 cannot read clang 14's debug information.
checked_build "valgrind" build/valgrind gcc "" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMR_BUILD_PYTHON=OFF \
  "-DCMAKE_CROSSCOMPILING_EMULATOR=valgrind;-q;--error-exitcode=9;--leak-check=full;--errors-for-leak-kinds=definite,indirect;--show-leak-kinds=definite,indirect" || true
# The harnesses of tests/fuzz/ (libFuzzer, ASan+UBSan): ctest -L fuzz runs
# each over its corpus and then CMR_FUZZ_SECONDS (20) of fuzzing, about two
# minutes on 2 cores with the build.
fuzz_build() {
  local dir=build/fuzz
  step "fuzz: configure" env CC=clang cmake -S . -B "$dir" -G Ninja -DCMR_WITH_CUDA=OFF -DCMR_BUILD_FUZZERS=ON -DCMR_CHECK_INVARIANTS=ON \
         -DCMR_BUILD_TESTS=OFF -DCMR_BUILD_DEMO=OFF -DCMR_BUILD_BENCH=OFF -DCMR_BUILD_TOOLS=OFF -DCMR_BUILD_PYTHON=OFF \
         -DCMR_WARNINGS_AS_ERRORS=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo &&
    step "fuzz: compile" cmake --build "$dir" -j "$JOBS" &&
    step "fuzz: ctest" ctest --test-dir "$dir" -L fuzz --output-on-failure -j "$JOBS" --timeout 300
}
fuzz_build || true

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
