# SPDX-License-Identifier: Apache-2.0
# Sourced by the scripts that run on the GPU machine (tests/gpu/run_all.sh,
# bench/run_gpu.sh, bench/fragmentation/run_gpu.sh): steps that log to $out/NAME.log and a summary line each
# in $top/summary.txt; `failures` counts the steps that failed.
failures=0

# The GPU machine has no SWIG, which the Python package's build runs: the
# swig4.0 of Debian's package, extracted into .carry/root (tests/GPU.md),
# and its library, given to CMake.
swig_args=("-DSWIG_EXECUTABLE=$PWD/.carry/root/usr/bin/swig4.0" "-DCMR_SWIG_LIB=$PWD/.carry/root/usr/share/swig4.0")

# step NAME COMMAND...: runs it, logging to $out/NAME.log, and records the result.
step() {
  local name=$1
  shift
  local start=$SECONDS
  if "$@" >"$out/$name.log" 2>&1; then
    echo "$name: ok ($((SECONDS - start)) s)" | tee -a "$top/summary.txt"
  else
    echo "$name: FAILED, exit $? ($((SECONDS - start)) s)" | tee -a "$top/summary.txt"
    failures=$((failures + 1))
  fi
}

# bench_dirs NAME: where a benchmark's run puts things: $top, what the
# device tool brings back ($OUT, else /tmp/cmr-NAME-out); $out, its logs and
# results ($top/NAME, made here); $build, the benchmarks' one build
# (/tmp/cmr-bench-build), shared so that several run in one call build once.
bench_dirs() {
  top=${OUT:-/tmp/cmr-$1-out}
  out=$top/$1
  build=/tmp/cmr-bench-build
  mkdir -p "$out"
}

# bench_build: the configure and build steps of the benchmarks' build in
# $build: CUDA, with the Python package, without the tests.
bench_build() {
  step configure cmake -S . -B "$build" -G Ninja -DCMR_WITH_CUDA=ON -DCMR_BUILD_TESTS=OFF \
    -DCMR_WARNINGS_AS_ERRORS=ON "-DPython3_EXECUTABLE=$(command -v python3)" "${swig_args[@]}"
  step build cmake --build "$build" -j 16
}

# pack_logs ARCHIVE: $out with the summary, packed into $top/ARCHIVE (the
# device tool brings back only a few files).
pack_logs() {
  cp "$top/summary.txt" "$out/"
  tar czf "$top/$1" -C "$top" "$(basename "$out")" && rm -r "$out"
}
