#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The pinned start-up table (bench/bench_pinned_startup.c) on the GPU
# machine, in one device call: a CUDA build of the library and the
# benchmark alone, then the table for 1, 4 and 16 GiB, written to
# $OUT/pinned_startup.txt with the machine's description (the table of
# bench/RESULTS.md comes from it).
#
#   bash bench/pinned_startup.sh [GiB ...]     (from the repository root)
set -euo pipefail
top=${OUT:-/tmp/cmr-bench-out}
mkdir -p "$top"
build=/tmp/cmr-bench-build  # shared with bench/run_gpu.sh: one build when both run in one call
cmake -S . -B "$build" -G Ninja -DCMR_WITH_CUDA=ON -DCMR_BUILD_TESTS=OFF -DCMR_BUILD_PYTHON=OFF \
  -DCMR_WARNINGS_AS_ERRORS=ON >"$top/pinned_startup_build.log" 2>&1
cmake --build "$build" -j "$(nproc)" --target cmr-bench-pinned-startup >>"$top/pinned_startup_build.log" 2>&1
{
  date -u '+%Y-%m-%d %H:%M UTC'
  git log -1 --format='%H %s' 2>/dev/null || true
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 || true
  lscpu | grep -E '^(Model name|CPU\(s\)|NUMA node\(s\))' || true
  grep -E '^(MemTotal|HugePages_Total|Hugepagesize)' /proc/meminfo || true
  cat /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null || true
  "$build/cmr-bench-pinned-startup" "$@"
} 2>&1 | tee "$top/pinned_startup.txt"
