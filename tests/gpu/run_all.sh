#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Everything a GPU session runs, in one device call (device time is scarce):
# the CUDA build with the Python package, its whole ctest (the python.*
# suites with CuPy, Numba and PyTorch there included), cmr-demo, the
# missing-wait check, the suballocator and Python benchmarks and the soak. Each step's
# output goes to <step>.log, packed with the rest into $OUT/logs.tar.gz (the
# device tool brings back only a few files), and $OUT/summary.txt has one
# line a step. SOAK_SECONDS 0 leaves the soak out.
#
#   bash tests/gpu/run_all.sh [SOAK_SECONDS] [tests [REGEX]]     (from the repository root, carry .carry/)
#
# With `tests`, the build, the tests and the demo alone (the whole run no
# longer fits the device tool's 600 s a call; bench/run_gpu.sh has the benchmarks).
# With a REGEX too, the build and the tests whose names it matches (ctest -R),
# for a call with less device time left.
#
# A step that fails does not stop the others; the exit status is non-zero
# when any failed.
set -uo pipefail
top=${OUT:-/tmp/cmr-gpu-out}
out=$top/logs
soak_seconds=${1:-120}
tests_only=$([[ ${2:-} == tests ]] && echo 1 || echo 0)
only=${3:-}
mkdir -p "$out"
build=/tmp/b
source scripts/device_steps.sh
args=(-DCMR_WITH_CUDA=ON -DCMR_WARNINGS_AS_ERRORS=ON -DCMAKE_DISABLE_FIND_PACKAGE_PkgConfig=ON
      "-DCMAKE_PREFIX_PATH=$PWD/.carry/root/usr" "-DPython3_EXECUTABLE=$(command -v python3)" "${swig_args[@]}")

nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader >"$out/device.txt" 2>&1
git log -1 --format='%H %s' >"$out/commit.txt" 2>/dev/null || true
step configure cmake -S . -B "$build" -G Ninja "${args[@]}"
step build cmake --build "$build" -j 16
if [[ -n $only ]]; then
  step ctest ctest --test-dir "$build" --output-on-failure -j 14 --timeout 300 -R "$only"
  pack_logs logs.tar.gz
  exit $((failures > 0))
fi
step ctest ctest --test-dir "$build" --output-on-failure -j 14 --timeout 300
step demo "$build/cmr-demo"
step ordering_without_waits bash tests/gpu/ordering_without_waits.sh "${args[@]}"
if ((tests_only)); then
  pack_logs logs.tar.gz
  exit $((failures > 0))
fi
# Two GPUs (nvidia-h200-x2): the suites that need them (they skip, 77, on
# one, as in the ctest step above) and the two-device benchmark.
step multi_device ctest --test-dir "$build" --output-on-failure -R multi_device --timeout 300
step bench_multi_device "$build/cmr-bench-multi-device"
step bench "$build/cmr-bench-suballocators"
step bench_python env PYTHONPATH="$build/python" python3 bench/bench_python.py
if ((soak_seconds > 0)); then
  step soak "$build/tests/c/cmr-gpu-soak" --seconds "$soak_seconds" --threads 16
fi
pack_logs logs.tar.gz
exit $((failures > 0))
