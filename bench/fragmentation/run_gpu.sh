#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The fragmentation benchmark on the GPU machine, in one device call: a CUDA
# build with the Python package (no tests), the two real workloads recorded
# through cmr's logging adaptor (bench/traces/record_gpu.py: a PyTorch
# training loop and a CuPy workload), then bench/fragmentation/run.sh over
# every trace (the committed ones and the two new ones) twice: on device
# memory (--leaf cuda: held is the drop of the device's free memory; the
# cap is limiting(cuda) under each allocator) and on the simulated leaf
# (exact counts, the same as the host's). Everything is packed into
# $OUT/fragmentation.tar.gz with $OUT/summary.txt, one line per step:
#
#   fragmentation/traces/*.csv.gz      the recorded logs: commit them to bench/traces/
#   fragmentation/device/              fragmentation.txt, .csv, .svg on device memory
#   fragmentation/simulated/           the same on the simulated leaf
#
#   bash bench/fragmentation/run_gpu.sh     (from the repository root, carry .carry/)
#
# A step that fails does not stop the others; the exit status is non-zero
# when any failed.
set -uo pipefail
source scripts/device_steps.sh
bench_dirs fragmentation
mkdir -p "$out/traces"

nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader >"$out/device.txt" 2>&1
git log -1 --format='%H %s' >"$out/commit.txt" 2>/dev/null || true
bench_build
step record env PYTHONPATH="$build/python" python3 bench/traces/record_gpu.py "$out/traces"
# The recorded traces join the committed ones (this is the device's copy of the tree).
cp "$out"/traces/*.csv.gz bench/traces/ 2>/dev/null || true
step device bash bench/fragmentation/run.sh "$build/cmr-bench-fragmentation" "$out/device" --leaf cuda
step simulated bash bench/fragmentation/run.sh "$build/cmr-bench-fragmentation" "$out/simulated"
pack_logs fragmentation.tar.gz
exit $((failures > 0))
