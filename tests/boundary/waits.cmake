# SPDX-License-Identifier: Apache-2.0
# The boundary.waits test: every wait for a mutex in cmr's C goes through
# cmr_mutex_lock (runtime/src/resource_api/lock.h), which calls the blocking
# hook (cmr_set_blocking_hook) before it waits; a bare pthread_mutex_lock
# would wait holding what the hook lets go (Python's GIL), and could hang
# against a thread that holds the mutex and needs that. Only base/blocking.c,
# which implements the wait, calls pthread_mutex_lock.
#
#   cmake -DSOURCE_DIR=... -P waits.cmake
if(NOT DEFINED SOURCE_DIR)
  message(FATAL_ERROR "waits.cmake: -DSOURCE_DIR=... is required")
endif()
file(GLOB_RECURSE sources RELATIVE ${SOURCE_DIR} ${SOURCE_DIR}/runtime/*.c ${SOURCE_DIR}/runtime/*.h
     ${SOURCE_DIR}/generated/src/*.c ${SOURCE_DIR}/generated/src/*.h)
# Fails naming every file but `allowed` that calls `call`.
function(cmr_call_only_in call allowed advice)
  set(offenders "")
  foreach(source IN LISTS sources)
    if(NOT source STREQUAL allowed)
      file(STRINGS ${SOURCE_DIR}/${source} calls REGEX "${call}[ \t]*\\(")
      if(calls)
        list(APPEND offenders ${source})
      endif()
    endif()
  endforeach()
  if(offenders)
    list(JOIN offenders "\n  " listed)
    message(FATAL_ERROR "${call} outside ${allowed} (${advice}):\n  ${listed}")
  endif()
endfunction()

cmr_call_only_in(pthread_mutex_lock runtime/src/base/blocking.c "use cmr_mutex_lock, lock.h")
# The pair reads as one: cmr_mutex_lock with cmr_mutex_unlock (lock.h).
cmr_call_only_in(pthread_mutex_unlock runtime/src/resource_api/lock.h "use cmr_mutex_unlock")
list(LENGTH sources checked)
message(STATUS "boundary.waits: ${checked} files, every mutex wait through cmr_mutex_lock")
