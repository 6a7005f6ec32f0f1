# SPDX-License-Identifier: Apache-2.0
# The allocation-log reader (tools/replay_log.h) that cmr-replay and
# cmr-bench-fragmentation link; it reads .csv.gz too where zlib is found.
find_package(ZLIB QUIET)
add_library(cmr_replay_log STATIC EXCLUDE_FROM_ALL tools/replay_log.c)
target_include_directories(cmr_replay_log PUBLIC ${PROJECT_SOURCE_DIR}/tools)
target_link_libraries(cmr_replay_log PUBLIC cmr PRIVATE cmr_warnings)
if(ZLIB_FOUND)
  target_compile_definitions(cmr_replay_log PRIVATE CMR_REPLAY_WITH_ZLIB=1)
  target_link_libraries(cmr_replay_log PRIVATE ZLIB::ZLIB)
else()
  target_compile_definitions(cmr_replay_log PRIVATE CMR_REPLAY_WITH_ZLIB=0)
endif()
