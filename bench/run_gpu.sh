#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The benchmarks of bench/ on the GPU machine, in one device call: a CUDA
# build with the Python package (no tests: Check is not needed), then the
# suballocator tables, random_allocations, multi_stream, multi_device (two
# GPUs at once against one; it says "skipped" on one GPU) and the Python
# per-call costs, each writing its table to <name>.log and its figures to
# <name>.csv, and last the PNG plots of bench/plot.py. Everything is packed
# into $OUT/bench.tar.gz (the device tool brings back only a few files),
# with $OUT/summary.txt: one line per step.
#
#   bash bench/run_gpu.sh     (from the repository root)
#
# A step that fails does not stop the others; the exit status is non-zero
# when any failed.
set -uo pipefail
source scripts/device_steps.sh
bench_dirs bench

{
  date -u '+%Y-%m-%d %H:%M UTC'
  git log -1 --format='%H %s' 2>/dev/null || true
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  nproc
  lscpu | grep -E '^(Model name|Thread|Core|Socket|NUMA node\(s\))'
  python3 -c 'import cupy, torch; print("cupy", cupy.__version__, "torch", torch.__version__)' 2>&1
} >"$out/machine.txt" 2>&1
bench_build
step suballocators "$build/cmr-bench-suballocators" --csv "$out/suballocators.csv"
step random_allocations "$build/cmr-bench-random-allocations" --csv "$out/random_allocations.csv"
step multi_stream "$build/cmr-bench-multi-stream"
step multi_device "$build/cmr-bench-multi-device" --csv "$out/multi_device.csv"
step python env PYTHONPATH="$build/python" python3 bench/bench_python.py --csv "$out/python.csv" \
  --workloads-csv "$out/python_workloads.csv" --plot "$out/python_workloads.png"
step plots python3 bench/plot.py "$out"
pack_logs bench.tar.gz
exit $((failures > 0))
