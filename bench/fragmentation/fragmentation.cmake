# SPDX-License-Identifier: Apache-2.0
# cmr-bench-fragmentation (bench/fragmentation/fragmentation.c), included by
# the benchmarks' part of CMakeLists.txt, and its ctest: the committed traces
# replayed on the build's memory under a cap, so the program, the traces and
# the plot cannot rot. The test fails when a program or the plot fails,
# never on a figure; the figures come from the GPU run
# (bench/fragmentation/run.sh on the H200, bench/RESULTS.md).
add_executable(cmr-bench-fragmentation bench/fragmentation/fragmentation.c)
target_link_libraries(cmr-bench-fragmentation PRIVATE cmr cmr_cli cmr_replay_log cmr_warnings)
if(CMR_BUILD_TESTS)
  enable_testing()
  add_test(NAME bench.fragmentation
           COMMAND bash ${PROJECT_SOURCE_DIR}/bench/fragmentation/run.sh $<TARGET_FILE:cmr-bench-fragmentation>
                   ${PROJECT_BINARY_DIR}/bench-fragmentation --cap-ratio 1.1)
  # The CUDA build's streams need a device: there it is a GPU test (77 without one).
  # It runs alone there: its cuda_async and expandable rows call the driver's
  # pool and virtual-memory mapping for every operation, and beside other
  # GPU test processes those calls wait on the GPU's time slicing (minutes
  # instead of seconds).
  if(CMR_USE_CUDA)
    set_tests_properties(bench.fragmentation PROPERTIES LABELS "bench;gpu" RUN_SERIAL TRUE)
  else()
    set_tests_properties(bench.fragmentation PROPERTIES LABELS "bench;host")
  endif()
  set_tests_properties(bench.fragmentation PROPERTIES TIMEOUT 600 SKIP_RETURN_CODE 77)
endif()
